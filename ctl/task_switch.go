package ctl

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/core"
)

// switchSourceCommand is `task switch-source`: the console's "Switch
// source" button, from a terminal.
func (r *runner) switchSourceCommand() *cli.Command {
	return &cli.Command{
		Name:      "switch-source",
		Usage:     "make a task read from another of its source candidates (source.host or source.hosts), resuming by GTID",
		ArgsUsage: "--to host:port task",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Required: true, Usage: "the candidate to read from, host:port"},
			&cli.DurationFlag{Name: "wait", Value: time.Minute, Usage: "how long to wait for a running task's owner to switch (0: do not wait)"},
		},
		Action: r.taskSwitchSource,
	}
}

func (r *runner) taskSwitchSource(c *cli.Context) error {
	name, a, err := r.oneTask(c)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	req, err := a.SwitchSource(ctx, name, c.String("to"), requester())
	r.record("task.switch-source", "task/"+name, map[string]string{"source": req.From}, map[string]string{"source": req.To}, err)
	if err != nil {
		return err
	}
	switch {
	case req.From == req.To:
		fmt.Fprintf(r.env.Stdout, "task %s: reads from %s already\n", name, req.To)
		return nil
	case !req.Running:
		fmt.Fprintf(r.env.Stdout, "task %s: stopped; it reads from %s (not %s) once started\n", name, req.To, req.From)
		return nil
	case c.Duration("wait") <= 0:
		fmt.Fprintf(r.env.Stdout, "task %s: asked its owner to switch from %s to %s\n", name, req.From, req.To)
		return nil
	}
	return r.awaitSwitch(a, req, c.Duration("wait"))
}

// awaitSwitch waits until the task's owner has served the request, or
// has failed, or wait passes.
func (r *runner) awaitSwitch(a *core.Admin, req core.SourceSwitchRequest, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := r.opCtx()
		ts, err := a.Task(ctx, req.Task)
		var done bool
		if err == nil {
			done, err = a.SourceSwitched(ctx, &ts, req.To)
		}
		cancel()
		if err != nil {
			return err
		}
		if done {
			fmt.Fprintf(r.env.Stdout, "task %s: switched from %s to %s\n", req.Task, req.From, req.To)
			return nil
		}
		if in, ok := ts.Owner(); ok && in.State.State == core.StateFailed {
			return fmt.Errorf("task %s: FAILED on %s: %s", req.Task, in.Name, in.State.Error)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("task %s: the switch from %s to %s is asked for but not done after %v (is a core running the task? shepherd ctl task show %s)",
				req.Task, req.From, req.To, wait, req.Task)
		}
		select {
		case <-r.ctx.Done():
			return r.ctx.Err()
		case <-tick.C:
		}
	}
}

// requester names who asks, for the record of a switch: the user and
// host running ctl.
func requester() string { return "ctl " + osUserHost() }
