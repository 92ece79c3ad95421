package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/boundedfile"
	"github.com/shepherd-dev/shepherd/internal/proc"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// schedulerRole is `shepherd scheduler`: fire jobs on their cron
// schedules, each run executed by one elected scheduler of the cluster.
func schedulerRole() role {
	return role{
		name:  "scheduler",
		usage: "run cron jobs; each run is executed once, by the elected master of the run",
		description: `Every scheduler pointed at the same --zk fires the same jobs; for each run one of
them creates /master_election/<job>/<run-key>/binding and runs it, the others stand by
and take over if it dies. Jobs come from --jobs (YAML) and from /scheduler/jobs
(shepherd ctl job add). --config reads a YAML file whose keys are these flag names;
flags win over it. See docs/scheduler.md.`,
		flags: func() []cli.Flag {
			return []cli.Flag{
				&cli.StringFlag{Name: "jobs", Usage: "YAML file with a jobs list (docs/scheduler.md)"},
				&cli.StringFlag{Name: "host", Usage: "this scheduler's name in results (default: the hostname)"},
				&cli.StringFlag{Name: "log-dir", Value: "shepherd-scheduler-logs", Usage: "directory of the per-run log files"},
				&cli.StringSliceFlag{Name: "labels", Usage: "key=value labels of this scheduler (comma-separated or repeated): it fires only the jobs whose nodeSelector they match"},
				&cli.StringSliceFlag{Name: "http-allow", Usage: "hosts HTTP jobs may call: CIDR (10.0.0.0/8), IP or host name (matched as written, not resolved); comma-separated or repeated; default none"},
				&cli.StringFlag{Name: "root", Value: core.DefaultRoot, Usage: "root of the replication nodes that freshness gates (after: task:…) read (below the --zk chroot)"},
			}
		},
		setup:    setupScheduler,
		subtrees: func(*cli.Context) []recipe.Subtree { return scheduler.Subtrees() },
		upDefaults: func(dataDir string) map[string]string {
			return map[string]string{"log-dir": filepath.Join(dataDir, "scheduler")}
		},
		describe: func(c *cli.Context) string { return "run logs in " + c.String("log-dir") },
	}
}

func setupScheduler(c *cli.Context, log *slog.Logger) (starter, error) {
	var jobs []scheduler.Job
	if path := c.String("jobs"); path != "" {
		data, err := proc.ReadInputFile(c, "jobs", path, boundedfile.MaxConfig)
		if err != nil {
			return nil, err
		}
		if jobs, err = scheduler.ParseJobs(data); err != nil {
			return nil, fmt.Errorf("--jobs %s: %w", path, err)
		}
	}
	labels, err := scheduler.ParseLabels(c.StringSlice("labels"))
	if err != nil {
		return nil, err
	}
	if _, err := scheduler.ParseHTTPAllow(c.StringSlice("http-allow")); err != nil {
		return nil, err
	}
	opts := scheduler.Options{
		Jobs:      jobs,
		JobsFile:  c.String("jobs"),
		Host:      c.String("host"),
		LogDir:    c.String("log-dir"),
		Logger:    log,
		Labels:    labels,
		HTTPAllow: c.StringSlice("http-allow"),
	}
	return func(e env) (func(context.Context) error, error) {
		opts.Registerer = e.http.Registry
		opts.Freshness = cluster.NewFreshness(e.session, c.String("root"))
		sc, err := scheduler.New(e.session, opts)
		if err != nil {
			return nil, err
		}
		log.Info("scheduler started", "file_jobs", len(jobs), "log_dir", opts.LogDir)
		return sc.Run, nil
	}, nil
}
