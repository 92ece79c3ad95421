package main

import (
	"context"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/monitor"
)

// monitorRole is `shepherd monitor`: alert rules over the cluster and
// cluster-wide metrics; one monitor of those running is active.
func monitorRole() role {
	return role{
		name:  "monitor",
		usage: "raise and resolve alerts about tasks, jobs, collectors and the coordination servers; serve cluster metrics",
		description: `Any number of monitors may run against the same --zk: one is elected active and sends
notifications, the others stand by and take over with its alert state. Channels come only
from --monitor-config and --webhook, never from the coordination tree. --config reads a
YAML file whose keys are these flag names; flags given on the command line win. See
docs/monitor.md.`,
		flags: func() []cli.Flag {
			return []cli.Flag{
				&cli.StringFlag{Name: "monitor-config", Usage: "YAML file of the monitor: rules, hold times, channels (docs/monitor.md)"},
				&cli.StringSliceFlag{Name: "webhook", Usage: "POST notifications as JSON to this URL (repeatable; adds to --monitor-config's)"},
				&cli.DurationFlag{Name: "interval", Usage: "evaluation interval", DefaultText: "the config's interval, else 15s"},
				&cli.StringFlag{Name: "name", Usage: "this monitor's name in the election (default host-pid)"},
				&cli.BoolFlag{Name: "standby-only", Usage: "never become active: only watch the active monitor"},
			}
		},
		setup:    setupMonitor,
		subtrees: func(*cli.Context) []recipe.Subtree { return monitor.Subtrees() },
		describe: func(c *cli.Context) string {
			if p := c.String("monitor-config"); p != "" {
				return "alerts and cluster metrics, rules and channels from " + p
			}
			return "alerts and cluster metrics, default rules, no channel (shepherd ctl alert list)"
		},
	}
}

func setupMonitor(c *cli.Context, log *slog.Logger) (starter, error) {
	cfg := monitor.DefaultConfig()
	if path := c.String("monitor-config"); path != "" {
		var err error
		if cfg, err = monitor.LoadConfig(c.Context, path); err != nil {
			return nil, err
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
	return func(e env) (func(context.Context) error, error) {
		poller, err := newPoller(e, cfg.CoreRoot, cfg.Interval)
		if err != nil {
			return nil, err
		}
		m, err := monitor.New(cfg, monitor.Deps{Session: e.session, Feed: poller, Logger: e.log})
		if err != nil {
			return nil, err
		}
		e.http.AddGatherer(m.Gatherer())
		e.log.Info("monitor started", "channels", len(cfg.Webhooks)+len(cfg.Email)+len(cfg.Commands))
		return withPoller(poller, m.Run), nil
	}, nil
}
