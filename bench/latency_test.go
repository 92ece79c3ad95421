package bench

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	oneToHundred := newRecorder(1)
	for i := 100; i >= 1; i-- { // reverse order: merge must sort
		oneToHundred.record(ms(i))
	}
	single := newRecorder(2)
	single.record(ms(7))
	tests := []struct {
		name string
		recs []*recorder
		q    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"single p50", []*recorder{single}, 0.5, ms(7)},
		{"single p99", []*recorder{single}, 0.99, ms(7)},
		{"1..100 p50", []*recorder{oneToHundred}, 0.5, ms(50)},
		{"1..100 p99", []*recorder{oneToHundred}, 0.99, ms(99)},
		{"1..100 p100", []*recorder{oneToHundred}, 1, ms(100)},
		{"1..100 p1", []*recorder{oneToHundred}, 0.01, ms(1)},
		{"merged p50", []*recorder{oneToHundred, single}, 0.5, ms(50)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeRecorders(tt.recs...).percentile(tt.q); got != tt.want {
				t.Errorf("percentile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

// A recorder that saw more latencies than it kept must weigh its samples
// by what they stand for, or a busy worker's latencies would be drowned
// by an idle one's.
func TestPercentileWeighsSampledRecorders(t *testing.T) {
	idle := newRecorder(1)
	for range 100 {
		idle.record(time.Millisecond)
	}
	busy := newRecorder(2)
	busy.limit = 10
	for range 10_000 {
		busy.record(10 * time.Millisecond)
	}
	if len(busy.samples) != 10 || busy.count != 10_000 {
		t.Fatalf("reservoir kept %d of %d, want 10 of 10000", len(busy.samples), busy.count)
	}
	dist := mergeRecorders(idle, busy)
	if got := dist.percentile(0.5); got != 10*time.Millisecond {
		t.Errorf("p50 = %v, want 10ms: 10000 of 10100 latencies were 10ms", got)
	}
	if got := dist.percentile(0.005); got != time.Millisecond {
		t.Errorf("p0.5 = %v, want 1ms", got)
	}
}

// The reservoir must stay a uniform sample: after many latencies from two
// equally common values, both must be well represented.
func TestReservoirStaysUniform(t *testing.T) {
	r := newRecorder(3)
	r.limit = 1000
	for i := range 100_000 {
		r.record(time.Duration(i%2+1) * time.Millisecond)
	}
	ones := 0
	for _, d := range r.samples {
		if d == time.Millisecond {
			ones++
		}
	}
	if ones < 400 || ones > 600 {
		t.Errorf("reservoir holds %d of 1000 samples of a value seen half the time, want 400..600", ones)
	}
}
