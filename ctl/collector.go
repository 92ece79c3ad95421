package ctl

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/collector"
)

// collectorCommand is "collector list": the collectors of /logs/collector.
func (r *runner) collectorCommand() *cli.Command {
	return &cli.Command{
		Name:      "collector",
		Usage:     "show the log collectors: liveness, load, assigned sources and lag",
		ArgsUsage: "list [--dead-after duration]",
		Description: `list prints one line per collector: its name, alive or dead as the assigner
judges it (collector.ListCollectors: the status written less than the assigner's
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
	s, err := r.session()
	if err != nil {
		return err
	}
	var infos []collector.CollectorInfo
	var judged string
	err = r.retry(s, func(ctx context.Context) (err error) {
		infos, judged, err = collector.ListCollectors(ctx, s, deadAfter)
		return err
	})
	if err != nil {
		return r.collectorError(collector.CollectorsPath, err)
	}
	if r.json {
		if infos == nil {
			infos = []collector.CollectorInfo{}
		}
		return writeJSON(r.env.Stdout, map[string]any{"collectors": infos, "judged": judged})
	}
	if judged == collector.JudgedLocally && len(infos) > 0 {
		r.warn("collector list: liveness judged %s", judged)
	}
	tw := tabwriter.NewWriter(r.env.Stdout, 0, 4, 2, ' ', 0)
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
			fmt.Fprintf(r.env.Stdout, "%s: %s\n", in.Name, strings.Join(in.Sources, " "))
		}
		if in.Refused != "" {
			fmt.Fprintf(r.env.Stdout, "%s: REFUSED: %s\n", in.Name, in.Refused)
		}
	}
	return nil
}
