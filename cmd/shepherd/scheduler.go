package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/authflag"
	"github.com/shepherd-dev/shepherd/internal/boundedfile"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// schedulerCommand is `shepherd scheduler`: fire jobs on their cron
// schedules, each run executed by one elected scheduler of the cluster.
func schedulerCommand() *cli.Command {
	return &cli.Command{
		Name:  "scheduler",
		Usage: "run cron jobs; each run is executed once, by the elected master of the run",
		Description: `Every scheduler pointed at the same --zk fires the same jobs; for each run one of
them creates /master_election/<job>/<run-key>/binding and runs it, the others stand by
and take over if it dies. Jobs come from --jobs (YAML) and from /scheduler/jobs
(shepherd ctl job add). See docs/scheduler.md.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "zk", Value: "127.0.0.1:2181", EnvVars: []string{"SHEPHERD_ZK"},
				Usage: "servers and optional chroot: host:port[,host:port…][/chroot]"},
			&cli.StringFlag{Name: "jobs", Usage: "YAML file with a jobs list (docs/scheduler.md)"},
			&cli.StringFlag{Name: "host", Usage: "this scheduler's name in results (default: the hostname)"},
			&cli.StringFlag{Name: "log-dir", Value: "shepherd-scheduler-logs", Usage: "directory of the per-run log files"},
			&cli.DurationFlag{Name: "session-timeout", Value: recipe.DefaultSessionTimeout,
				Usage: "how soon a dead master's runs are taken over"},
			&cli.StringFlag{Name: "metrics-listen", Usage: "HTTP address serving Prometheus /metrics (off if empty)"},
		}, authflag.Flags()...),
		Action: runScheduler,
	}
}

func runScheduler(c *cli.Context) error {
	var jobs []scheduler.Job
	if path := c.String("jobs"); path != "" {
		data, err := readInputFile(c, "jobs", path, boundedfile.MaxConfig)
		if err != nil {
			return err
		}
		if jobs, err = scheduler.ParseJobs(data); err != nil {
			return fmt.Errorf("--jobs %s: %w", path, err)
		}
	}
	ctx, stop := signalContext(c)
	defer stop()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts, err := authflag.FromContext(c).Options(slog.Default(), "scheduler",
		recipe.Options{SessionTimeout: c.Duration("session-timeout"), Logger: slog.Default()})
	if err != nil {
		return err
	}
	s, err := recipe.Dial(dctx, c.String("zk"), opts)
	if err != nil {
		return err
	}
	defer s.Close()
	reg := prometheus.NewRegistry()
	sc, err := scheduler.New(s, scheduler.Options{
		Jobs:       jobs,
		JobsFile:   c.String("jobs"),
		Host:       c.String("host"),
		LogDir:     c.String("log-dir"),
		Logger:     slog.Default(),
		Registerer: reg,
	})
	if err != nil {
		return err
	}
	if addr := c.String("metrics-listen"); addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.Serve(ln) }() // ends when Close below closes ln
		defer hs.Close()
		slog.Info("metrics served", "addr", ln.Addr().String())
	}
	slog.Info("scheduler started", "zk", c.String("zk"), "file_jobs", len(jobs))
	return sc.Run(ctx)
}
