package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// collectorRole is `shepherd collector`: a log collector agent and, with
// --assign, a candidate for the assigner.
func collectorRole() role {
	host, _ := os.Hostname()
	return role{
		name:  "collector",
		usage: "collect the log sources assigned to this collector; with --assign, also contend to assign them",
		description: `Registers /logs/collector/<name> (persistent) and its status node, collects the
sources the assigner writes to that node into --out (and/or --stdout), and writes
progress and load to status every --status-interval. Sources are managed with
"shepherd ctl source add|rm|list". --config reads a YAML file whose keys are these
flag names; flags given on the command line win. See docs/collector.md.`,
		flags: func() []cli.Flag {
			return []cli.Flag{
				&cli.StringFlag{Name: "name", Value: host, Usage: "collector name, unique per collector: /logs/collector/<name>"},
				&cli.StringFlag{Name: "out", Usage: "output directory: <out>/<source>/<name>-<seq>.log segments"},
				&cli.BoolFlag{Name: "stdout", Usage: "also copy collected lines to stdout (at most once)"},
				&cli.DurationFlag{Name: "poll-interval", Value: collector.DefaultPollInterval, Usage: "how often idle sources are read"},
				&cli.DurationFlag{Name: "status-interval", Value: collector.DefaultStatusInterval, Usage: "longest time between status writes (heartbeats)"},
				&cli.Int64Flag{Name: "rotate-size", Value: collector.DefaultRotateSize, Usage: "bytes after which an output segment is closed"},
				&cli.IntFlag{Name: "max-read", Value: collector.DefaultMaxRead, Usage: "bytes read from one source per round"},
				&cli.DurationFlag{Name: "read-timeout", Value: collector.DefaultReadTimeout, Usage: "bound on one read of one source (an HTTP request)"},
				&cli.BoolFlag{Name: "assign", Usage: "contend in the election of the assigner"},
				&cli.StringFlag{Name: "strategy", Value: string(collector.Local), Usage: "assigner strategy: global or local"},
				&cli.DurationFlag{Name: "dead-after", Value: collector.DefaultDeadAfter, Usage: "a collector whose status is older is dead (assigner)"},
				&cli.DurationFlag{Name: "assign-interval", Value: collector.DefaultAssignPoll, Usage: "how often the assigner polls status nodes"},
			}
		},
		setup:    setupCollector,
		subtrees: func(*cli.Context) []recipe.Subtree { return collector.Subtrees() },
		upDefaults: func(dataDir string) map[string]string {
			return map[string]string{"out": filepath.Join(dataDir, "collector"), "assign": "true"}
		},
		describe: func(c *cli.Context) string {
			return "collector " + c.String("name") + ", output in " + c.String("out")
		},
	}
}

func setupCollector(c *cli.Context, log *slog.Logger) (starter, error) {
	strategy, err := collector.ParseStrategy(c.String("strategy"))
	if err != nil {
		return nil, fmt.Errorf("--strategy: %w", err)
	}
	if c.String("out") == "" && !c.Bool("stdout") {
		return nil, fmt.Errorf("--out or --stdout: collected lines need somewhere to go")
	}
	if min := max(2*c.Duration("status-interval"), c.Duration("status-interval")+c.Duration("read-timeout")); c.Duration("dead-after") <= min {
		return nil, fmt.Errorf("--dead-after %v must exceed %v (twice --status-interval, and --status-interval plus --read-timeout), or live collectors look dead",
			c.Duration("dead-after"), min)
	}
	cfg := collector.AgentConfig{
		Collector: collector.Config{
			Name:           c.String("name"),
			OutDir:         c.String("out"),
			PollInterval:   c.Duration("poll-interval"),
			StatusInterval: c.Duration("status-interval"),
			RotateSize:     c.Int64("rotate-size"),
			MaxRead:        c.Int("max-read"),
			ReadTimeout:    c.Duration("read-timeout"),
			Logger:         log,
		},
		Assign: c.Bool("assign"),
		Assigner: collector.AssignerConfig{
			Strategy:     strategy,
			PollInterval: c.Duration("assign-interval"),
			DeadAfter:    c.Duration("dead-after"),
			Logger:       log,
		},
	}
	if c.Bool("stdout") {
		cfg.Collector.Stdout = os.Stdout
	}
	if err := collector.ValidName(cfg.Collector.Name); err != nil {
		return nil, fmt.Errorf("--name: %w", err)
	}
	return func(e env) (func(context.Context) error, error) {
		return func(ctx context.Context) error { return collector.RunAgent(ctx, e.session, cfg) }, nil
	}, nil
}
