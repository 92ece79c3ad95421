package core

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

func TestFairShares(t *testing.T) {
	for _, tc := range []struct {
		capacity, load map[string]int
		total          int
		want           map[string]int
	}{
		{map[string]int{"a": 1, "b": 1, "c": 1}, nil, 12, map[string]int{"a": 4, "b": 4, "c": 4}},
		// The remainder goes to those holding most: nothing moves to
		// fix a tie.
		{map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}, map[string]int{"a": 4, "b": 3, "c": 3}, 10,
			map[string]int{"a": 3, "b": 3, "c": 2, "d": 2}},
		{map[string]int{"a": 2, "b": 1}, nil, 7, map[string]int{"a": 5, "b": 2}},
		{map[string]int{"a": 1}, nil, 0, map[string]int{"a": 0}},
		{map[string]int{}, nil, 5, map[string]int{}},
	} {
		if got := fairShares(tc.capacity, tc.load, tc.total); !maps.Equal(got, tc.want) {
			t.Errorf("fairShares(%v, %v, %d) = %v; want %v", tc.capacity, tc.load, tc.total, got, tc.want)
		}
	}
}

// owned returns n countable tasks named prefix0.. owned by owner.
func owned(prefix, owner string, n int) []groupTask {
	var ts []groupTask
	for i := range n {
		ts = append(ts, groupTask{name: fmt.Sprintf("%s%d", prefix, i), owner: owner, countable: true})
	}
	return ts
}

func liveAll(hosts ...string) (map[string]int, map[string]bool) {
	c, p := map[string]int{}, map[string]bool{}
	for _, h := range hosts {
		c[h], p[h] = 1, true
	}
	return c, p
}

// TestBalanceDecisions: from one picture, the over-loaded cores together
// release exactly the live deficit, and the cores decide takes as the
// rule says.
func TestBalanceDecisions(t *testing.T) {
	counted, present := liveAll("a", "b", "c", "d")
	tasks := slices.Concat(owned("a", "a", 4), owned("b", "b", 4), owned("c", "c", 4))
	released := 0
	for _, me := range []string{"a", "b", "c", "d"} {
		v := newGroupView(me, counted, present, tasks)
		rs := v.releases(5, map[string]heldTask{})
		for _, r := range rs {
			if r.reason != MoveBalance || r.to != "d" {
				t.Errorf("%s: release %+v; want balance to d", me, r)
			}
		}
		released += len(rs)
	}
	if released != 3 {
		t.Errorf("4/4/4/0: %d released in all; want 3", released)
	}

	// 4/3/3/0 of 10: two moves, from the cores the targets name.
	tasks = slices.Concat(owned("a", "a", 4), owned("b", "b", 3), owned("c", "c", 3))
	got := map[string]int{}
	for _, me := range []string{"a", "b", "c", "d"} {
		got[me] = len(newGroupView(me, counted, present, tasks).releases(5, nil))
	}
	if want := map[string]int{"a": 1, "b": 0, "c": 1, "d": 0}; !maps.Equal(got, want) {
		t.Errorf("4/3/3/0: releases %v; want %v", got, want)
	}

	// Rate: at most limit per scan.
	if rs := newGroupView("a", counted, present, slices.Concat(owned("a", "a", 12))).releases(1, nil); len(rs) != 1 {
		t.Errorf("12/0/0/0 with limit 1: %d released; want 1", len(rs))
	}

	// A task waiting unowned fills part of the deficit: one move less.
	tasks = slices.Concat(owned("a", "a", 4), owned("b", "b", 4), owned("c", "c", 3), owned("u", "", 1))
	released = 0
	for _, me := range []string{"a", "b", "c", "d"} {
		released += len(newGroupView(me, counted, present, tasks).releases(5, nil))
	}
	if released != 2 {
		t.Errorf("4/4/3/0 and an unowned task: %d released; want 2", released)
	}

	// Takes: at share, no take while a live core is below its own; a
	// core gone but counted (grace) is no reason to wait; a task that
	// waited a scan is taken anyway.
	u := groupTask{name: "u", countable: true}
	tasks = slices.Concat(owned("a", "a", 3), owned("b", "b", 3), owned("c", "c", 2), []groupTask{u})
	if v := newGroupView("a", counted, present, tasks); v.mayTake(u, false) || !v.mayTake(u, true) {
		t.Errorf("a at share, d below: mayTake %v, after waiting %v; want false, true", v.mayTake(u, false), v.mayTake(u, true))
	}
	if v := newGroupView("d", counted, present, tasks); !v.mayTake(u, false) {
		t.Error("d below its share may not take")
	}
	gone := map[string]bool{"a": true, "b": true, "c": true}
	tasks = slices.Concat(owned("a", "a", 3), owned("b", "b", 3), owned("c", "c", 3), []groupTask{u, u, u})
	v := newGroupView("a", counted, gone, tasks)
	if !v.mayTake(u, false) {
		t.Error("d gone (within grace): a may not take its tasks")
	}
	// At its share, one per scan: the others take the rest.
	v.took(u)
	if v.mayTake(u, false) || !v.mayTake(u, true) {
		t.Errorf("a at share took one: mayTake %v, after waiting %v; want false, true", v.mayTake(u, false), v.mayTake(u, true))
	}

	// Pinning: the preferred core takes it, others leave it to it, a
	// non-preferred owner hands it over, a preferred owner keeps it.
	p := groupTask{name: "p", countable: true, preferred: []string{"d"}}
	tasks = slices.Concat(owned("a", "a", 3), owned("b", "b", 3), owned("c", "c", 3), owned("d", "d", 3), []groupTask{p})
	if v := newGroupView("a", counted, present, tasks); v.mayTake(p, false) {
		t.Error("a takes a task pinned to live d")
	}
	if v := newGroupView("d", counted, present, tasks); !v.mayTake(p, false) {
		t.Error("d may not take a task pinned to it")
	}
	p.owner = "a"
	tasks[len(tasks)-1] = p
	if rs := newGroupView("a", counted, present, tasks).releases(1, nil); len(rs) != 1 || rs[0] != (release{"p", "d", MovePinned}) {
		t.Errorf("a owning a task pinned to d: releases %v", rs)
	}
	if rs := newGroupView("a", counted, present, tasks).releases(1, map[string]heldTask{"p": {forced: true}}); len(rs) != 0 {
		t.Errorf("a forced to take a task pinned to d: releases %v; want none", rs)
	}
	p.owner, p.preferred = "d", []string{"d"}
	tasks = slices.Concat(owned("d", "d", 6), []groupTask{p}, owned("a", "a", 1))
	for _, r := range newGroupView("d", counted, present, tasks).releases(10, nil) {
		if r.task == "p" {
			t.Error("d released a task pinned to it")
		}
	}
}

func TestMemberTracker(t *testing.T) {
	mt := newMemberTracker(time.Second)
	t0 := time.Unix(1000, 0)
	c, _ := mt.update(t0, "me", map[string]int{"a": 1, "me": 1})
	if !maps.Equal(c, map[string]int{"me": 1}) {
		t.Errorf("first scan: counted %v; want only the scanning core itself", c)
	}
	if c, _ = mt.update(t0.Add(100*time.Millisecond), "me", map[string]int{"a": 2, "me": 1}); !maps.Equal(c, map[string]int{"a": 2, "me": 1}) {
		t.Errorf("after one scan: %v; want a:2 me:1", c)
	}
	c, p := mt.update(t0.Add(600*time.Millisecond), "me", map[string]int{"me": 1})
	if !maps.Equal(c, map[string]int{"a": 2, "me": 1}) || p["a"] {
		t.Errorf("gone within grace: counted %v present %v; want a counted, absent", c, p)
	}
	if c, _ = mt.update(t0.Add(700*time.Millisecond), "me", map[string]int{"a": 2, "me": 1}); !maps.Equal(c, map[string]int{"a": 2, "me": 1}) {
		t.Errorf("back within grace: %v; want a counted at once", c)
	}
	if c, _ = mt.update(t0.Add(2*time.Second), "me", map[string]int{"me": 1}); !maps.Equal(c, map[string]int{"me": 1}) {
		t.Errorf("gone past grace: %v; want only me", c)
	}
}

// balanceGroup is a cold group of MemEngine tasks and its cores, with
// the helpers of the balancing tests.
type balanceGroup struct {
	t       testing.TB
	connect string
	a       *Admin
	tasks   []string
	fleet   memFleet
	cores   map[string]*runningCore
	regs    map[string]*prometheus.Registry
	scan    time.Duration
}

func newBalanceGroup(t testing.TB, tg *target, n int, scan time.Duration) *balanceGroup {
	connect := chrootOf(t, tg)
	g := &balanceGroup{t: t, connect: connect, a: NewAdmin(dial(t, connect, testSessionTimeout), ""),
		fleet: memFleet{}, cores: map[string]*runningCore{}, regs: map[string]*prometheus.Registry{}, scan: scan}
	for i := range n {
		name := fmt.Sprintf("t%02d", i)
		mustAdd(t, g.a, coldSpec(name, "g1"))
		g.fleet[name] = NewMemEngine(200)
		g.tasks = append(g.tasks, name)
	}
	return g
}

func (g *balanceGroup) start(host string) {
	reg := prometheus.NewRegistry()
	g.regs[host] = reg
	g.cores[host] = startCore(g.t, g.connect, host, g.fleet, func(c *Config) {
		c.Group, c.ScanInterval, c.Registerer = "g1", g.scan, reg
	})
}

// spread returns the tasks per core; it fails (error) while a task is
// unowned or not RUNNING.
func (g *balanceGroup) spread() (map[string]int, error) {
	owners, err := groupOwners(g.a, g.tasks)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, h := range owners {
		out[h]++
	}
	return out, nil
}

// waitSpread waits until every task runs and the counts per core are want.
func (g *balanceGroup) waitSpread(want map[string]int) {
	g.t.Helper()
	coordtest.WaitFor(g.t, 60*time.Second, fmt.Sprintf("spread %v", want), func() error {
		got, err := g.spread()
		if err != nil {
			return err
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("spread %v", got)
		}
		return nil
	})
}

// waitEven waits until every task runs on the cores hosts, no two of
// them more than one task apart.
func (g *balanceGroup) waitEven(hosts ...string) map[string]int {
	g.t.Helper()
	var got map[string]int
	coordtest.WaitFor(g.t, 60*time.Second, fmt.Sprintf("an even spread over %v", hosts), func() (err error) {
		if got, err = g.spread(); err != nil {
			return err
		}
		lo, hi := len(g.tasks), 0
		for _, h := range hosts {
			lo, hi = min(lo, got[h]), max(hi, got[h])
		}
		if len(got) != len(hosts) || hi-lo > 1 {
			return fmt.Errorf("spread %v", got)
		}
		return nil
	})
	return got
}

// handovers sums the cores' hand-overs for reason.
func (g *balanceGroup) handovers(reason string) int {
	n := 0.0
	for _, reg := range g.regs {
		n += metricValue(g.t, reg, "shepherd_core_handovers_total", map[string]string{"reason": reason})
	}
	return int(n)
}

// steadyLoad adds n events to every task's source every period, until
// the returned function is called.
func (g *balanceGroup) steadyLoad(period time.Duration, n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				for _, eng := range g.fleet {
					eng.AddEvents(n)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// owners returns the owner of every task.
func (g *balanceGroup) owners() map[string]string {
	g.t.Helper()
	o, err := groupOwners(g.a, g.tasks)
	if err != nil {
		g.t.Fatal(err)
	}
	return o
}

// TestColdBalanceJoin: 12 tasks on 3 cores spread 4/4/4; a fourth core
// joining takes exactly 3, one from each.
func TestColdBalanceJoin(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		g := newBalanceGroup(t, tg, 12, 300*time.Millisecond)
		for _, h := range []string{"h1", "h2", "h3"} {
			g.start(h)
		}
		g.waitSpread(map[string]int{"h1": 4, "h2": 4, "h3": 4})
		before, moves := g.owners(), g.handovers(MoveBalance)
		g.start("h4")
		g.waitSpread(map[string]int{"h1": 3, "h2": 3, "h3": 3, "h4": 3})
		after := g.owners()
		changed := 0
		for name := range before {
			if before[name] != after[name] {
				changed++
			}
		}
		if n := g.handovers(MoveBalance) - moves; n != 3 || changed != 3 {
			t.Errorf("the join: %d hand-overs, %d tasks changed owner; want 3 and 3", n, changed)
		}
		gs, err := g.a.Group(context.Background(), "g1")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range gs.Cores {
			if len(c.Tasks) != 3 || c.Share != 3 {
				t.Errorf("group view: core %s has %v, share %d; want 3 tasks, share 3", c.Host, c.Tasks, c.Share)
			}
		}
		if gs.Tasks != 12 || len(gs.Cores) != 4 || len(gs.Unowned) != 0 {
			t.Errorf("group view: %d tasks, %d cores, unowned %v; want 12, 4, none", gs.Tasks, len(gs.Cores), gs.Unowned)
		}
	})
}

// TestColdBalanceCrash: when one of four cores dies, its tasks go to the
// others, which end within one task of even.
func TestColdBalanceCrash(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		g := newBalanceGroup(t, tg, 12, 200*time.Millisecond)
		for _, h := range []string{"h1", "h2", "h3", "h4"} {
			g.start(h)
		}
		g.waitSpread(map[string]int{"h1": 3, "h2": 3, "h3": 3, "h4": 3})
		for _, eng := range g.fleet {
			eng.kill(t, "h2-")
		}
		g.cores["h2"].crash()
		g.waitEven("h1", "h3", "h4")
		for name, eng := range g.fleet {
			eng.AddEvents(50)
			waitApplied(t, eng, 30*time.Second)
			if maxRunning, _, _, _ := eng.stats(); maxRunning != 1 {
				t.Errorf("%s: %d instances applied at once; want 1", name, maxRunning)
			}
		}
	})
}

// ownershipSampler reads tasks' instance nodes continuously and records
// any moment at which a task had two RUNNING instances.
type ownershipSampler struct {
	mu         sync.Mutex
	violations []string
	samples    int
	cancel     context.CancelFunc
	done       chan struct{}
}

// sampleGroupOwnership samples the cold tasks of group.
func sampleGroupOwnership(t testing.TB, s *recipe.Session, group string, tasks []string) *ownershipSampler {
	a := NewAdmin(s, "")
	dirs := make([]string, len(tasks))
	for i, name := range tasks {
		dirs[i] = a.layout.GroupInstances(group, name)
	}
	return sampleOwnership(t, a, dirs)
}

// sampleOwnership samples the instance directories dirs (Layout.Instances
// or Layout.GroupInstances) until the test ends or stop is called.
func sampleOwnership(t testing.TB, a *Admin, dirs []string) *ownershipSampler {
	ctx, cancel := context.WithCancel(context.Background())
	o := &ownershipSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for ctx.Err() == nil {
			for _, dir := range dirs {
				ins, err := a.instances(ctx, dir)
				if err != nil {
					continue
				}
				var running []string
				for _, in := range ins {
					if in.State.State == StateRunning {
						running = append(running, in.Name)
					}
				}
				o.mu.Lock()
				o.samples++
				if len(running) > 1 && len(o.violations) < 10 {
					o.violations = append(o.violations, fmt.Sprintf("%s RUNNING on %v", dir, running))
				}
				o.mu.Unlock()
			}
		}
	}()
	t.Cleanup(o.stop)
	return o
}

// stop ends the sampling.
func (o *ownershipSampler) stop() {
	o.cancel()
	<-o.done
}

// check fails the test if a task was ever seen RUNNING twice, and logs how
// many samples were taken.
func (o *ownershipSampler) check(t testing.TB) {
	t.Helper()
	o.stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.violations) > 0 {
		t.Errorf("a task owned twice at once: %v", o.violations)
	}
	t.Logf("%d ownership samples", o.samples)
}

// TestColdBalanceRollingRestart: every core of a loaded group is
// restarted in turn (SIGTERM, then started again): no task is ever
// RUNNING twice, the group ends even, and every target holds each event
// exactly once.
func TestColdBalanceRollingRestart(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		g := newBalanceGroup(t, tg, 12, 200*time.Millisecond)
		hosts := []string{"h1", "h2", "h3"}
		for _, h := range hosts {
			g.start(h)
		}
		g.waitSpread(map[string]int{"h1": 4, "h2": 4, "h3": 4})
		sampler := sampleGroupOwnership(t, dial(t, g.connect, testSessionTimeout), "g1", g.tasks)
		stopLoad := g.steadyLoad(50*time.Millisecond, 20)
		for _, h := range hosts {
			g.cores[h].stop()
			others := slices.DeleteFunc(slices.Clone(hosts), func(x string) bool { return x == h })
			coordtest.WaitFor(t, 60*time.Second, h+"'s tasks to move to "+strings.Join(others, ", "), func() error {
				got, err := g.spread()
				if err == nil && got[h] > 0 {
					err = fmt.Errorf("spread %v", got)
				}
				return err
			})
			g.start(h)
			g.waitEven(hosts...)
		}
		stopLoad()
		sampler.check(t)
		t.Logf("%d hand-overs for balance, %d on shutdown", g.handovers(MoveBalance), g.handovers(MoveShutdown))
		for _, name := range slices.Sorted(maps.Keys(g.fleet)) {
			eng := g.fleet[name]
			waitApplied(t, eng, 30*time.Second)
			if maxRunning, _, _, _ := eng.stats(); maxRunning != 1 {
				t.Errorf("%s: %d instances applied at once; want 1", name, maxRunning)
			}
		}
	})
}

// TestColdBalancePinned: a task pinned to h2 runs on h1 while h2 is not
// there, moves to h2 when it joins (reason pinned), and the group still
// ends even.
func TestColdBalancePinned(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		g := newBalanceGroup(t, tg, 4, 200*time.Millisecond)
		sp := coldSpec(g.tasks[0], "g1")
		sp.Standby.PreferredCores = []string{"h2"}
		if err := g.a.AddTask(context.Background(), sp, true); err != nil {
			t.Fatal(err)
		}
		g.start("h1")
		g.waitSpread(map[string]int{"h1": 4})
		g.start("h2")
		g.waitSpread(map[string]int{"h1": 2, "h2": 2})
		if o := g.owners()[g.tasks[0]]; o != "h2" {
			t.Errorf("the task pinned to h2 runs on %s", o)
		}
		if n := g.handovers(MovePinned); n != 1 {
			t.Errorf("%d hand-overs for pinning; want 1", n)
		}
	})
}
