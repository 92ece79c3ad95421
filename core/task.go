package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// taskRun is one task this core takes part in, with a live copy of its
// spec. Its lead method runs the task whenever this core's instance owns
// it; everything else about the task (its election) belongs to the hot
// or cold loop that created it.
type taskRun struct {
	c    *Core
	name string
	cold bool // owned through a group scan: give it up rather than pause it
	log  *slog.Logger
	spec *recipe.Value
	// switchReq follows the task's switchSource request node.
	switchReq *recipe.Value
}

// specKey identifies one version of a spec node: changing, deleting or
// recreating it changes the key.
type specKey struct{ czxid, mzxid int64 }

func (c *Core) newTaskRun(ctx context.Context, name string, cold bool) (*taskRun, error) {
	v, err := recipe.WatchValue(ctx, c.s, c.layout.Task(name))
	if err != nil {
		return nil, fmt.Errorf("core: task %q: watch spec: %w", name, err)
	}
	req, err := recipe.WatchValue(ctx, c.s, c.layout.SwitchSource(name))
	if err != nil {
		v.Close()
		return nil, fmt.Errorf("core: task %q: watch switchSource: %w", name, err)
	}
	return &taskRun{c: c, name: name, cold: cold, log: c.log.With("task", name), spec: v, switchReq: req}, nil
}

func (t *taskRun) close() {
	t.spec.Close()
	t.switchReq.Close()
}

func (t *taskRun) specKey() specKey {
	_, st, _ := t.spec.Get()
	return specKey{st.Czxid, st.Mzxid}
}

// loadSpec returns the current spec and its key, or why it cannot run:
// missing, malformed, or untrusted (recipe.ErrUntrusted: a session
// without this core's identity could have written it).
func (t *taskRun) loadSpec(ctx context.Context) (*Spec, specKey, error) {
	data, st, exists := t.spec.Get()
	key := specKey{st.Czxid, st.Mzxid}
	if !exists {
		return nil, key, fmt.Errorf("%w: %s does not exist: add the task with shepherd ctl task add -f task.yaml", ErrNoSpec, t.c.layout.Task(t.name))
	}
	sp, err := decodeStoredSpec(t.name, data)
	if err != nil {
		return nil, key, err
	}
	if err := t.c.checkTrusted(ctx, t.c.layout.Task(t.name)); err != nil {
		return nil, key, err
	}
	return sp, key, nil
}

// waitSpecChange waits until the spec's key differs from key. It returns
// ctx's error if ctx ends first.
func (t *taskRun) waitSpecChange(ctx context.Context, key specKey) error {
	for {
		if t.specKey() != key {
			return nil
		}
		select {
		case _, ok := <-t.spec.Changes():
			if !ok {
				<-ctx.Done() // the watcher stopped: the core is stopping
				return ctx.Err()
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sleep waits d, returning errSpecChanged early if the spec changes, or
// ctx's error.
func (t *taskRun) sleep(ctx context.Context, d time.Duration, key specKey) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-t.spec.Changes():
			if !ok {
				<-ctx.Done() // the watcher stopped: the core is stopping
				return ctx.Err()
			}
			if t.specKey() != key {
				return errSpecChanged
			}
		}
	}
}

// lead runs the task for as long as this instance leads without
// interruption: Election.Serve calls it at the start of a term and again
// after each suspension the term survives. It returns nil when ctx ends
// (the connection lost, the core stopping), ErrFenced when a newer
// instance has taken over, and errRelease when a cold-standby instance
// gives the task up.
func (t *taskRun) lead(ctx context.Context, e *recipe.Election) error {
	tm := t.newTerm(e)
	t.log.Info("instance owns the task", "node", tm.owner, "epoch", tm.epoch)
	for ctx.Err() == nil {
		sp, key, err := t.loadSpec(ctx)
		if err == nil {
			err = t.fitsMode(sp)
		}
		switch {
		case err != nil && t.cold:
			t.log.Warn("giving the task up", "err", err)
			return errRelease
		case err != nil:
			if err := t.hold(ctx, tm, key, StateFailed, err); err != nil {
				return err
			}
			continue
		case sp.State == DesiredStopped && t.cold:
			t.log.Info("task stopped: giving it up")
			return errRelease
		case sp.State == DesiredStopped:
			if err := t.hold(ctx, tm, key, StatePaused, nil); err != nil {
				return err
			}
			continue
		}
		err = tm.run(ctx, sp, key)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errSpecChanged):
			t.log.Info("task spec changed: restarting")
		case errors.Is(err, ErrFenced):
			return err
		default: // ErrNonRetryable: stay the owner, so no one else retries
			if err := t.hold(ctx, tm, key, StateFailed, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// hold keeps the task without running it — PAUSED, or FAILED with cause
// — until its spec changes; or, when the cause is an untrusted spec, at
// most untrustedRecheck: securing its ACL (shepherd ctl secure) changes
// no data and fires no watch. It returns nil then, and otherwise what
// lead should return.
func (t *taskRun) hold(ctx context.Context, tm *term, key specKey, state string, cause error) error {
	msg := ""
	if cause != nil {
		msg = cause.Error()
		t.log.Error("task "+state, "err", cause)
	} else {
		t.log.Info("task " + state)
	}
	if err := tm.pub.set(ctx, func(st *InstanceState) {
		st.State, st.Error, st.RetryAt, st.RowsPerSecond = state, msg, nil, 0
		st.Position = tm.position()
	}); errors.Is(err, ErrFenced) {
		return err
	}
	if errors.Is(cause, recipe.ErrUntrusted) || errors.Is(cause, errTrustUnknown) {
		_ = t.sleep(ctx, untrustedRecheck, key) // or ctx ended: lead sees it
		return nil
	}
	_ = t.waitSpecChange(ctx, key) // or ctx ended: lead sees it
	return nil
}

// untrustedRecheck is how often a core holding a task FAILED for an
// untrusted spec (or a trust check that failed) checks its ACL again.
const untrustedRecheck = 5 * time.Second

// fitsMode checks that this core may run sp the way it was asked to.
func (t *taskRun) fitsMode(sp *Spec) error {
	switch {
	case t.cold && sp.Standby.Mode != ModeCold:
		return fmt.Errorf("%w: task %q is now a %s-standby task", ErrBadConfig, t.name, sp.Standby.Mode)
	case t.cold && sp.Standby.Group != t.c.cfg.Group:
		return fmt.Errorf("%w: task %q moved to group %q", ErrBadConfig, t.name, sp.Standby.Group)
	case !t.cold && sp.Standby.Mode == ModeCold:
		return fmt.Errorf("%w: task %q is a cold-standby task of group %q: run its cores with --group %s, not --task",
			ErrBadConfig, t.name, sp.Standby.Group, sp.Standby.Group)
	}
	return nil
}
