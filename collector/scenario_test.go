package collector

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestLocalScenario runs collectors in-process through a death, a server
// restart, a join, an assigner failover and a return from the dead, with
// sources appended to throughout, and checks that the local strategy
// moves only what it must and that every line is collected exactly once.
func TestLocalScenario(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		const n = 12
		w := startWorkload(t, n, 3000, 20*time.Millisecond)
		s := dial(t, tg.addr)
		addSources(t, s, w.uris)
		ag := newAgents(t, tg.addr, Local)
		ag.start("c1", true)
		ag.start("c2", true)
		ag.start("c3", false)
		even := func(want int, names ...string) func(map[string][]string) error {
			return func(a map[string][]string) error {
				for _, nm := range names {
					if len(a[nm]) != want {
						return fmt.Errorf("%s holds %d sources, want %d", nm, len(a[nm]), want)
					}
				}
				return nil
			}
		}
		before := waitAssigned(t, s, n, "start", even(4, "c1", "c2", "c3"))

		// c3 dies: only its sources move.
		ag.stop("c3")
		after := waitAssigned(t, s, n, "c3 dead", even(0, "c3"))
		for _, nm := range []string{"c1", "c2"} {
			for _, x := range before[nm] {
				if !slices.Contains(after[nm], x) {
					t.Fatalf("local strategy took %s from live %s: before %v after %v", x, nm, before, after)
				}
			}
		}
		if m := Moves(before, after); m != len(before["c3"]) {
			t.Fatalf("moved %d sources after c3 died, want only its %d", m, len(before["c3"]))
		}

		tg.restart(t)

		// c4 joins and takes its share from the most loaded.
		ag.start("c4", false)
		waitAssigned(t, s, n, "c4 joined", even(4, "c1", "c2", "c4"))

		// The leading assigner dies; the other takes over and moves the
		// dead one's sources; then the dead one and c3 come back.
		lead := leader(t, s)
		other := map[string]string{"c1": "c2", "c2": "c1"}[lead]
		ag.stop(lead)
		coordtest.WaitFor(t, 20*time.Second, "condition", func() error {
			if l := leader(t, s); l != other {
				return fmt.Errorf("assigner leader is %s, want %s", l, other)
			}
			return nil
		})
		waitAssigned(t, s, n, lead+" dead", even(0, lead))
		ag.start(lead, true)
		ag.start("c3", false)
		waitAssigned(t, s, n, "returned", func(a map[string][]string) error {
			if len(a[lead]) == 0 || len(a["c3"]) == 0 {
				return fmt.Errorf("returning collectors %s and c3 got no work", lead)
			}
			return nil
		})

		w.finish()
		coordtest.WaitFor(t, 30*time.Second, "condition", func() error { return w.verify(ag.dirs()) })
		ag.stopAll()
		if err := w.verify(ag.dirs()); err != nil {
			t.Fatalf("after stopping every collector: %v", err)
		}
		t.Logf("%s: %v lines per source collected exactly once", tg.name, w.counts()[0])
	})
}

// TestGlobalRebalance checks that the global strategy spreads sources
// evenly over the live collectors after a join and after a death.
func TestGlobalRebalance(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		const n = 10
		w := startWorkload(t, n, 0, time.Second)
		s := dial(t, tg.addr)
		addSources(t, s, w.uris)
		ag := newAgents(t, tg.addr, Global)
		ag.start("g1", true)
		ag.start("g2", false)
		evenly := func(names ...string) func(map[string][]string) error {
			return func(a map[string][]string) error {
				lo, hi := n, 0
				for _, nm := range names {
					lo, hi = min(lo, len(a[nm])), max(hi, len(a[nm]))
				}
				if hi-lo > 1 {
					return fmt.Errorf("uneven: %s", sortedList(a))
				}
				return nil
			}
		}
		waitAssigned(t, s, n, "two", evenly("g1", "g2"))
		ag.start("g3", false)
		waitAssigned(t, s, n, "g3 joined", func(a map[string][]string) error {
			if len(a["g3"]) == 0 {
				return fmt.Errorf("g3 has nothing")
			}
			return evenly("g1", "g2", "g3")(a)
		})
		ag.stop("g2")
		waitAssigned(t, s, n, "g2 dead", func(a map[string][]string) error {
			if len(a["g2"]) != 0 {
				return fmt.Errorf("dead g2 holds %v", a["g2"])
			}
			return evenly("g1", "g3")(a)
		})
	})
}
