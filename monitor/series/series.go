// Package series is a task's lag and rows-per-second history as the
// active monitor keeps it in the coordination tree (one node per task,
// /shepherd/monitor/series/<task>) and the console plots it: a small
// ring of buckets in three tiers, each fed by every sample —
//
//	tier 0: 60 buckets of 1 minute   (the last hour)
//	tier 1: 72 buckets of 5 minutes  (the last 6 hours)
//	tier 2: 96 buckets of 15 minutes (the last 24 hours)
//
// A bucket holds the largest lag seen in it (a spike is never averaged
// away) and the mean rows per second; either is unknown (NaN; null in
// the encoding) when no sample in the bucket had it, and a bucket no
// sample fell in is unknown too: the plots show a gap there, not zero.
//
// The package is pure: appending, downsampling, encoding and decoding,
// no I/O. Decode treats its input as untrusted (the node's content comes
// from the coordination tree): it refuses, with ErrBadSeries and the
// reason, anything that is not a ring this package could have encoded,
// and any input over MaxBytes. An encoding is at most MaxBytes by
// construction (228 buckets of two numbers of at most 13 characters).
package series

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// Tier is one resolution of the ring: Len buckets of Step each.
type Tier struct {
	Step time.Duration
	Len  int
}

// Span is the time a tier covers.
func (t Tier) Span() time.Duration { return time.Duration(t.Len) * t.Step }

// Tiers are the ring's resolutions, finest first.
var Tiers = [numTiers]Tier{{time.Minute, 60}, {5 * time.Minute, 72}, {15 * time.Minute, 96}}

const numTiers = 3

// Version is the schema version of the encoding.
const Version = 1

// MaxBytes bounds an encoding: Encode never exceeds it and Decode
// refuses more.
const MaxBytes = 8 << 10

// MaxValue is the largest lag (seconds) or rate (rows per second) kept;
// larger values are kept as MaxValue.
const MaxValue = 1e12

// maxN bounds the count of rate samples of a bucket.
const maxN = 1 << 20

// maxUnix is the last second of year 9999: no bucket starts later.
const maxUnix = 253402300799

// ErrBadSeries reports an encoding Decode refuses.
var ErrBadSeries = errors.New("series: not a task series")

// ErrSpan reports a span no tier covers.
var ErrSpan = errors.New("series: span not covered")

// Sample is one evaluation's reading of a task: its lag in seconds and
// its rows per second, each NaN when unknown.
type Sample struct {
	At   time.Time
	Lag  float64
	Rows float64
}

// Unknown is the value of a sample or bucket that has none.
var Unknown = math.NaN()

// Empty reports whether the sample has no value: appending it changes
// nothing.
func (s Sample) Empty() bool { return !known(s.Lag) && !known(s.Rows) }

func known(x float64) bool { return !math.IsNaN(x) }

// clean makes a sample value fit the ring: NaN and ±Inf are unknown,
// a negative value is 0 (a lag measured across a clock step), a huge
// one MaxValue.
func clean(x float64) float64 {
	switch {
	case math.IsNaN(x), math.IsInf(x, 0):
		return Unknown
	case x < 0:
		return 0
	case x > MaxValue:
		return MaxValue
	}
	return x
}

// tier is one tier's buckets: lag[i] and rows[i] are bucket end-len+1+i,
// whose start is that index times the step, in Unix seconds.
type tier struct {
	end  int64
	lag  []float64
	rows []float64
	// n is how many rate samples the newest bucket's rows is the mean
	// of, so that the next sample in it is weighed right.
	n int
}

// Ring is a task's series. The zero Ring is empty and ready.
type Ring struct {
	tiers [numTiers]tier
}

// Append adds a sample to every tier and reports whether the ring
// changed: an empty sample, or one older than a tier's newest bucket
// (a monitor taking over with a clock behind its predecessor's), is not
// kept there.
func (r *Ring) Append(s Sample) bool {
	s.Lag, s.Rows = clean(s.Lag), clean(s.Rows)
	if s.Empty() || s.At.Unix() < 0 || s.At.Unix() > maxUnix {
		return false
	}
	changed := false
	for i := range r.tiers {
		step := int64(Tiers[i].Step / time.Second)
		if r.tiers[i].add(s.At.Unix()/step, s, Tiers[i].Len) {
			changed = true
		}
	}
	return changed
}

func (t *tier) add(idx int64, s Sample, keep int) bool {
	switch {
	case len(t.lag) == 0 || idx-t.end >= int64(keep):
		t.end, t.lag, t.rows, t.n = idx, []float64{s.Lag}, []float64{s.Rows}, 0
		if known(s.Rows) {
			t.n = 1
		}
		return true
	case idx < t.end:
		return false
	case idx > t.end:
		for range idx - t.end {
			t.lag, t.rows = append(t.lag, Unknown), append(t.rows, Unknown)
		}
		t.end, t.n = idx, 0
		if over := len(t.lag) - keep; over > 0 {
			t.lag, t.rows = t.lag[over:], t.rows[over:]
		}
		for len(t.lag) > 1 && !known(t.lag[0]) && !known(t.rows[0]) {
			t.lag, t.rows = t.lag[1:], t.rows[1:]
		}
	}
	i := len(t.lag) - 1
	if known(s.Lag) && (!known(t.lag[i]) || s.Lag > t.lag[i]) {
		t.lag[i] = s.Lag
	}
	if known(s.Rows) {
		if !known(t.rows[i]) || t.n < 1 {
			t.rows[i], t.n = s.Rows, 1
		} else {
			t.rows[i] = (t.rows[i]*float64(t.n) + s.Rows) / float64(t.n+1)
			t.n = min(t.n+1, maxN)
		}
	}
	return true
}

// Newest is the start of the newest bucket of tier 0, and false for an
// empty ring.
func (r *Ring) Newest() (time.Time, bool) {
	t := &r.tiers[0]
	if len(t.lag) == 0 {
		return time.Time{}, false
	}
	return time.Unix(t.end*int64(Tiers[0].Step/time.Second), 0).UTC(), true
}

// Point is one bucket as the plots show it: its start, the largest lag
// in it and its mean rows per second (NaN: unknown).
type Point struct {
	At   time.Time
	Lag  float64
	Rows float64
}

// TierFor is the finest tier that covers span.
func TierFor(span time.Duration) (int, error) {
	for i, t := range Tiers {
		if span > 0 && span <= t.Span() {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: %v: at most %v", ErrSpan, span, Tiers[numTiers-1].Span())
}

// Points are the buckets of the last span before now, from the finest
// tier that covers it: one per step from the oldest bucket the ring has
// in the span to the newest, unknown where nothing was recorded.
func (r *Ring) Points(span time.Duration, now time.Time) (Tier, []Point, error) {
	i, err := TierFor(span)
	if err != nil {
		return Tier{}, nil, err
	}
	tr, t := Tiers[i], &r.tiers[i]
	step := int64(tr.Step / time.Second)
	last := now.Unix() / step
	first := last - int64(span/tr.Step) + 1
	start := t.end - int64(len(t.lag)) + 1
	out := []Point{}
	for idx := max(first, start); idx <= min(last, t.end) && len(t.lag) > 0; idx++ {
		j := idx - start
		out = append(out, Point{At: time.Unix(idx*step, 0).UTC(), Lag: t.lag[j], Rows: t.rows[j]})
	}
	return tr, out, nil
}

// Encode is the ring's document: compact JSON, values rounded (see
// round), unknowns as null.
//
//	{"version":1,"tiers":[{"step":60,"end":29501234,"lag":[0.4,null,2],"rows":[120,null,98.5],"n":4},…]}
func (r *Ring) Encode() []byte {
	b := make([]byte, 0, 2048)
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, `,"tiers":[`...)
	for i := range r.tiers {
		t := &r.tiers[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"step":`...)
		b = strconv.AppendInt(b, int64(Tiers[i].Step/time.Second), 10)
		b = append(b, `,"end":`...)
		b = strconv.AppendInt(b, t.end, 10)
		b = append(b, `,"lag":`...)
		b = appendValues(b, t.lag)
		b = append(b, `,"rows":`...)
		b = appendValues(b, t.rows)
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, int64(t.n), 10)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func appendValues(b []byte, xs []float64) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		if !known(x) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, round(x), 'f', -1, 64)
	}
	return append(b, ']')
}

// round keeps what a plot can show: hundredths below 10, tenths below
// 1000, whole numbers above.
func round(x float64) float64 {
	switch {
	case x < 10:
		return math.Round(x*100) / 100
	case x < 1000:
		return math.Round(x*10) / 10
	}
	return math.Round(x)
}

// document is the encoding as Decode reads it.
type document struct {
	Version int `json:"version"`
	Tiers   []struct {
		Step int64      `json:"step"`
		End  int64      `json:"end"`
		Lag  []*float64 `json:"lag"`
		Rows []*float64 `json:"rows"`
		N    int        `json:"n"`
	} `json:"tiers"`
}

// Decode reads an encoding, refusing (ErrBadSeries, with what is wrong)
// anything Encode could not have written.
func Decode(data []byte) (*Ring, error) {
	bad := func(format string, args ...any) (*Ring, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrBadSeries}, args...)...)
	}
	if len(data) > MaxBytes {
		return bad("%d bytes, over %d", len(data), MaxBytes)
	}
	var doc document
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return bad("%v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("data after the document")
	}
	if doc.Version != Version {
		return bad("version %d: this build reads version %d", doc.Version, Version)
	}
	if len(doc.Tiers) != numTiers {
		return bad("%d tiers, want %d", len(doc.Tiers), numTiers)
	}
	r := &Ring{}
	for i, d := range doc.Tiers {
		tr := Tiers[i]
		step := int64(tr.Step / time.Second)
		switch {
		case d.Step != step:
			return bad("tier %d: step %d s, want %d", i, d.Step, step)
		case len(d.Lag) != len(d.Rows):
			return bad("tier %d: %d lags and %d rates", i, len(d.Lag), len(d.Rows))
		case len(d.Lag) > tr.Len:
			return bad("tier %d: %d buckets, at most %d", i, len(d.Lag), tr.Len)
		case d.End < 0 || d.End > maxUnix/step || d.End < int64(len(d.Lag))-1:
			return bad("tier %d: end %d out of range", i, d.End)
		case d.N < 0 || d.N > maxN:
			return bad("tier %d: n %d out of range", i, d.N)
		}
		t := &r.tiers[i]
		t.end, t.n = d.End, d.N
		var err error
		if t.lag, err = values(d.Lag); err != nil {
			return bad("tier %d: lag: %v", i, err)
		}
		if t.rows, err = values(d.Rows); err != nil {
			return bad("tier %d: rows: %v", i, err)
		}
	}
	return r, nil
}

func values(in []*float64) ([]float64, error) {
	out := make([]float64, len(in))
	for i, p := range in {
		switch {
		case p == nil:
			out[i] = Unknown
		case *p < 0 || *p > MaxValue:
			return nil, fmt.Errorf("value %d: %v out of range [0, %v]", i, *p, MaxValue)
		default:
			out[i] = *p
		}
	}
	return out, nil
}
