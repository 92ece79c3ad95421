package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/authflag"
	"github.com/shepherd-dev/shepherd/monitor"
)

// monitorCommand is `shepherd monitor`: alert rules over the cluster and
// cluster-wide metrics; one monitor of those running is active.
func monitorCommand() *cli.Command {
	return &cli.Command{
		Name:  "monitor",
		Usage: "raise and resolve alerts about tasks, jobs, collectors and the coordination servers; serve cluster metrics",
		Description: `Any number of monitors may run against the same --zk: one is elected active and sends
notifications, the others stand by and take over with its alert state. Channels come only
from --monitor-config and --webhook, never from the coordination tree. See docs/monitor.md.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "zk", Value: "127.0.0.1:2181", EnvVars: []string{"SHEPHERD_ZK"},
				Usage: "servers and optional chroot: host:port[,host:port…][/chroot]"},
			&cli.StringFlag{Name: "monitor-config", Usage: "YAML file of the monitor: rules, hold times, channels (docs/monitor.md)"},
			&cli.StringSliceFlag{Name: "webhook", Usage: "POST notifications as JSON to this URL (repeatable; adds to --monitor-config's)"},
			&cli.DurationFlag{Name: "interval", Usage: "evaluation interval", DefaultText: "the config's interval, else 15s"},
			&cli.StringFlag{Name: "name", Usage: "this monitor's name in the election (default host-pid)"},
			&cli.BoolFlag{Name: "standby-only", Usage: "never become active: only watch the active monitor"},
			&cli.DurationFlag{Name: "session-timeout", Value: recipe.DefaultSessionTimeout,
				Usage: "how soon a dead active monitor is replaced"},
			&cli.StringFlag{Name: "metrics-listen", Usage: "HTTP address serving Prometheus /metrics (off if empty)"},
		}, authflag.Flags()...),
		Action: runMonitor,
	}
}

func runMonitor(c *cli.Context) error {
	ctx, stop := signalContext(c)
	defer stop()
	cfg := monitor.DefaultConfig()
	if path := c.String("monitor-config"); path != "" {
		var err error
		if cfg, err = monitor.LoadConfig(ctx, path); err != nil {
			return err
		}
	}
	for _, u := range c.StringSlice("webhook") {
		cfg.Webhooks = append(cfg.Webhooks, monitor.WebhookConfig{URL: u})
	}
	if c.IsSet("interval") {
		cfg.Interval = c.Duration("interval")
	}
	if c.IsSet("name") {
		cfg.Name = c.String("name")
	}
	cfg.StandbyOnly = cfg.StandbyOnly || c.Bool("standby-only")
	servers, err := coordhealth.Servers(c.String("zk"))
	if err != nil {
		return fmt.Errorf("--zk: %w", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts, err := authflag.FromContext(c).Options(slog.Default(), "monitor",
		recipe.Options{SessionTimeout: c.Duration("session-timeout"), Logger: slog.Default()})
	if err != nil {
		return err
	}
	s, err := recipe.Dial(dctx, c.String("zk"), opts)
	if err != nil {
		return err
	}
	defer s.Close()
	poller := cluster.NewPoller(cluster.NewReader(s, cluster.Options{CoreRoot: cfg.CoreRoot, CoordServers: servers}), cfg.Interval, slog.Default())
	m, err := monitor.New(cfg, monitor.Deps{Session: s, Feed: poller, Logger: slog.Default()})
	if err != nil {
		return err
	}
	if addr := c.String("metrics-listen"); addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		mux := http.NewServeMux()
		m.Register(mux)
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.Serve(ln) }() // ends when Close below closes ln
		defer hs.Close()
		slog.Info("metrics served", "addr", ln.Addr().String())
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	wg.Go(func() { _ = poller.Run(pctx) })
	slog.Info("monitor started", "zk", c.String("zk"), "channels", len(cfg.Webhooks)+len(cfg.Email)+len(cfg.Commands))
	return m.Run(ctx)
}
