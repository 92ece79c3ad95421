package series

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func smp(d time.Duration, lag, rows float64) Sample { return Sample{At: at(d), Lag: lag, Rows: rows} }

var nan = math.NaN()

// same compares bucket values, NaN equal to NaN.
func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

type bucket struct{ lag, rows float64 }

// buckets is tier i's content, oldest first, with its first bucket's start.
func (r *Ring) buckets(i int) (time.Time, []bucket) {
	t := &r.tiers[i]
	var out []bucket
	for j := range t.lag {
		out = append(out, bucket{t.lag[j], t.rows[j]})
	}
	step := int64(Tiers[i].Step / time.Second)
	return time.Unix((t.end-int64(len(t.lag))+1)*step, 0).UTC(), out
}

func checkBuckets(t *testing.T, r *Ring, tier int, wantStart time.Time, want []bucket) {
	t.Helper()
	start, got := r.buckets(tier)
	if len(got) != len(want) || (len(want) > 0 && !start.Equal(wantStart)) {
		t.Fatalf("tier %d: %d buckets from %v, want %d from %v: %v", tier, len(got), start, len(want), wantStart, got)
	}
	for i := range want {
		if !same(got[i].lag, want[i].lag) || !same(got[i].rows, want[i].rows) {
			t.Fatalf("tier %d bucket %d: %v, want %v (all: %v)", tier, i, got[i], want[i], got)
		}
	}
}

// TestAppendBuckets: which bucket of each tier a sample lands in, at the
// boundaries; the largest lag and the mean rate of a bucket; unknowns
// that leave a known value alone; gaps as unknown buckets.
func TestAppendBuckets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []Sample
		tier    int
		start   time.Time
		want    []bucket
	}{
		{"one minute: :00 and :59 share a bucket, the max lag, the mean rate", []Sample{smp(0, 1, 10), smp(59*time.Second, 3, 20), smp(30*time.Second, 2, 30)},
			0, at(0), []bucket{{3, 20}}},
		{"the next minute starts a bucket", []Sample{smp(59*time.Second, 1, 10), smp(time.Minute, 5, 50)},
			0, at(0), []bucket{{1, 10}, {5, 50}}},
		{"five minutes: 4:59 and 5:00 are two buckets", []Sample{smp(4*time.Minute+59*time.Second, 1, 10), smp(5*time.Minute, 2, 20)},
			1, at(0), []bucket{{1, 10}, {2, 20}}},
		{"fifteen minutes: 0:00 to 14:59 is one bucket", []Sample{smp(0, 1, 10), smp(14*time.Minute+59*time.Second, 4, 30)},
			2, at(0), []bucket{{4, 20}}},
		{"an unknown lag keeps the known one; a known lag fills an unknown", []Sample{smp(0, 7, nan), smp(10*time.Second, nan, 40), smp(time.Minute, nan, 5), smp(time.Minute+time.Second, 2, nan)},
			0, at(0), []bucket{{7, 40}, {2, 5}}},
		{"a gap is unknown buckets, not zero", []Sample{smp(0, 1, 10), smp(3*time.Minute, 2, 20)},
			0, at(0), []bucket{{1, 10}, {nan, nan}, {nan, nan}, {2, 20}}},
		{"a gap of an hour or more starts the hour over", []Sample{smp(0, 1, 10), smp(time.Hour, 2, 20)},
			0, at(time.Hour), []bucket{{2, 20}}},
		{"the hour gap stays in the 5-minute tier", []Sample{smp(0, 1, 10), smp(time.Hour, 2, 20)},
			1, at(0), append(append([]bucket{{1, 10}}, repeat(bucket{nan, nan}, 11)...), bucket{2, 20})},
		{"a sample older than the newest bucket is not kept", []Sample{smp(2*time.Minute, 1, 10), smp(time.Minute, 9, 90)},
			0, at(2 * time.Minute), []bucket{{1, 10}}},
		{"an empty sample changes nothing", []Sample{smp(0, 1, 10), smp(5*time.Minute, nan, nan)},
			0, at(0), []bucket{{1, 10}}},
		{"negative lag is 0, infinite is unknown", []Sample{smp(0, -3, math.Inf(1))},
			0, at(0), []bucket{{0, nan}}},
		{"a value over MaxValue is MaxValue", []Sample{smp(0, 1e300, 1)},
			0, at(0), []bucket{{MaxValue, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Ring
			for _, s := range tc.samples {
				r.Append(s)
			}
			checkBuckets(t, &r, tc.tier, tc.start, tc.want)
		})
	}
}

func repeat(b bucket, n int) []bucket {
	out := make([]bucket, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// TestAppendReports: Append says whether the ring changed.
func TestAppendReports(t *testing.T) {
	var r Ring
	if r.Append(smp(0, nan, nan)) {
		t.Error("an empty sample changed an empty ring")
	}
	if !r.Append(smp(14*time.Minute, 1, nan)) {
		t.Error("a first sample did not change the ring")
	}
	if r.Append(smp(-20*time.Minute, 1, 1)) {
		t.Error("a sample older than every tier's newest bucket changed the ring")
	}
	// 12:01 is before the newest bucket of 1 (12:14) and 5 minutes
	// (12:10), in the newest of 15 minutes (12:00).
	if !r.Append(smp(time.Minute, 9, 1)) {
		t.Error("a sample in tier 2's newest bucket was not kept there")
	}
	checkBuckets(t, &r, 0, at(14*time.Minute), []bucket{{1, nan}})
	checkBuckets(t, &r, 2, at(0), []bucket{{9, 1}})
	if n, _ := r.Newest(); !n.Equal(at(14 * time.Minute)) {
		t.Errorf("newest %v, want %v", n, at(14*time.Minute))
	}
}

// TestBoundAfterManyAppends: 10,000 samples 15 s apart (about 42 hours,
// a third of them unknown, values of every size) leave each tier at its
// length, and every encoding within MaxBytes.
func TestBoundAfterManyAppends(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var r Ring
	worst := 0
	for i := range 10_000 {
		lag, rows := rng.Float64()*math.Pow(10, float64(rng.IntN(13))), rng.Float64()*math.Pow(10, float64(rng.IntN(13)))
		if rng.IntN(3) == 0 {
			lag = nan
		}
		if rng.IntN(3) == 0 {
			rows = nan
		}
		r.Append(smp(time.Duration(i)*15*time.Second, lag, rows))
		for j, tr := range Tiers {
			if n := len(r.tiers[j].lag); n > tr.Len || n != len(r.tiers[j].rows) {
				t.Fatalf("after %d samples tier %d holds %d lags, %d rates: at most %d", i+1, j, n, len(r.tiers[j].rows), tr.Len)
			}
		}
		if i%97 == 0 {
			worst = max(worst, len(r.Encode()))
		}
	}
	for j, tr := range Tiers {
		if n := len(r.tiers[j].lag); n != tr.Len {
			t.Errorf("tier %d holds %d buckets after 42 h, want %d", j, n, tr.Len)
		}
	}
	if worst > MaxBytes {
		t.Fatalf("an encoding of %d bytes, over MaxBytes %d", worst, MaxBytes)
	}
	// The largest encoding there is: every bucket of every tier full of
	// the longest numbers.
	var full Ring
	for i, tr := range Tiers {
		full.tiers[i] = tier{end: 1 << 20, lag: repeatF(MaxValue-0.5, tr.Len), rows: repeatF(MaxValue-0.5, tr.Len), n: maxN}
	}
	if n := len(full.Encode()); n > MaxBytes {
		t.Fatalf("the largest ring encodes to %d bytes, over MaxBytes %d", n, MaxBytes)
	} else {
		t.Logf("largest possible encoding: %d bytes; random values over 42 h: at most %d", n, worst)
	}
}

func repeatF(x float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// TestSizePerTask measures the node a task costs after 24 hours at the
// default 15 s evaluation interval, for the tasks operators run: the
// sizes docs/monitor.md quotes.
func TestSizePerTask(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name      string
		lag, rows func() float64
		limit     int
	}{
		{"caught up, idle (lag 0, 0 rows/s)", func() float64 { return 0 }, func() float64 { return 0 }, 1500},
		{"busy (lag under 2 s, ~1,800 rows/s)", func() float64 { return rng.Float64() * 2 }, func() float64 { return 1500 + rng.Float64()*600 }, 3500},
		{"behind (lag of hours, 20,000 rows/s)", func() float64 { return 3600 + rng.Float64()*40000 }, func() float64 { return 15000 + rng.Float64()*10000 }, 4096},
		{"not running, lag growing, no rate", func() float64 { return 1e5 + rng.Float64()*1e5 }, func() float64 { return nan }, 3000},
	} {
		var r Ring
		for i := range 24 * 60 * 4 {
			r.Append(smp(time.Duration(i)*15*time.Second, tc.lag(), tc.rows()))
		}
		n := len(r.Encode())
		t.Logf("%s: %d bytes", tc.name, n)
		if n > tc.limit {
			t.Errorf("%s: %d bytes, want at most %d", tc.name, n, tc.limit)
		}
	}
}

// TestEncodeDecode: a decoded ring encodes to the same bytes, keeps the
// weight of the newest bucket's mean, and goes on appending.
func TestEncodeDecode(t *testing.T) {
	var r Ring
	r.Append(smp(0, 1.234, 100))
	r.Append(smp(10*time.Second, 0.5, 200))
	r.Append(smp(3*time.Minute, nan, 12345.678))
	r.Append(smp(3*time.Minute+10*time.Second, 2, 0))
	enc := r.Encode()
	d, err := Decode(enc)
	if err != nil {
		t.Fatalf("decode %s: %v", enc, err)
	}
	if again := d.Encode(); string(again) != string(enc) {
		t.Fatalf("re-encoded\n%s\nwant\n%s", again, enc)
	}
	if !strings.Contains(string(enc), `"lag":[1.23,null,null,2]`) || !strings.Contains(string(enc), `"rows":[150,null,null,6173]`) {
		t.Errorf("encoding %s", enc)
	}
	// The newest bucket is the mean of two samples (6173 as encoded): a
	// third weighs a third.
	d.Append(smp(3*time.Minute+20*time.Second, nan, 3))
	checkBuckets(t, d, 0, at(0), []bucket{{1.23, 150}, {nan, nan}, {nan, nan}, {2, (6173*2 + 3) / 3.0}})
	var empty Ring
	e, err := Decode(empty.Encode())
	if err != nil || string(e.Encode()) != string(empty.Encode()) {
		t.Fatalf("empty ring: %s, %v", empty.Encode(), err)
	}
}

// TestDecodeRefuses: whatever is not a ring Encode could have written
// is an error wrapping ErrBadSeries that says what is wrong.
func TestDecodeRefuses(t *testing.T) {
	var r Ring
	r.Append(smp(0, 1, 2))
	good := string(r.Encode())
	tier0 := `{"step":60,"end":29501234,"lag":[1],"rows":[2],"n":1}`
	tiers := func(first string) string {
		return `{"version":1,"tiers":[` + first + `,{"step":300,"end":1,"lag":[],"rows":[],"n":0},{"step":900,"end":1,"lag":[],"rows":[],"n":0}]}`
	}
	if _, err := Decode([]byte(tiers(tier0))); err != nil {
		t.Fatalf("the table's good document: %v", err)
	}
	for _, tc := range []struct{ in, says string }{
		{"", "EOF"},
		{"garbage", "invalid character"},
		{"\x00\xff\xfe", "invalid character"},
		{"null", "version 0"},
		{"[]", "cannot unmarshal array"},
		{`{}`, "version 0"},
		{strings.Replace(good, `"version":1`, `"version":2`, 1), "version 2"},
		{good + "{}", "data after"},
		{strings.Replace(good, `"n"`, `"extra":1,"n"`, 1), "unknown field"},
		{`{"version":1,"tiers":[]}`, "0 tiers"},
		{tiers(`{"step":30,"end":1,"lag":[],"rows":[],"n":0}`), "step 30 s, want 60"},
		{tiers(`{"step":60,"end":9,"lag":[1,2],"rows":[1],"n":0}`), "2 lags and 1 rates"},
		{tiers(`{"step":60,"end":99,"lag":[` + strings.Repeat("1,", 60) + `1],"rows":[` + strings.Repeat("1,", 60) + `1],"n":0}`), "61 buckets, at most 60"},
		{tiers(`{"step":60,"end":-1,"lag":[],"rows":[],"n":0}`), "end -1 out of range"},
		{tiers(`{"step":60,"end":99999999999999,"lag":[],"rows":[],"n":0}`), "out of range"},
		{tiers(`{"step":60,"end":0,"lag":[1,1],"rows":[1,1],"n":0}`), "end 0 out of range"},
		{tiers(`{"step":60,"end":9,"lag":[-1],"rows":[1],"n":0}`), "lag: value 0: -1 out of range"},
		{tiers(`{"step":60,"end":9,"lag":[1],"rows":[1e13],"n":0}`), "rows: value 0: 1e+13 out of range"},
		{tiers(`{"step":60,"end":9,"lag":[1e999],"rows":[1],"n":0}`), "cannot unmarshal"},
		{tiers(`{"step":60,"end":9,"lag":["NaN"],"rows":[1],"n":0}`), "cannot unmarshal string"},
		{tiers(`{"step":60,"end":9,"lag":[1],"rows":[1],"n":-4}`), "n -4 out of range"},
		{strings.Repeat(" ", MaxBytes+1), "over 8192"},
	} {
		_, err := Decode([]byte(tc.in))
		if !errors.Is(err, ErrBadSeries) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Decode(%.60q): %v; want ErrBadSeries saying %q", tc.in, err, tc.says)
		}
	}
}

// TestPoints: each span reads its tier; the points run from the oldest
// bucket in the span to the newest, unknown in the gaps.
func TestPoints(t *testing.T) {
	var r Ring
	for i := range 24 * 60 { // a sample a minute for a day, none in hour 20
		if d := time.Duration(i) * time.Minute; d/time.Hour != 20 {
			r.Append(smp(d, float64(i%5), 100))
		}
	}
	now := at(24*time.Hour - time.Second)
	for _, tc := range []struct {
		span  time.Duration
		step  time.Duration
		n     int
		first time.Time
	}{
		{time.Hour, time.Minute, 60, at(23 * time.Hour)},
		{30 * time.Minute, time.Minute, 30, at(23*time.Hour + 30*time.Minute)},
		{6 * time.Hour, 5 * time.Minute, 72, at(18 * time.Hour)},
		{24 * time.Hour, 15 * time.Minute, 96, at(0)},
	} {
		tr, pts, err := r.Points(tc.span, now)
		if err != nil || tr.Step != tc.step || len(pts) != tc.n || !pts[0].At.Equal(tc.first) {
			t.Fatalf("Points(%v): step %v, %d points from %v, %v; want step %v, %d from %v", tc.span, tr.Step, len(pts), first(pts), err, tc.step, tc.n, tc.first)
		}
		for i := 1; i < len(pts); i++ {
			if pts[i].At.Sub(pts[i-1].At) != tc.step {
				t.Fatalf("Points(%v): %v then %v", tc.span, pts[i-1].At, pts[i].At)
			}
		}
	}
	_, pts, _ := r.Points(6*time.Hour, now)
	for _, p := range pts {
		gap := p.At.Sub(t0)/time.Hour == 20
		if gap != (math.IsNaN(p.Lag) && math.IsNaN(p.Rows)) {
			t.Errorf("bucket %v: lag %v rows %v; hour 20 had no sample", p.At, p.Lag, p.Rows)
		}
		if !gap && (p.Lag != 4 || p.Rows != 100) {
			t.Errorf("bucket %v: lag %v rows %v, want the max 4 and the mean 100", p.At, p.Lag, p.Rows)
		}
	}
	// An hour later with no sample since: the last hour is empty.
	if _, pts, err := r.Points(time.Hour, now.Add(time.Hour)); err != nil || len(pts) != 0 {
		t.Errorf("an hour without samples: %d points, %v", len(pts), err)
	}
	for _, span := range []time.Duration{0, -time.Hour, 25 * time.Hour} {
		if _, _, err := r.Points(span, now); !errors.Is(err, ErrSpan) {
			t.Errorf("Points(%v): %v, want ErrSpan", span, err)
		}
	}
	var empty Ring
	if _, pts, err := empty.Points(time.Hour, now); err != nil || len(pts) != 0 {
		t.Errorf("an empty ring: %v, %v", pts, err)
	}
}

func first(pts []Point) time.Time {
	if len(pts) == 0 {
		return time.Time{}
	}
	return pts[0].At
}

// FuzzDecode: no input makes Decode panic, and a ring it accepts
// encodes to a document it decodes again to the same encoding.
func FuzzDecode(f *testing.F) {
	var r Ring
	r.Append(smp(0, 1, 2))
	r.Append(smp(5*time.Minute, nan, 7.5))
	f.Add(r.Encode())
	var empty Ring
	f.Add(empty.Encode())
	f.Add([]byte(`{"version":1,"tiers":[{"step":60,"end":9,"lag":[null],"rows":[1e12],"n":3},{"step":300,"end":1,"lag":[],"rows":[],"n":0},{"step":900,"end":1,"lag":[],"rows":[],"n":0}]}`))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Decode(data)
		if err != nil {
			return
		}
		enc := d.Encode()
		if len(enc) > MaxBytes {
			t.Fatalf("accepted %q, encodes to %d bytes", data, len(enc))
		}
		d2, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-decoding our encoding %s of %q: %v", enc, data, err)
		}
		if again := d2.Encode(); string(again) != string(enc) {
			t.Fatalf("encode/decode changed\n%s\n%s", enc, again)
		}
		d.Append(Sample{At: time.Unix(maxUnix, 0), Lag: 1, Rows: 1})
	})
}
