package server

import (
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/collector"
)

// TestLineRates: a collector's rate is measured over at least rateEvery
// whatever the snapshot rate, from the lines it committed; a collector
// gone from the snapshot has none.
func TestLineRates(t *testing.T) {
	var h lineRates
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	snap := func(at time.Duration, lines ...int64) *Snapshot {
		s := &Snapshot{ReadAt: t0.Add(at)}
		for i, n := range lines {
			s.Collectors = append(s.Collectors, collector.CollectorInfo{Name: "c" + string(rune('1'+i)), Lines: n})
		}
		return s
	}
	h.add(snap(0, 1000, 50))
	if _, ok := h.rate("c1"); ok {
		t.Fatal("a rate from one snapshot")
	}
	h.add(snap(time.Second, 9999, 9999)) // too soon: not taken
	h.add(snap(rateEvery, 1300, 50))
	if r, ok := h.rate("c1"); !ok || r != 10 {
		t.Fatalf("c1: %v (%v), want 10 lines/s over the 30 s", r, ok)
	}
	if r, ok := h.rate("c2"); !ok || r != 0 {
		t.Fatalf("c2: %v (%v), want 0", r, ok)
	}
	h.add(snap(2*rateEvery, 1600))
	if _, ok := h.rate("c2"); ok {
		t.Fatal("a rate for a collector gone from the snapshot")
	}
}
