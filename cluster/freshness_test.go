package cluster

import (
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/replication"
)

// TestSourcePositionAt: a gate's goal is the position of the first sample
// still seen at or after its time — exact when the source sat there
// across that time, later (never earlier) when it moved in between.
func TestSourcePositionAt(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	pos := func(n uint32) replication.Position { return replication.Position{File: "mysql-bin.000001", Pos: n} }
	samples := []PosSample{
		{Since: t0, At: t0.Add(10 * time.Second), Pos: pos(100)},
		{Since: t0.Add(20 * time.Second), At: t0.Add(30 * time.Second), Pos: pos(200)},
	}
	for _, tt := range []struct {
		at   time.Duration
		want uint32
		ok   bool
	}{
		{-time.Hour, 100, true},       // before every sample: the oldest, later than needed
		{5 * time.Second, 100, true},  // the source sat at 100 across it
		{10 * time.Second, 100, true}, // last seen there exactly then
		{15 * time.Second, 200, true}, // moved between samples: the next one
		{30 * time.Second, 200, true}, //
		{31 * time.Second, 0, false},  // no reading since: no goal yet
	} {
		got, ok := SourcePositionAt(samples, t0.Add(tt.at))
		if ok != tt.ok || (ok && got != pos(tt.want)) {
			t.Errorf("at %v: %v, %v; want %d, %v", tt.at, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := SourcePositionAt(nil, t0); ok {
		t.Error("no samples: want no goal")
	}
}
