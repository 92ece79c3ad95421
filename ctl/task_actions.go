package ctl

import (
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
		Usage:     "move a stopped task's lastCommit to a binlog position, e.g. past an event that fails for good",
		ArgsUsage: "--to file:pos task",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Required: true, Usage: "the binlog position to resume from, file:pos"},
		},
		Action: r.taskResetPosition,
	}}
}

func (r *runner) taskHandover(c *cli.Context) error {
	name, a, err := r.oneTask(c)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	h, err := a.Handover(ctx, name)
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
	name, a, err := r.oneTask(c)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	res, err := a.ResetPosition(ctx, name, pos, r.engine, r.logger())
	if err != nil {
		return err
	}
	if r.json {
		return writeJSON(r.env.Stdout, res)
	}
	fmt.Fprintf(r.env.Stdout, "task %s: lastCommit %s → %s; shepherd ctl task start %s to resume\n", name, res.Before, res.After, name)
	return nil
}
