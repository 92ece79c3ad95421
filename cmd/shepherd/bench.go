package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/bench"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "load a ZooKeeper-protocol server, or compare shepherd coord with Apache ZooKeeper",
		Description: `With --zk ADDR, runs the workloads against a server that is already running (give
--pid to also measure its CPU and memory). With --compare, starts Apache ZooKeeper 3.8
(Debian package) and "shepherd coord" itself, each confined to --server-cpus while
--generators load-generator processes run on --generator-cpus; every run gets a fresh
server, --warmup of unmeasured load, then --duration measured; each figure is the median
of --repeats runs, with ZooKeeper as the baseline. Runs where the generators saturated
their CPUs or other processes took the server's are marked NOT CLEAN (see docs/coord.md).
Workloads: ` + strings.Join(bench.WorkloadNames(), ", ") + ` (--compare runs ` + bench.HarnessWorkloads + ` by default).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "zk", Usage: "address of a running server to load"},
			&cli.IntFlag{Name: "pid", Usage: "process id of the --zk server, to measure its CPU and RSS"},
			&cli.BoolFlag{Name: "compare", Usage: "start the servers named by --target and compare them"},
			&cli.StringSliceFlag{Name: "target", Value: cli.NewStringSlice("zookeeper", "shepherd"),
				Usage: "servers --compare starts, the first being the baseline: zookeeper (or zk), shepherd, or NAME=PATH for the shepherd binary at PATH (to compare two builds)"},
			&cli.StringFlag{Name: "shepherd-bin", Usage: "shepherd binary for --compare (default: this executable)"},
			&cli.StringFlag{Name: "work-dir", Usage: "where --compare keeps server data and logs (default: a temporary directory, removed afterwards)"},
			&cli.StringSliceFlag{Name: "workloads", Usage: "workloads to run (default: all with --zk, " + bench.HarnessWorkloads + " with --compare)"},
			&cli.IntFlag{Name: "clients", Value: bench.DefaultClients, Usage: "client sessions (lock contenders)"},
			&cli.IntFlag{Name: "inflight", Value: bench.DefaultInFlight, Usage: "outstanding requests per session"},
			&cli.StringFlag{Name: "client", Value: bench.DefaultClient, Usage: "client issuing the measured requests of " + strings.Join(bench.WireWorkloads, ", ") +
				": " + bench.ClientWire + " (bench's own, one write per request, little CPU) or " + bench.ClientGoZK + "; other workloads always use " + bench.ClientGoZK},
			&cli.DurationFlag{Name: "duration", Value: bench.DefaultDuration, Usage: "measured time per workload"},
			&cli.IntFlag{Name: "ops", Usage: "cap on operations per workload (tree200k: znodes, default 200000)"},
			&cli.IntFlag{Name: "value-bytes", Value: bench.DefaultValueBytes, Usage: "size of every value written"},
			&cli.IntFlag{Name: "watchers", Value: bench.DefaultWatchers, Usage: "watching sessions in watch-fanout"},
			&cli.DurationFlag{Name: "warmup", Value: bench.DefaultHarnessWarmup, Usage: "--compare: unmeasured load of the same workload on every fresh server (negative: none)"},
			&cli.IntFlag{Name: "repeats", Value: bench.DefaultRepeats, Usage: "--compare: runs per workload and server; the table shows medians"},
			&cli.StringFlag{Name: "server-cpus", Usage: "--compare: CPUs the server runs on, e.g. 0 (default: the first half of this process's CPUs)"},
			&cli.StringFlag{Name: "generator-cpus", Usage: "--compare: CPUs the load generators run on (default: the other half)"},
			&cli.IntFlag{Name: "generators", Usage: "--compare: load-generator processes (default: one per generator CPU)"},
			&cli.BoolFlag{Name: "generator", Hidden: true, Usage: "serve as a --compare load-generator process on stdin and stdout"},
			&cli.StringFlag{Name: "out", Usage: "also write the table, as Markdown, to this file"},
		},
		Action: runBench,
	}
}

func runBench(c *cli.Context) error {
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.Bool("generator") {
		return bench.ServeGenerator(ctx, os.Stdin, os.Stdout, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	}
	if c.IsSet("zk") == c.Bool("compare") {
		return errors.New("bench: give either --zk ADDR (a running server) or --compare (start the servers)")
	}
	o := bench.Options{
		Clients:    c.Int("clients"),
		InFlight:   c.Int("inflight"),
		Client:     c.String("client"),
		Duration:   c.Duration("duration"),
		Ops:        c.Int("ops"),
		ValueBytes: c.Int("value-bytes"),
		Watchers:   c.Int("watchers"),
		Warmup:     c.Duration("warmup"),
	}
	var table bytes.Buffer
	out := io.MultiWriter(os.Stdout, &table)
	var err error
	if c.IsSet("zk") {
		err = benchExisting(ctx, c, o, out)
	} else {
		err = benchCompare(ctx, c, o, out)
	}
	if path := c.String("out"); path != "" && table.Len() > 0 {
		report := fmt.Sprintf("Produced by `%s`.\n\n%s", strings.Join(os.Args, " "), table.String())
		if werr := os.WriteFile(path, []byte(report), 0o644); werr != nil {
			err = errors.Join(err, fmt.Errorf("bench: --out: %w", werr))
		}
	}
	return err
}

// benchExisting runs the workloads against the --zk server and writes
// one table row per workload.
func benchExisting(ctx context.Context, c *cli.Context, o bench.Options, out io.Writer) error {
	workloads := c.StringSlice("workloads")
	if len(workloads) == 0 {
		workloads = bench.WorkloadNames()
	}
	o.Addr, o.PID = c.String("zk"), c.Int("pid")
	o.Target = bench.Existing(o.Addr, o.Addr, o.PID)
	var (
		rows []bench.Row
		errs []error
	)
	for _, w := range workloads {
		if ctx.Err() != nil {
			break
		}
		res, err := bench.Run(ctx, w, o)
		res.Workload = w
		rows = append(rows, bench.Row{Target: o.Addr, Result: res, Err: err})
		if err != nil {
			errs = append(errs, fmt.Errorf("bench: %s: %w", w, err))
		}
	}
	if len(rows) > 0 {
		errs = append(errs, bench.WriteTable(out, rows))
	}
	return errors.Join(errs...)
}

// benchCompare runs the harness: fresh, pinned servers and generator
// processes that are this executable.
func benchCompare(ctx context.Context, c *cli.Context, o bench.Options, out io.Writer) error {
	dir, cleanup, err := benchWorkDir(c.String("work-dir"))
	if err != nil {
		return err
	}
	defer cleanup()
	targets, err := compareTargets(c, dir)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: find this executable to run load generators: %w", err)
	}
	workloads := c.StringSlice("workloads")
	if len(workloads) == 0 {
		workloads = strings.Split(bench.HarnessWorkloads, ",")
	}
	h := bench.Harness{
		Targets: targets, Workloads: workloads, Options: o,
		Repeats: c.Int("repeats"), Generators: c.Int("generators"),
		GeneratorCommand: []string{exe, "bench", "--generator"}, Dir: dir,
	}
	for _, f := range []struct {
		flag string
		cpus *[]int
	}{{"server-cpus", &h.Layout.Server}, {"generator-cpus", &h.Layout.Generator}} {
		if !c.IsSet(f.flag) {
			continue
		}
		if *f.cpus, err = bench.ParseCPUList(c.String(f.flag)); err != nil {
			return fmt.Errorf("bench: --%s: %w", f.flag, err)
		}
	}
	if (len(h.Layout.Server) == 0) != (len(h.Layout.Generator) == 0) {
		return errors.New("bench: give both --server-cpus and --generator-cpus, or neither")
	}
	return h.Run(ctx, out)
}

// compareTargets builds the --target list, each in its own directory.
func compareTargets(c *cli.Context, dir string) ([]bench.Target, error) {
	var targets []bench.Target
	for _, spec := range c.StringSlice("target") {
		name, bin, isPath := strings.Cut(spec, "=")
		sub := filepath.Join(dir, name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		switch {
		case isPath:
			targets = append(targets, bench.ShepherdCoordAs(name, bin, sub))
		case name == "zookeeper" || name == "zk":
			targets = append(targets, bench.ApacheZooKeeper(sub))
		case name == "shepherd":
			bin := c.String("shepherd-bin")
			if bin == "" {
				exe, err := os.Executable()
				if err != nil {
					return nil, fmt.Errorf("bench: find this executable for --shepherd-bin: %w", err)
				}
				bin = exe
			}
			targets = append(targets, bench.ShepherdCoord(bin, sub))
		default:
			return nil, fmt.Errorf("bench: --target %q: want zookeeper, shepherd or NAME=PATH", spec)
		}
	}
	return targets, nil
}

// benchWorkDir returns dir, or a new temporary directory and a function
// that removes it.
func benchWorkDir(dir string) (string, func(), error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, fmt.Errorf("bench: --work-dir: %w", err)
		}
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "shepherd-bench-")
	if err != nil {
		return "", nil, fmt.Errorf("bench: work dir: %w", err)
	}
	return tmp, func() {
		if err := os.RemoveAll(tmp); err != nil {
			slog.Warn("bench: remove work dir", "dir", tmp, "err", err)
		}
	}, nil
}
