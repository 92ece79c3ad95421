package collector

import (
	"fmt"
	"testing"
	"time"
)

// TestAssignerAndListJudgeAlike feeds the same collectors to the
// assigner's view (membersOf, what Plan sees) and to Admin.Overview's
// (infosOf, what ctl prints) and checks that both decide alike, and as
// the rule says.
func TestAssignerAndListJudgeAlike(t *testing.T) {
	const ref = int64(1_000_000_000)
	deadAfter := 10 * time.Second
	ms := func(d time.Duration) int64 { return ref - d.Milliseconds() }
	cases := []struct {
		name  string
		stamp stamp
		alive bool
	}{
		{"fresh", stamp{exists: true, mtime: ms(200 * time.Millisecond)}, true},
		{"just-alive", stamp{exists: true, mtime: ms(deadAfter - time.Millisecond)}, true},
		{"just-dead", stamp{exists: true, mtime: ms(deadAfter)}, false},
		{"old", stamp{exists: true, mtime: ms(time.Hour)}, false},
		{"leaving", stamp{exists: true, mtime: ms(0), leaving: true}, false},
		{"no-status", stamp{}, false},
		{"ahead", stamp{exists: true, mtime: ref + 5}, true}, // written after the assigner's round: fresh
	}
	var nodes []collectorNode
	for _, c := range cases {
		n := collectorNode{name: c.name, stamp: c.stamp}
		n.status.Leaving = c.stamp.leaving
		nodes = append(nodes, n)
	}
	mem := membersOf(nodes, ref, deadAfter)
	inf, err := infosOf(nodes, ref, deadAfter)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if mem[i].Alive != c.alive || inf[i].Alive != c.alive {
			t.Errorf("%s: assigner says alive=%v, ctl says alive=%v (%s); the rule says %v",
				c.name, mem[i].Alive, inf[i].Alive, inf[i].Reason, c.alive)
		}
	}
}

// TestTermClockWaitsAfterGap: age-dead verdicts are acted on only after
// DeadAfter of rounds without a gap, and a gap (a suspension, a server
// restart) starts the wait again.
func TestTermClockWaitsAfterGap(t *testing.T) {
	var c termClock
	d := time.Second
	for _, st := range []struct {
		now  int64
		want bool
	}{
		{1000, false}, {1400, false}, {1800, false}, {2000, true}, {2300, true},
		{9000, false}, // a gap: start again
		{9400, false}, {9800, false}, {10000, true},
	} {
		if got := c.tick(st.now, d, d); got != st.want {
			t.Fatalf("tick(%d) = %v, want %v", st.now, got, st.want)
		}
	}
}

// TestGracefulStopHandsSourcesBack: a collector stopped on purpose marks
// its status leaving, and the assigner moves its sources at once, long
// before DeadAfter (an hour here); nothing is lost or doubled.
func TestGracefulStopHandsSourcesBack(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		const n = 6
		w := startWorkload(t, n, 400, 10*time.Millisecond)
		s := dial(t, tg.addr)
		addSources(t, s, w.uris)
		ag := newAgents(t, tg.addr, Local)
		ag.deadAfter = time.Hour
		ag.start("g1", true)
		ag.start("g2", true)
		waitAssigned(t, s, n, "start", func(a map[string][]string) error {
			if len(a["g1"]) == 0 || len(a["g2"]) == 0 {
				return fmt.Errorf("want both collectors holding sources")
			}
			return nil
		})
		ag.stop("g1")
		waitAssigned(t, s, n, "g1 stopped", func(a map[string][]string) error {
			if len(a["g1"]) != 0 {
				return fmt.Errorf("stopped g1 still holds %v", a["g1"])
			}
			return nil
		})
		w.finish()
		checkFor(t, 30*time.Second, 100*time.Millisecond, func() error { return w.verify(ag.dirs()) })
	})
}
