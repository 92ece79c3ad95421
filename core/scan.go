package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// scan is the cold-standby loop: every scan interval, look at each task
// of the group, and take each one whose instances directory is empty —
// enter its election without waiting (TryCampaign): the candidate first
// in line runs the task, any other withdraws its node and moves on.
// A task runs here until its term ends or it is released (stopped, moved
// out of the group); the next scan, here or on another core, takes it.
func (c *Core) scan(ctx context.Context) {
	var mu sync.Mutex
	running := map[string]bool{}
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(c.cfg.ScanInterval)
	defer tick.Stop()
	log := c.log.With("group", c.cfg.Group)
	for {
		names, err := c.groupTasks(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("group scan failed; trying again next interval", "err", err)
		}
		for _, name := range names {
			mu.Lock()
			busy := running[name]
			mu.Unlock()
			if busy || ctx.Err() != nil {
				continue
			}
			if err := c.tryTake(ctx, name, func(run func()) {
				mu.Lock()
				running[name] = true
				mu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					run()
					mu.Lock()
					delete(running, name)
					mu.Unlock()
				}()
			}); err != nil && ctx.Err() == nil {
				log.Warn("cannot take a task", "task", name, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// groupTasks lists the tasks of the group, sorted.
func (c *Core) groupTasks(ctx context.Context) ([]string, error) {
	var names []string
	err := c.s.Retry(ctx, func() (err error) {
		names, _, err = c.s.Children(ctx, c.layout.Group(c.cfg.Group))
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	slices.Sort(names)
	return names, err
}

// tryTake takes the task name if it is unowned, runnable and this core
// comes first, and then calls start with the function that runs it.
func (c *Core) tryTake(ctx context.Context, name string, start func(run func())) error {
	dir := c.layout.GroupInstances(c.cfg.Group, name)
	var kids []string
	err := c.s.Retry(ctx, func() (err error) {
		kids, _, err = c.s.Children(ctx, dir)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
	case err != nil:
		return err
	case len(kids) > 0:
		return nil // owned, or being taken
	}
	// A stopped, misfiled or untrusted task is not worth an election.
	data, _, err := c.s.Get(ctx, c.layout.Task(name))
	if err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	for _, p := range []string{c.layout.Task(name), c.layout.GroupTask(c.cfg.Group, name)} {
		if err := c.checkTrusted(ctx, p); err != nil {
			return err
		}
	}
	sp, err := decodeStoredSpec(name, data)
	if err != nil {
		return err
	}
	if sp.State == DesiredStopped {
		return nil
	}
	if sp.Standby.Mode != ModeCold || sp.Standby.Group != c.cfg.Group {
		return fmt.Errorf("%w: the spec of %q says standby %s %s, not cold in group %s; remove it from the group or fix the spec",
			ErrBadConfig, name, sp.Standby.Mode, sp.Standby.Group, c.cfg.Group)
	}
	e := c.election(dir)
	ok, err := e.TryCampaign(ctx)
	if err != nil || !ok {
		return err
	}
	t, err := c.newTaskRun(ctx, name, true)
	if err != nil {
		_ = e.Resign()
		return err
	}
	start(func() {
		defer t.close()
		defer c.metrics.setState(name, "")
		err := e.Serve(ctx, t.lead)
		if rerr := e.Resign(); rerr != nil {
			t.log.Warn("instance node not deleted; it goes with the session", "err", rerr)
		}
		switch {
		case ctx.Err() != nil:
			t.log.Info("handed the task back to the group")
		case errors.Is(err, errRelease):
		case err != nil:
			if errors.Is(err, ErrFenced) {
				c.metrics.fenced.WithLabelValues(name).Inc()
			}
			t.log.Warn("instance term ended; the group's next scan takes the task", "err", err)
		default:
			t.log.Warn("instance term lost; the group's next scan takes the task")
		}
	})
	return nil
}
