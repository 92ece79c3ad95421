package ctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

func (r *runner) lockCommand() *cli.Command {
	return &cli.Command{
		Name:      "lock",
		Usage:     "run a command while holding an exclusive lock",
		ArgsUsage: "[--wait duration] path -- command [args…]",
		Description: `Takes the lock at path (the herd-free lock of coord/recipe, Curator's
InterProcessMutex layout), runs the command, and releases the lock when it ends; ctl
exits with the command's status. SIGINT and SIGTERM are forwarded to the command. If
the lock is lost while the command runs (session expired, lock node deleted), the
command is killed and ctl exits 75. The command sees SHEPHERD_LOCK_PATH and
SHEPHERD_LOCK_NODE (the lock node, for fencing writes) in its environment.`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "wait", Usage: "give up (exit 1) if the lock is not acquired within this long (0: wait forever)"},
		},
		Action: r.lock,
	}
}

func (r *runner) lock(c *cli.Context) error {
	p, argv, err := heldArgs(c)
	if err != nil {
		return err
	}
	wait := c.Duration("wait")
	if wait < 0 {
		return usagef("lock: --wait %v: want a positive duration, or 0 to wait forever", wait)
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	what := "lock " + p
	m := recipe.NewMutex(s, p, recipe.WithNodeData([]byte(holderID())))
	ctx, cancel := r.waitCtx(wait)
	err = m.Lock(ctx)
	cancel()
	if err != nil {
		return r.acquireError(what, p, wait, err)
	}
	runErr := r.runHeld(what, m.Lost(), argv, []string{"SHEPHERD_LOCK_PATH=" + p, "SHEPHERD_LOCK_NODE=" + m.Node()})
	if err := m.Unlock(); err != nil && !isLost(runErr) {
		// The command ended while the lock was held (runHeld checked);
		// only the release failed. The node goes with the session, which
		// ends now.
		r.warn("%s: release: %v", what, err)
	}
	return runErr
}

// isLost reports whether err is runHeld's report of a lost hold.
func isLost(err error) bool {
	var ee *exitError
	return errors.As(err, &ee) && ee.code == ExitLost
}

// waitCtx bounds a wait for a lock or leadership by --wait (0: none).
func (r *runner) waitCtx(wait time.Duration) (context.Context, context.CancelFunc) {
	if wait == 0 {
		return context.WithCancel(r.ctx)
	}
	return context.WithTimeout(r.ctx, wait)
}

// acquireError words the failure to take a lock or leadership at p.
func (r *runner) acquireError(what, p string, wait time.Duration, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded) && r.ctx.Err() == nil:
		return fmt.Errorf("%s: not acquired within %v (--wait)", what, wait)
	case errors.Is(err, context.Canceled):
		return err
	}
	return fmt.Errorf("%s: %w", what, onPath(p, err))
}
