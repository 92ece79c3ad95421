package ctl

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/core"
)

// taskActionCommands are the task verbs the control console also offers:
// the same core.Admin methods behind both.
func (r *runner) taskActionCommands() []*cli.Command {
	return []*cli.Command{{
		Name:      "handover",
		Usage:     "make a hot-standby task's owner hand it to the next instance in line",
		ArgsUsage: "task",
		Action:    r.taskHandover,
	}, {
		Name:      "reset-position",
		Usage:     "move a stopped task's lastCommit to a binlog position or GTID set, e.g. past an event that fails for good",
		ArgsUsage: "--to file:pos|file:pos@server|GTID-set task",
		Description: `The task resumes at --to when started. It may be
  file:pos          a position in the binlog of the server behind the source address
                    (mysql-bin.000003:4); on MariaDB its GTID state is looked up
  file:pos@server   the same, of a named server: mariadb:<server_id> or
                    mysql:<server_uuid>, as task show prints it; refused when another
                    server is behind the source address
  GTID set          0-1-57,1-2-9 (MariaDB) or 3e11fa47-…:1-57 (MySQL): resumed by GTID
                    on whichever server is behind the source address, e.g. after a
                    failover; the source must have written those transactions
Refused behind the target's checkpoint, or when it cannot be ordered against it
(another binlog with no GTID state that decides). See docs/replication.md.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Required: true, Usage: "where to resume: file:pos, file:pos@server or a GTID set"},
		},
		Action: r.taskResetPosition,
	}, {
		Name:      "skip-event",
		Usage:     "move a stopped task that failed for good past the source transaction its failure names",
		ArgsUsage: "task",
		Action:    r.taskSkipEvent,
	}, r.switchSourceCommand(), r.verifyCommand()}
}

func (r *runner) taskHandover(c *cli.Context) error {
	name, a, err := r.oneTask(c)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	h, err := a.Handover(ctx, name)
	r.record("task.handover", "task/"+name, map[string]string{"owner": h.From}, map[string]string{"next": h.To}, err)
	if err != nil {
		return err
	}
	if r.json {
		return writeJSON(r.env.Stdout, h)
	}
	fmt.Fprintf(r.env.Stdout, "task %s: %s handed over to %s\n", name, h.From, h.To)
	return nil
}

func (r *runner) taskResetPosition(c *cli.Context) error {
	pos, err := core.ParsePosition(c.String("to"))
	if err != nil {
		return usagef("task reset-position: --to: %v", err)
	}
	return r.moveTask(c, "task.reset-position", func(ctx context.Context, a *core.Admin, name string) (core.PositionReset, error) {
		return a.ResetPosition(ctx, name, pos, r.engine, r.logger())
	})
}

func (r *runner) taskSkipEvent(c *cli.Context) error {
	return r.moveTask(c, "task.skip-event", func(ctx context.Context, a *core.Admin, name string) (core.PositionReset, error) {
		return a.SkipEvent(ctx, name, r.engine, r.logger())
	})
}

// moveTask runs a position change on the task argument, audited as
// action, and prints it.
func (r *runner) moveTask(c *cli.Context, action string, move func(context.Context, *core.Admin, string) (core.PositionReset, error)) error {
	name, a, err := r.oneTask(c)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	res, err := move(ctx, a, name)
	before, after := positionFields(res)
	r.record(action, "task/"+name, before, after, err)
	if err != nil {
		return err
	}
	if r.json {
		return writeJSON(r.env.Stdout, res)
	}
	fmt.Fprintf(r.env.Stdout, "task %s: lastCommit %s → %s; shepherd ctl task start %s to resume\n",
		name, serverPositionText(res.Before), serverPositionText(res.After), name)
	return nil
}
