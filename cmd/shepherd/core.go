package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
)

// coreRole is `shepherd core`, the replication worker.
func coreRole() role {
	return role{
		name:  "core",
		usage: "run replication tasks: hot standby for --task, cold standby for a --group",
		description: `Registers as an instance of each --task (hot standby: the first instance runs the
task, the others take over within a second of its session ending) and/or scans the
tasks of a --group every --scan-interval (cold standby: an unowned task is taken by
the first core to find it, and the group's cores keep its tasks evenly spread, weighted
by --capacity). Tasks are added with "shepherd ctl task add -f task.yaml".
SIGINT or SIGTERM stops applying, writes lastCommit and hands the tasks over.
--config reads a YAML file whose keys are these flag names; flags win over it.
See docs/replication.md.`,
		flags: func() []cli.Flag {
			return []cli.Flag{
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
			}
		},
		setup:      setupCore,
		subtrees:   func(c *cli.Context) []recipe.Subtree { return core.NewLayout(c.String("root")).Subtrees() },
		upDefaults: func(string) map[string]string { return map[string]string{"group": "default"} },
		describe: func(c *cli.Context) string {
			var what []string
			if g := c.String("group"); g != "" {
				what = append(what, "cold-standby group "+g)
			}
			if t := c.StringSlice("task"); len(t) > 0 {
				what = append(what, "tasks "+strings.Join(t, ","))
			}
			return strings.Join(what, "; ")
		},
	}
}

func setupCore(c *cli.Context, log *slog.Logger) (starter, error) {
	if c.Args().Present() {
		return nil, fmt.Errorf("core: unexpected argument %q (tasks are given with --task)", c.Args().First())
	}
	moves := c.Int("balance-moves")
	if moves < 0 {
		return nil, fmt.Errorf("core: --balance-moves %d: want 0 (balancing off) or more", moves)
	}
	if moves == 0 {
		moves = core.BalanceOff
	}
	cfg := core.Config{
		Host: c.String("host"), Tasks: c.StringSlice("task"), Group: c.String("group"), ScanInterval: c.Duration("scan-interval"),
		Root: c.String("root"), Capacity: c.Int("capacity"), BalanceMoves: moves, BalanceGrace: c.Duration("balance-grace"),
		CheckpointInterval: c.Duration("checkpoint-interval"), MaxFailures: c.Int("max-failures"),
		RetryBase: c.Duration("retry-base"), RetryMax: c.Duration("retry-max"),
		Engine: core.DefaultEngine(), Logger: log,
	}
	return func(e env) (func(context.Context) error, error) {
		cfg.Registerer = e.http.Registry
		k, err := core.New(e.session, cfg)
		if err != nil {
			return nil, err
		}
		return k.Run, nil
	}, nil
}
