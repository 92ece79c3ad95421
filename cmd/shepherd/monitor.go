package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/monitor"
)

// monitorRole is `shepherd monitor`: alert rules over the cluster and
// cluster-wide metrics; one monitor of those running is active.
func monitorRole() role {
	// configured is the config setup built, for describe to name the
	// channels it found in --monitor-config and --webhook.
	var configured *monitor.Config
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
		setup: func(c *cli.Context, log *slog.Logger) (starter, error) {
			cfg, err := monitorConfig(c)
			if err != nil {
				return nil, err
			}
			configured = &cfg
			return startMonitor(cfg), nil
		},
		subtrees: func(*cli.Context) []recipe.Subtree { return monitor.Subtrees() },
		describe: func(c *cli.Context) string {
			rules := "default rules"
			if p := c.String("monitor-config"); p != "" {
				rules = "rules from " + p
			}
			channels := "channels unknown"
			if configured != nil {
				channels = describeChannels(*configured)
			}
			return "alerts and cluster metrics, " + rules + ", " + channels
		},
	}
}

// describeChannels names, by kind and count, the channels cfg sends
// notifications to: not their addresses, which may hold tokens.
func describeChannels(cfg monitor.Config) string {
	var parts []string
	for _, k := range []struct {
		n    int
		name string
	}{{len(cfg.Webhooks), "webhook"}, {len(cfg.Email), "email"}, {len(cfg.Commands), "command"}} {
		switch {
		case k.n == 1:
			parts = append(parts, "1 "+k.name)
		case k.n > 1:
			parts = append(parts, fmt.Sprintf("%d %ss", k.n, k.name))
		}
	}
	if len(parts) == 0 {
		return "no channel (shepherd ctl alert list)"
	}
	return "channels: " + strings.Join(parts, ", ")
}

// monitorConfig is the monitor's config: --monitor-config's file, or the
// defaults, with the flags applied.
func monitorConfig(c *cli.Context) (monitor.Config, error) {
	cfg := monitor.DefaultConfig()
	if path := c.String("monitor-config"); path != "" {
		var err error
		if cfg, err = monitor.LoadConfig(c.Context, path); err != nil {
			return cfg, err
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
	return cfg, nil
}

// startMonitor starts a monitor with cfg on a process's session.
func startMonitor(cfg monitor.Config) starter {
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
	}
}
