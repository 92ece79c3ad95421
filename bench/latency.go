package bench

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"
)

// reservoirSize bounds the latencies one recorder keeps. 1<<14 samples per
// worker × 256 workers is 32 MiB at most, and enough that the 99th
// percentile rests on well over a hundred samples per worker.
const reservoirSize = 1 << 14

// recorder keeps a uniform random sample of the latencies it is given
// (Vitter's algorithm R) and how many it was given. It is owned by one
// goroutine; merge recorders after their goroutines have stopped.
type recorder struct {
	samples []time.Duration
	count   int64
	limit   int
	rng     *rand.Rand
}

func newRecorder(seed uint64) *recorder {
	return &recorder{limit: reservoirSize, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

func (r *recorder) record(d time.Duration) {
	r.count++
	if len(r.samples) < r.limit {
		r.samples = append(r.samples, d)
		return
	}
	if j := r.rng.Int64N(r.count); j < int64(r.limit) {
		r.samples[j] = d
	}
}

// since records the time elapsed since start and returns it.
func (r *recorder) since(start time.Time) time.Duration {
	d := time.Since(start)
	r.record(d)
	return d
}

// weighted is one sampled latency standing for weight observations.
type weighted struct {
	d      time.Duration
	weight float64
}

// distribution is the merged sample of several recorders. A recorder that
// saw more latencies than it kept stands for count/len(samples) latencies
// per sample, so a busy worker is not under-represented next to an idle
// one.
type distribution struct {
	points []weighted
	total  float64
}

func mergeRecorders(rs ...*recorder) distribution {
	var dist distribution
	for _, r := range rs {
		if r != nil {
			dist.add(r.samples, float64(r.count))
		}
	}
	dist.sort()
	return dist
}

// add puts samples standing for count observations into dist; call
// sort once everything is added.
func (dist *distribution) add(samples []time.Duration, count float64) {
	if len(samples) == 0 || count <= 0 {
		return
	}
	w := count / float64(len(samples))
	for _, d := range samples {
		dist.points = append(dist.points, weighted{d, w})
	}
	dist.total += count
}

func (dist distribution) sort() {
	slices.SortFunc(dist.points, func(a, b weighted) int { return cmp.Compare(a.d, b.d) })
}

// percentile returns the smallest sampled latency at or below which at
// least q (0 < q ≤ 1) of the weight lies: the nearest-rank definition HDR
// histograms report. It returns 0 for an empty distribution.
func (dist distribution) percentile(q float64) time.Duration {
	if len(dist.points) == 0 {
		return 0
	}
	want := q * dist.total
	var cum float64
	for _, p := range dist.points {
		cum += p.weight
		// Compare with a little slack so that float rounding in the
		// weights cannot push the target past the last point.
		if cum >= want*(1-1e-12) {
			return p.d
		}
	}
	return dist.points[len(dist.points)-1].d
}
