package ctl

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/core"
)

// verifyCommand is `task verify`: compare a running task's source and
// target, chunk by chunk (docs/replication.md#verify).
func (r *runner) verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "compare a running task's source and target chunk by chunk and list the rows that differ (exit 1 if any); --repair rewrites them",
		ArgsUsage: "[--tables db.t,…] [--repair] task",
		Description: `Each chunk of a keyed table is checksummed on the source in a consistent
snapshot at a binlog position, and on the target once the task has applied that
position; a chunk that differs is compared again, row by row, at newer positions,
and only keys that differ every time are reported. The task must be running.
The report is kept in tasks/<task>/verify (task show prints it; the monitor's
TaskDataMismatch rule fires on a difference). See docs/replication.md#verify.`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "tables", Usage: "source tables to compare, db.table (comma-separated or repeated); default: every table the task replicates"},
			&cli.BoolFlag{Name: "repair", Usage: "rewrite the differing rows on the target (REPLACE from the source, DELETE where the source has none), fenced by the task's epoch, then compare again"},
			&cli.IntFlag{Name: "chunk-rows", Value: 1000, Usage: "rows per chunk"},
			&cli.DurationFlag{Name: "for", Value: 30 * time.Minute, Usage: "bound on the whole verify"},
		},
		Action: r.taskVerify,
	}
}

func (r *runner) taskVerify(c *cli.Context) error {
	name, a, err := r.oneTask(c)
	if err != nil {
		return err
	}
	if c.Int("chunk-rows") < 1 {
		return usagef("task verify: --chunk-rows %d: want 1 or more", c.Int("chunk-rows"))
	}
	var tables []string
	for _, t := range c.StringSlice("tables") {
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				tables = append(tables, s)
			}
		}
	}
	opts := core.VerifyOptions{Tables: tables, Repair: c.Bool("repair"), ChunkRows: c.Int("chunk-rows")}
	ctx, cancel := context.WithTimeout(r.ctx, c.Duration("for"))
	defer cancel()
	rep, err := a.Verify(ctx, name, opts, r.engine, r.logger())
	r.record("task.verify", "task/"+name, nil, map[string]any{"repair": opts.Repair, "tables": tables,
		"chunks": rep.Chunks, "differences": rep.Differences, "repaired": rep.Repaired}, err)
	if err != nil {
		return err
	}
	if r.json {
		if err := writeJSON(r.env.Stdout, rep); err != nil {
			return err
		}
	} else {
		writeVerifyReport(r.env.Stdout, &rep)
	}
	if rep.Differences > 0 {
		return &exitError{ExitFailure, fmt.Sprintf("task %s: %d confirmed differences between source and target", name, rep.Differences)}
	}
	return nil
}

// writeVerifyReport prints a verify report: a summary line, then each
// table that differs with its chunks and keys.
func writeVerifyReport(w io.Writer, rep *core.VerifyReport) {
	fmt.Fprintf(w, "task %s: verified %d tables, %d chunks, %d rows at %s in %s: %s\n", rep.Task, len(rep.Tables), rep.Chunks, rep.Rows,
		positionText(rep.Position), rep.Finished.Sub(rep.Started).Round(time.Millisecond), verifySummary(rep))
	for _, t := range rep.Tables {
		switch {
		case t.Missing:
			fmt.Fprintf(w, "  %s.%s -> %s: missing on the target\n", t.DB, t.Table, t.Target)
		case t.Differs:
			fmt.Fprintf(w, "  %s.%s -> %s: the rows differ (no key: compared whole, not repaired)\n", t.DB, t.Table, t.Target)
		case t.Unverified:
			fmt.Fprintf(w, "  %s.%s -> %s: unverified (no key, and writes to it never paused at a position the target had reached)\n", t.DB, t.Table, t.Target)
		}
		for _, d := range t.Diffs {
			state := ""
			if d.Repaired {
				state = " (repaired)"
			}
			fmt.Fprintf(w, "  %s.%s -> %s keys %s%s:\n", t.DB, t.Table, t.Target, rangeText(d.After, d.Through), state)
			for _, k := range []struct {
				what string
				keys [][]string
			}{{"missing on target", d.Missing}, {"extra on target", d.Extra}, {"different", d.Changed}} {
				for _, key := range k.keys {
					fmt.Fprintf(w, "    %-17s %s\n", k.what, keyText(key))
				}
			}
			if d.Unlisted > 0 {
				fmt.Fprintf(w, "    and %d more keys\n", d.Unlisted)
			}
		}
	}
}

// verifySummary is the verdict of a report in a few words.
func verifySummary(rep *core.VerifyReport) string {
	var parts []string
	switch {
	case rep.Error != "":
		parts = append(parts, "stopped: "+rep.Error)
	case rep.Differences > 0:
		parts = append(parts, fmt.Sprintf("%d confirmed differences", rep.Differences))
	default:
		parts = append(parts, "equal")
	}
	if rep.Repaired > 0 {
		parts = append(parts, fmt.Sprintf("%d rows repaired", rep.Repaired))
	}
	if rep.Unverified > 0 {
		parts = append(parts, fmt.Sprintf("%d keyless tables unverified", rep.Unverified))
	}
	return strings.Join(parts, ", ")
}

func rangeText(after, through []string) string {
	lo, hi := "(start", "end)"
	if after != nil {
		lo = "(" + keyText(after)
	}
	if through != nil {
		hi = keyText(through) + "]"
	}
	return lo + ", " + hi
}

func keyText(key []string) string {
	if len(key) == 1 {
		return key[0]
	}
	return "(" + strings.Join(key, ", ") + ")"
}
