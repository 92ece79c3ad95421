package ctl

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/collector"
)

// collectorCommand is "collector list": the collectors of /logs/collector.
func (r *runner) collectorCommand() *cli.Command {
	return &cli.Command{
		Name:      "collector",
		Usage:     "show the log collectors: liveness, load, assigned sources and lag",
		ArgsUsage: "list [--dead-after duration]",
		Description: `list prints one line per collector: its name, alive or dead as the assigner
judges it (collector.Admin.Overview: the status written less than the assigner's
--dead-after before its last round, on the coordination server's clock, and not
marked leaving), the age of its status, load (bytes/s, lines/s), the number of
assigned sources, the bytes known not yet collected (lag) and the lines committed;
with --json, one document with every source and the verdict's reason.`,
		Subcommands: []*cli.Command{{
			Name: "list", Usage: "list collectors",
			ArgsUsage: "[--dead-after duration]",
			Flags: []cli.Flag{
				&cli.DurationFlag{Name: "dead-after", Usage: "judge with this instead of the leading assigner's --dead-after (" +
					collector.DefaultDeadAfter.String() + " when no assigner leads)"},
			},
			Action: r.collectorList,
		}},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("collector: unknown subcommand %q: want list", c.Args().First())
			}
			return usagef("collector: missing subcommand: want list")
		},
	}
}

func (r *runner) collectorList(c *cli.Context) error {
	if c.Args().Present() {
		return usagef("collector list: takes no arguments")
	}
	deadAfter := c.Duration("dead-after")
	if c.IsSet("dead-after") && deadAfter <= 0 {
		return usagef("collector list: --dead-after %v: must be positive", deadAfter)
	}
	snap, err := r.snapshot(cluster.Options{DeadAfter: deadAfter, Sections: []cluster.Section{cluster.SectionCollectors}})
	if err != nil {
		return err
	}
	if r.json {
		return writeJSON(r.env.Stdout, collector.Overview{Collectors: snap.Collectors, Sources: snap.Sources, Judged: snap.CollectorsJudged})
	}
	if snap.CollectorsJudged == collector.JudgedLocally && len(snap.Collectors) > 0 {
		r.warn("collector list: liveness judged %s", snap.CollectorsJudged)
	}
	return writeCollectors(r.env.Stdout, snap.Collectors)
}

// writeCollectors prints one line per collector, then the sources of
// each and its refusal.
func writeCollectors(w io.Writer, infos []collector.CollectorInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tSTATUS AGE\tBYTES/S\tLINES/S\tSOURCES\tLAG\tLINES")
	for _, in := range infos {
		state, age := "dead", "never"
		switch {
		case in.Alive:
			state = "alive"
		case in.Leaving:
			state = "stopped"
		}
		if in.StatusAge >= 0 {
			age = in.StatusAge.Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%.0f\t%d\t%d\t%d\n", in.Name, state, age,
			in.Load.BytesPerSec, in.Load.LinesPerSec, len(in.Sources), in.Lag, in.Lines)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, in := range infos {
		if len(in.Sources) > 0 {
			fmt.Fprintf(w, "%s: %s\n", in.Name, strings.Join(in.Sources, " "))
		}
		if in.Refused != "" {
			fmt.Fprintf(w, "%s: REFUSED: %s\n", in.Name, in.Refused)
		}
	}
	return nil
}
