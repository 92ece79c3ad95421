package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/authflag"
)

// coreCommand is `shepherd core`, the replication worker.
func coreCommand() *cli.Command {
	return &cli.Command{
		Name:  "core",
		Usage: "run replication tasks: hot standby for --task, cold standby for a --group",
		Description: `Registers as an instance of each --task (hot standby: the first instance runs the
task, the others take over within a second of its session ending) and/or scans the
tasks of a --group every --scan-interval (cold standby: an unowned task is taken by
the first core to find it, and the group's cores keep its tasks evenly spread, weighted
by --capacity). Tasks are added with "shepherd ctl task add -f task.yaml".
SIGINT or SIGTERM stops applying, writes lastCommit and hands the tasks over.
--config reads a YAML file whose keys are these flag names; flags win over it.
See docs/replication.md.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "YAML file with these flag names as keys"},
			&cli.StringFlag{Name: "zk", Value: "127.0.0.1:2181", EnvVars: []string{"SHEPHERD_ZK"},
				Usage: "coordination servers and optional chroot: host:port[,host:port…][/chroot]"},
			&cli.DurationFlag{Name: "session-timeout", Value: recipe.DefaultSessionTimeout,
				Usage: "session timeout: how long a crashed core keeps its tasks before a standby takes over"},
			&cli.StringFlag{Name: "host", Usage: "name of this core's instance nodes, <host>-<seq> (default: the host name)"},
			&cli.StringSliceFlag{Name: "task", Usage: "task to stand by for (hot standby); repeat for several"},
			&cli.StringFlag{Name: "group", Usage: "cold-standby group to scan"},
			&cli.DurationFlag{Name: "scan-interval", Value: core.DefaultScanInterval, Usage: "period of the group scan"},
			&cli.IntFlag{Name: "capacity", Value: 1, Usage: "this core's weight in its group: its share of the group's tasks is capacity / sum of the live cores' capacities"},
			&cli.IntFlag{Name: "balance-moves", Value: core.DefaultBalanceMoves,
				Usage: "tasks this core hands over at most per scan interval to even out its group; 0 turns balancing off"},
			&cli.DurationFlag{Name: "balance-grace", Usage: "how long a core of the group must be gone before the others share out its part (default: the session timeout)"},
			&cli.StringFlag{Name: "root", Value: core.DefaultRoot, Usage: "root of the replication nodes (below the --zk chroot)"},
			&cli.DurationFlag{Name: "checkpoint-interval", Value: core.DefaultCheckpointInterval,
				Usage: "how often a running task mirrors its checkpoint to lastCommit"},
			&cli.IntFlag{Name: "max-failures", Value: core.DefaultMaxFailures,
				Usage: "instances in a row that may fail a task non-retryably before the next stops trying"},
			&cli.DurationFlag{Name: "retry-base", Value: core.DefaultRetryBase, Usage: "first backoff after a retryable failure"},
			&cli.DurationFlag{Name: "retry-max", Value: core.DefaultRetryMax, Usage: "longest backoff after retryable failures"},
			&cli.StringFlag{Name: "metrics-listen", Usage: "HTTP address serving Prometheus /metrics (off if empty)"},
		}, authflag.Flags()...),
		Action: runCore,
	}
}

// coreSettings merges the --config file and the flags: a flag given on
// the command line wins, and a flag's default fills what the file leaves
// out.
func coreSettings(c *cli.Context) (core.FileConfig, error) {
	var fc core.FileConfig
	if path := c.String("config"); path != "" {
		err := underSignals(c, "config", path, func(ctx context.Context) (err error) {
			fc, err = core.LoadConfigFile(ctx, path)
			return err
		})
		if err != nil {
			return fc, err
		}
	}
	use := func(name string, unset bool) bool { return c.IsSet(name) || unset }
	if use("zk", fc.ZK == "") {
		fc.ZK = c.String("zk")
	}
	if use(authflag.FlagAuth, fc.Auth == "") {
		fc.Auth = c.String(authflag.FlagAuth)
	}
	if use(authflag.FlagAuthFile, fc.AuthFile == "") {
		fc.AuthFile = c.String(authflag.FlagAuthFile)
	}
	if use(authflag.FlagReadACL, len(fc.ReadACL) == 0) {
		fc.ReadACL = c.StringSlice(authflag.FlagReadACL)
	}
	if use(authflag.FlagInsecure, !fc.InsecureOpenACL) {
		fc.InsecureOpenACL = c.Bool(authflag.FlagInsecure)
	}
	if use("session-timeout", fc.SessionTimeout == 0) {
		fc.SessionTimeout = c.Duration("session-timeout")
	}
	if use("host", fc.Host == "") {
		fc.Host = c.String("host")
	}
	if use("task", len(fc.Tasks) == 0) {
		fc.Tasks = c.StringSlice("task")
	}
	if use("group", fc.Group == "") {
		fc.Group = c.String("group")
	}
	if use("scan-interval", fc.ScanInterval == 0) {
		fc.ScanInterval = c.Duration("scan-interval")
	}
	if use("capacity", fc.Capacity == 0) {
		fc.Capacity = c.Int("capacity")
	}
	if use("balance-moves", fc.BalanceMoves == nil) {
		n := c.Int("balance-moves")
		fc.BalanceMoves = &n
	}
	if use("balance-grace", fc.BalanceGrace == 0) {
		fc.BalanceGrace = c.Duration("balance-grace")
	}
	if use("root", fc.Root == "") {
		fc.Root = c.String("root")
	}
	if use("checkpoint-interval", fc.CheckpointInterval == 0) {
		fc.CheckpointInterval = c.Duration("checkpoint-interval")
	}
	if use("max-failures", fc.MaxFailures == 0) {
		fc.MaxFailures = c.Int("max-failures")
	}
	if use("retry-base", fc.RetryBase == 0) {
		fc.RetryBase = c.Duration("retry-base")
	}
	if use("retry-max", fc.RetryMax == 0) {
		fc.RetryMax = c.Duration("retry-max")
	}
	if use("metrics-listen", fc.MetricsListen == "") {
		fc.MetricsListen = c.String("metrics-listen")
	}
	return fc, nil
}

func runCore(c *cli.Context) error {
	fc, err := coreSettings(c)
	if err != nil {
		return err
	}
	if c.Args().Present() {
		return fmt.Errorf("core: unexpected argument %q (tasks are given with --task)", c.Args().First())
	}
	moves := *fc.BalanceMoves
	if moves < 0 {
		return fmt.Errorf("core: --balance-moves %d: want 0 (balancing off) or more", moves)
	}
	if moves == 0 {
		moves = core.BalanceOff
	}
	reg := prometheus.NewRegistry()
	cfg := core.Config{
		Host: fc.Host, Tasks: fc.Tasks, Group: fc.Group, ScanInterval: fc.ScanInterval, Root: fc.Root,
		Capacity: fc.Capacity, BalanceMoves: moves, BalanceGrace: fc.BalanceGrace,
		CheckpointInterval: fc.CheckpointInterval, MaxFailures: fc.MaxFailures, RetryBase: fc.RetryBase, RetryMax: fc.RetryMax,
		Engine: core.MySQL{}, Logger: slog.Default(), Registerer: reg,
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	opts, err := authflag.Settings{Auth: fc.Auth, AuthFile: fc.AuthFile, ReadACL: fc.ReadACL, Insecure: fc.InsecureOpenACL}.
		Options(slog.Default(), "core", recipe.Options{SessionTimeout: fc.SessionTimeout, Logger: slog.Default()})
	if err != nil {
		return err
	}
	s, err := recipe.Dial(dctx, fc.ZK, opts)
	if err != nil {
		return fmt.Errorf("core: %w", err)
	}
	defer s.Close()
	k, err := core.New(s, cfg)
	if err != nil {
		return err
	}
	if fc.MetricsListen != "" {
		ln, err := net.Listen("tcp", fc.MetricsListen)
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
	return k.Run(ctx)
}
