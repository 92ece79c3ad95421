package core

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// scan is the cold-standby loop: every scan interval, look at each task
// of the group, and take each unowned one this core should run (see
// balance.go) — enter its election without waiting (TryCampaign): the
// candidate first in line runs the task, any other withdraws its node
// and moves on. A task runs here until its term ends, it is released
// (stopped, moved out of the group) or handed over for balance; the next
// scan, here or on another core, takes it.
func (c *Core) scan(ctx context.Context) {
	cs := &coldScan{c: c, log: c.log.With("group", c.cfg.Group), running: map[string]*coldTask{},
		members: newMemberTracker(c.grace()), unowned: map[string]time.Time{}, moves: map[string]Move{},
		since: time.Now().UTC()}
	defer cs.wg.Wait()
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		cs.join(ctx)
	}()
	tick := time.NewTicker(c.cfg.ScanInterval)
	defer tick.Stop()
	for {
		cs.once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// coldTask is a task this core runs through the group.
type coldTask struct {
	heldTask
	stop      context.CancelCauseFunc // ends the term with a hand-over cause
	releasing bool
}

// coldScan is the state of a core's group scan.
type coldScan struct {
	c   *Core
	log *slog.Logger
	wg  sync.WaitGroup // the tasks' goroutines and join

	mu      sync.Mutex
	running map[string]*coldTask
	member  *recipe.Membership // nil until joined
	// Only the scan goroutine uses these.
	members  *memberTracker
	unowned  map[string]time.Time // countable tasks left unowned, since when
	moves    map[string]Move      // hand-overs started and not yet seen done
	moveData []byte               // the member data last written
	since    time.Time            // when the scan started: the member's Since
}

// once is one scan.
func (cs *coldScan) once(ctx context.Context) {
	c := cs.c
	names, err := c.groupTasks(ctx)
	var v *groupView
	if err == nil {
		v, err = cs.survey(ctx, names)
	}
	if err != nil {
		if ctx.Err() == nil {
			cs.log.Warn("group scan failed; trying again next interval", "err", err)
		}
		return
	}
	if c.cfg.BalanceMoves > 0 {
		cs.release(ctx, v)
	}
	now := time.Now()
	unowned := map[string]time.Time{}
	for _, t := range v.tasks {
		if t.owner != "" || ctx.Err() != nil {
			continue
		}
		cs.mu.Lock()
		_, busy := cs.running[t.name]
		cs.mu.Unlock()
		if busy {
			continue
		}
		// Left to a core below its share, a task it has not taken within
		// two scan intervals (it had a whole scan since) is taken anyway.
		since, seen := cs.unowned[t.name]
		waited := seen && now.Sub(since) >= waitedScans*c.cfg.ScanInterval
		if c.cfg.BalanceMoves > 0 && !v.mayTake(t, waited) {
			if t.countable {
				unowned[t.name] = cmp.Or(since, now)
			}
			continue
		}
		if cs.take(ctx, t.name, waited) {
			v.took(t)
		}
	}
	cs.unowned = unowned
	cs.publishMoves(ctx, v)
}

// waitedScans is how many scan intervals a task may wait for the core
// below its share before any core takes it.
const waitedScans = 2

// take tries to take the unowned task name, and runs it if it gets it.
func (cs *coldScan) take(ctx context.Context, name string, forced bool) bool {
	tctx, stop := context.WithCancelCause(ctx)
	taken := false
	err := cs.c.tryTake(tctx, name, func(run func()) {
		taken = true
		cs.mu.Lock()
		cs.running[name] = &coldTask{heldTask: heldTask{since: time.Now(), forced: forced}, stop: stop}
		cs.mu.Unlock()
		cs.wg.Add(1)
		go func() {
			defer cs.wg.Done()
			defer stop(nil)
			run()
			cs.mu.Lock()
			delete(cs.running, name)
			cs.mu.Unlock()
			if ctx.Err() != nil && !errors.Is(context.Cause(tctx), errHandOver) {
				cs.c.metrics.handovers.WithLabelValues(MoveShutdown).Inc()
			}
		}()
	})
	if !taken {
		stop(nil)
	}
	if err != nil && ctx.Err() == nil {
		cs.log.Warn("cannot take a task", "task", name, "err", err)
	}
	return taken
}

// release hands over what the balance rule says this core should: each
// hand-over is the clean stop of SIGTERM (the replicator stops at a
// transaction boundary, lastCommit is written, the instance node goes).
func (cs *coldScan) release(ctx context.Context, v *groupView) {
	c := cs.c
	cs.mu.Lock()
	held := make(map[string]heldTask, len(cs.running))
	busy := false
	for name, t := range cs.running {
		held[name] = t.heldTask
		busy = busy || t.releasing
	}
	cs.mu.Unlock()
	if busy {
		// A hand-over is still stopping: the picture still counts it
		// here, as the other cores see it; decide again next scan.
		return
	}
	for _, r := range v.releases(c.cfg.BalanceMoves, held) {
		cs.mu.Lock()
		t, ok := cs.running[r.task]
		if ok {
			t.releasing = true
		}
		cs.mu.Unlock()
		if !ok {
			continue
		}
		share := v.target[v.me]
		cs.log.Info("handing a task over", "task", r.task, "from", c.cfg.Host, "to", r.to, "reason", r.reason,
			"share", share, "load", v.load[v.me])
		c.metrics.handovers.WithLabelValues(r.reason).Inc()
		cs.moves[r.task] = Move{Task: r.task, From: c.cfg.Host, To: r.to, Reason: r.reason, Share: share, Since: time.Now().UTC()}
		t.stop(fmt.Errorf("%w: %s to %s", errHandOver, r.reason, r.to))
	}
}

// errHandOver is the cause of a term ended to hand the task over.
var errHandOver = errors.New("core: handing the task over")

// maxMoveScans is how many scans a hand-over shows in the member node
// before it is dropped though nobody took the task (the receiver went).
const maxMoveScans = 10

// publishMoves drops the hand-overs that are done (the task owned by
// another core, or too old) and writes those left to the member node,
// for ctl task group to show.
func (cs *coldScan) publishMoves(ctx context.Context, v *groupView) {
	owners := map[string]string{}
	for _, t := range v.tasks {
		owners[t.name] = t.owner
	}
	for name, m := range cs.moves {
		if o := owners[name]; (o != "" && o != v.me) || time.Since(m.Since) > maxMoveScans*cs.c.cfg.ScanInterval {
			delete(cs.moves, name)
		}
	}
	cs.mu.Lock()
	member := cs.member
	cs.mu.Unlock()
	if member == nil {
		return
	}
	moves := slices.SortedFunc(maps.Values(cs.moves), func(a, b Move) int { return strings.Compare(a.Task, b.Task) })
	data := cs.memberData(moves)
	if bytes.Equal(data, cs.moveData) {
		return
	}
	if _, err := cs.c.s.Set(ctx, member.Path(), data, -1); err != nil {
		if ctx.Err() == nil {
			cs.log.Warn("moves in progress not published", "err", err)
		}
		return
	}
	cs.moveData = data
}

// memberData is this core's member node data, with the moves in progress.
func (cs *coldScan) memberData(moves []Move) []byte {
	m := CoreMember{Version: docVersion, Host: cs.c.cfg.Host, Capacity: cs.c.cfg.Capacity, Since: cs.since, Moves: moves}
	return m.Marshal()
}

// join registers this core as a member of its group, retrying until ctx
// ends, and leaves when ctx ends. A node of the same host left by this
// core's previous session (a restart within the session timeout) is
// waited for: meanwhile the others see the host as present all along.
func (cs *coldScan) join(ctx context.Context) {
	c := cs.c
	dir := c.layout.Cores(c.cfg.Group)
	var m *recipe.Membership
	for failures := 1; ctx.Err() == nil; failures++ {
		var err error
		if m, err = recipe.Join(ctx, c.s, dir, c.cfg.Host, cs.memberData(nil)); err == nil {
			break
		}
		if ctx.Err() != nil || errors.Is(err, recipe.ErrClosed) {
			return
		}
		cs.log.Warn("cannot register as a member of the group; retrying", "err", err)
		c.pause(ctx, failures)
	}
	if m == nil {
		return
	}
	cs.mu.Lock()
	cs.member = m
	cs.mu.Unlock()
	<-ctx.Done()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
	defer cancel()
	if err := m.Leave(lctx); err != nil && !errors.Is(err, recipe.ErrClosed) {
		cs.log.Warn("member node not deleted; it goes with the session", "err", err)
	}
}

// survey reads the group's members and who owns each task.
func (cs *coldScan) survey(ctx context.Context, names []string) (*groupView, error) {
	c := cs.c
	ms, err := recipe.Members(ctx, c.s, c.layout.Cores(c.cfg.Group))
	if err != nil {
		return nil, err
	}
	capacity := map[string]int{}
	for _, m := range ms {
		cm, err := ParseCoreMember(m.Data)
		if err != nil {
			cs.log.Warn("member node unreadable; counting it with capacity 1", "member", m.Name, "err", err)
		}
		capacity[m.Name] = max(cm.Capacity, 1)
	}
	counted, present := cs.members.update(time.Now(), c.cfg.Host, capacity)
	tasks := make([]groupTask, 0, len(names))
	for _, name := range names {
		t, err := readGroupTask(ctx, c.s, c.layout, c.cfg.Group, name)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return newGroupView(c.cfg.Host, counted, present, tasks), nil
}

// readGroupTask reads who owns the task name of group and whether it
// counts towards the shares.
func readGroupTask(ctx context.Context, s *recipe.Session, l Layout, group, name string) (groupTask, error) {
	t := groupTask{name: name}
	dir := l.GroupInstances(group, name)
	kids, _, err := s.Retrying().Children(ctx, dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return t, fmt.Errorf("task %q: list instances: %w", name, err)
	}
	var st InstanceState
	if len(kids) > 0 {
		slices.SortFunc(kids, func(x, y string) int { return seqOf(x) - seqOf(y) })
		first := kids[0]
		t.owner = first[:max(strings.LastIndexByte(first, '-'), 0)]
		data, _, err := s.Retrying().Get(ctx, dir+"/"+first)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			t.owner = "" // gone as we looked
		case err != nil:
			return t, fmt.Errorf("task %q: read instance %s: %w", name, first, err)
		default:
			st, _ = ParseInstanceState(data)
		}
	}
	var data []byte
	data, _, err = s.Retrying().Get(ctx, l.Task(name))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return t, fmt.Errorf("task %q: read spec: %w", name, err)
	}
	if sp, err := decodeStoredSpec(name, data); err == nil {
		t.preferred = sp.Standby.PreferredCores
		t.countable = sp.State == DesiredRunning && sp.Standby.Mode == ModeCold && sp.Standby.Group == group &&
			st.State != StateFailed
	}
	return t, nil
}

// groupTasks lists the tasks of the group, sorted.
func (c *Core) groupTasks(ctx context.Context) ([]string, error) {
	names, _, err := c.s.Retrying().Children(ctx, c.layout.Group(c.cfg.Group))
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
	kids, _, err := c.s.Retrying().Children(ctx, dir)
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
