package server

import (
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/core"
)

// TestLagHistorySamplesAndBounds: one sample per 30 s whatever the
// snapshot rate, at most lagKeep per task, tasks that disappear dropped,
// and the chart scaled to the largest lag.
func TestLagHistorySamplesAndBounds(t *testing.T) {
	var h lagHistory
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	snap := func(at time.Time, lag float64, names ...string) *Snapshot {
		s := &Snapshot{ReadAt: at}
		for _, n := range names {
			s.Tasks = append(s.Tasks, core.TaskStatus{Name: n, Spec: &core.Spec{Name: n, State: core.DesiredRunning}, Instances: []core.Instance{{Name: "c-0000000001", State: core.InstanceState{State: "RUNNING", LagSeconds: lag}}}})
		}
		return s
	}
	for i := range 3 * lagKeep {
		h.add(snap(t0.Add(time.Duration(i)*10*time.Second), float64(i%7), "a", "b"))
	}
	if n := len(h.tasks["a"]); n != lagKeep {
		t.Fatalf("%d samples kept, want %d", n, lagKeep)
	}
	if gap := h.tasks["a"][1].At.Sub(h.tasks["a"][0].At); gap != lagEvery {
		t.Fatalf("samples %v apart, want %v", gap, lagEvery)
	}
	last := snap(t0.Add(24*time.Hour), 3, "a")
	last.Collectors = []collector.CollectorInfo{{Name: "c1", Lines: 1000}}
	h.add(last)
	next := snap(t0.Add(24*time.Hour+lagEvery), 3, "a")
	next.Collectors = []collector.CollectorInfo{{Name: "c1", Lines: 1300}}
	h.add(next)
	if _, ok := h.tasks["b"]; ok {
		t.Fatal("a task gone from the snapshot is still kept")
	}
	if r, ok := h.rate("c1"); !ok || r != 10 {
		t.Fatalf("collector rate %v (%v), want 10 lines/s", r, ok)
	}
	c := h.chart("a")
	if c.Max != 6 || c.N != lagKeep || strings.Count(c.Points, ",") != lagKeep {
		t.Fatalf("chart: max %v, %d samples, points %q", c.Max, c.N, c.Points[:40])
	}
}
