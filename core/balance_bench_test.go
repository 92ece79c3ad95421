package core

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkColdRebalance measures the balancing of a cold group with the
// in-memory engine under a steady load (events every 10 ms on each of 12
// tasks): three cores spreading 12 tasks from scratch, a fourth joining,
// and one of the four crashing (its session closed, as when the server
// notices a killed process). It reports how many hand-overs each step
// took and how long until the group was even, and the hand-over time:
// from the last commit of the old owner to the first of the new one —
// the clean stop, lastCommit, the node's deletion and up to one scan
// interval until the receiver's scan.
//
//	go test -run '^$' -bench BenchmarkColdRebalance -benchtime 1x ./core/
func BenchmarkColdRebalance(b *testing.B) {
	for _, tg := range targets {
		for _, scan := range []time.Duration{200 * time.Millisecond, time.Second} {
			b.Run(fmt.Sprintf("%s/scan=%v", tg.Name, scan), func(b *testing.B) {
				tg.Require(b)
				for range b.N {
					benchRebalance(b, tg, scan)
				}
			})
		}
	}
}

func benchRebalance(b *testing.B, tg *target, scan time.Duration) {
	g := newBalanceGroup(b, tg, 12, scan)
	defer g.steadyLoad(10*time.Millisecond, 5)()
	gaps := func() []time.Duration {
		var all []time.Duration
		for _, eng := range g.fleet {
			all = append(all, eng.takeHandovers()...)
		}
		return all
	}
	step := func(name string, do func(), wait func()) {
		moves := g.handovers(MoveBalance) + g.handovers(MovePinned)
		gaps()
		start := time.Now()
		do()
		wait()
		took := time.Since(start)
		b.ReportMetric(float64(g.handovers(MoveBalance)+g.handovers(MovePinned)-moves), name+"-moves")
		b.ReportMetric(ms(took), name+"-ms")
		if hs := gaps(); len(hs) > 0 {
			slices.Sort(hs)
			b.ReportMetric(ms(median(hs)), name+"-handover-median-ms")
			b.ReportMetric(ms(hs[len(hs)-1]), name+"-handover-max-ms")
		}
	}
	step("start", func() {
		for _, h := range []string{"h1", "h2", "h3"} {
			g.start(h)
		}
	}, func() { g.waitSpread(map[string]int{"h1": 4, "h2": 4, "h3": 4}) })
	step("join", func() { g.start("h4") },
		func() { g.waitSpread(map[string]int{"h1": 3, "h2": 3, "h3": 3, "h4": 3}) })
	step("crash", func() { g.cores["h2"].crash() }, func() { g.waitEven("h1", "h3", "h4") })
}
