package main

import (
	"bytes"
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
(Debian package) and "shepherd coord" itself, a fresh server per workload, one at a
time, and prints a table with ZooKeeper as the baseline: in the last column, greater
than 1 means shepherd did better. Workloads: ` + strings.Join(bench.WorkloadNames(), ", ") + `.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "zk", Usage: "address of a running server to load"},
			&cli.IntFlag{Name: "pid", Usage: "process id of the --zk server, to measure its CPU and RSS"},
			&cli.BoolFlag{Name: "compare", Usage: "start the servers named by --target and compare them"},
			&cli.StringSliceFlag{Name: "target", Value: cli.NewStringSlice("zookeeper", "shepherd"),
				Usage: "servers --compare starts, the first being the baseline: zookeeper (or zk), shepherd"},
			&cli.StringFlag{Name: "shepherd-bin", Usage: "shepherd binary for --compare (default: this executable)"},
			&cli.StringFlag{Name: "work-dir", Usage: "where --compare keeps server data and logs (default: a temporary directory, removed afterwards)"},
			&cli.StringSliceFlag{Name: "workloads", Value: cli.NewStringSlice(bench.WorkloadNames()...), Usage: "workloads to run"},
			&cli.IntFlag{Name: "clients", Value: bench.DefaultClients, Usage: "client sessions (lock contenders)"},
			&cli.IntFlag{Name: "inflight", Value: bench.DefaultInFlight, Usage: "outstanding requests per session"},
			&cli.DurationFlag{Name: "duration", Value: bench.DefaultDuration, Usage: "measured time per workload"},
			&cli.IntFlag{Name: "ops", Usage: "cap on operations per workload (tree200k: znodes, default 200000)"},
			&cli.IntFlag{Name: "value-bytes", Value: bench.DefaultValueBytes, Usage: "size of every value written"},
			&cli.IntFlag{Name: "watchers", Value: bench.DefaultWatchers, Usage: "watching sessions in watch-fanout"},
			&cli.DurationFlag{Name: "warmup", Value: bench.DefaultWarmup, Usage: "mixed load before each measurement (negative: none)"},
			&cli.StringFlag{Name: "out", Usage: "also write the table, as Markdown, to this file"},
		},
		Action: runBench,
	}
}

func runBench(c *cli.Context) error {
	if c.IsSet("zk") == c.Bool("compare") {
		return errors.New("bench: give either --zk ADDR (a running server) or --compare (start the servers)")
	}
	o := bench.Options{
		Clients:    c.Int("clients"),
		InFlight:   c.Int("inflight"),
		Duration:   c.Duration("duration"),
		Ops:        c.Int("ops"),
		ValueBytes: c.Int("value-bytes"),
		Watchers:   c.Int("watchers"),
		Warmup:     c.Duration("warmup"),
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()

	var targets []bench.Target
	if c.IsSet("zk") {
		targets = []bench.Target{bench.Existing(c.String("zk"), c.String("zk"), c.Int("pid"))}
	} else {
		// Every workload gets a server of its own, thrown away after.
		o.KeepData = true
		dir, cleanup, err := benchWorkDir(c.String("work-dir"))
		if err != nil {
			return err
		}
		defer cleanup()
		if targets, err = compareTargets(c, dir); err != nil {
			return err
		}
	}

	var table bytes.Buffer
	err := bench.Compare(ctx, targets, c.StringSlice("workloads"), o, io.MultiWriter(os.Stdout, &table))
	if path := c.String("out"); path != "" && table.Len() > 0 {
		report := fmt.Sprintf("Produced by `%s`.\n\n%s", strings.Join(os.Args, " "), table.String())
		if werr := os.WriteFile(path, []byte(report), 0o644); werr != nil {
			err = errors.Join(err, fmt.Errorf("bench: --out: %w", werr))
		}
	}
	return err
}

// compareTargets builds the --target list, each in its own directory.
func compareTargets(c *cli.Context, dir string) ([]bench.Target, error) {
	var targets []bench.Target
	for _, name := range c.StringSlice("target") {
		sub := filepath.Join(dir, name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		switch name {
		case "zookeeper", "zk":
			targets = append(targets, bench.ApacheZooKeeper(sub))
		case "shepherd":
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
			return nil, fmt.Errorf("bench: --target %q: want zookeeper or shepherd", name)
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
