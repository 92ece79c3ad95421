package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/authflag"
	"github.com/shepherd-dev/shepherd/internal/boundedfile"
)

// collectorCommand is `shepherd collector`: a log collector agent and,
// with --assign, a candidate for the assigner.
func collectorCommand() *cli.Command {
	host, _ := os.Hostname()
	return &cli.Command{
		Name:  "collector",
		Usage: "collect the log sources assigned to this collector; with --assign, also contend to assign them",
		Description: `Registers /logs/collector/<name> (persistent) and its status node, collects the
sources the assigner writes to that node into --out (and/or --stdout), and writes
progress and load to status every --status-interval. Sources are managed with
"shepherd ctl source add|rm|list". --config reads a YAML file whose keys are these
flag names; flags given on the command line win. See docs/collector.md.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "YAML file with these flag names as keys"},
			&cli.StringFlag{Name: "zk", Value: "127.0.0.1:2181", EnvVars: []string{"SHEPHERD_ZK"}, Usage: "servers and optional chroot: host:port[,host:port…][/chroot]"},
			&cli.DurationFlag{Name: "session-timeout", Value: recipe.DefaultSessionTimeout, Usage: "session timeout asked of the server"},
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
		}, authflag.Flags()...),
		Before: applyYAMLConfig,
		Action: runCollector,
	}
}

// applyYAMLConfig sets, from --config, every flag not given on the
// command line.
func applyYAMLConfig(c *cli.Context) error {
	path := c.String("config")
	if path == "" {
		return nil
	}
	b, err := readInputFile(c, "config", path, boundedfile.MaxConfig)
	if err != nil {
		return err
	}
	var kv map[string]any
	if err := yaml.Unmarshal(b, &kv); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	for k, v := range kv {
		if k == "config" || !hasFlag(c, k) {
			return fmt.Errorf("--config %s: unknown key %q (keys are the flag names)", path, k)
		}
		if c.IsSet(k) {
			continue
		}
		if err := c.Set(k, fmt.Sprint(v)); err != nil {
			return fmt.Errorf("--config %s: %s: %w", path, k, err)
		}
	}
	return nil
}

func hasFlag(c *cli.Context, name string) bool {
	for _, f := range c.Command.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

func runCollector(c *cli.Context) error {
	strategy, err := collector.ParseStrategy(c.String("strategy"))
	if err != nil {
		return fmt.Errorf("--strategy: %w", err)
	}
	if c.String("out") == "" && !c.Bool("stdout") {
		return fmt.Errorf("--out or --stdout: collected lines need somewhere to go")
	}
	if min := max(2*c.Duration("status-interval"), c.Duration("status-interval")+c.Duration("read-timeout")); c.Duration("dead-after") <= min {
		return fmt.Errorf("--dead-after %v must exceed %v (twice --status-interval, and --status-interval plus --read-timeout), or live collectors look dead",
			c.Duration("dead-after"), min)
	}
	log := slog.Default()
	opts, err := authflag.FromContext(c).Options(log, "collector", recipe.Options{SessionTimeout: c.Duration("session-timeout"), Logger: log})
	if err != nil {
		return err
	}
	cfg := collector.AgentConfig{
		Connect: c.String("zk"),
		Session: opts,
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
		return fmt.Errorf("--name: %w", err)
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	err = collector.RunAgent(ctx, cfg)
	log.Info("collector stopped", "name", cfg.Collector.Name, "ran", time.Since(start).Round(time.Second))
	return err
}
