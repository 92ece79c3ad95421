package server

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/shepherd-dev/shepherd/monitor"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// The plots' data: a task's lag and rows/s as the active monitor stores
// them (monitor.ReadSeries: the coordination tree, so they survive a
// restart of the console, of the monitor and of `shepherd up`), and a
// job's run durations from the run history the scheduler keeps.

// plotRanges are the ranges the plots offer, by their query value.
var plotRanges = map[string]time.Duration{"1h": time.Hour, "6h": 6 * time.Hour, "24h": 24 * time.Hour}

// plotRange reads the range query parameter; 1h when absent.
func plotRange(r *http.Request) (string, time.Duration, error) {
	name := cmp.Or(r.URL.Query().Get("range"), "1h")
	d, ok := plotRanges[name]
	if !ok {
		return "", 0, errorf(http.StatusBadRequest, "invalid", fmt.Sprintf("range %q: want 1h, 6h or 24h", name))
	}
	return name, d, nil
}

// seriesAnswer is GET /api/v1/tasks/{task}/series.
type seriesAnswer struct {
	Task  string    `json:"task"`
	Range string    `json:"range"`
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	// Step is the width of a point's bucket, in seconds.
	Step   int64             `json:"step"`
	Units  map[string]string `json:"units"`
	Points []seriesPoint     `json:"points"`
	// Written is when the active monitor last stored the series; absent
	// when it never has.
	Written *time.Time `json:"written,omitempty"`
}

// seriesPoint is one bucket; null is unknown (a gap in the plot).
type seriesPoint struct {
	T    int64    `json:"t"`
	Lag  *float64 `json:"lag"`
	Rows *float64 `json:"rowsPerSecond"`
}

var seriesUnits = map[string]string{
	"t":             "unix seconds: the start of the bucket",
	"lag":           "seconds: the largest lag in the bucket",
	"rowsPerSecond": "rows per second: the mean over the bucket",
}

func orNull(x float64) *float64 {
	if math.IsNaN(x) {
		return nil
	}
	return &x
}

// taskExists returns nil for a task of the snapshot or of the tree now
// (one newer than the snapshot), core.ErrNoTask otherwise.
func (s *Server) taskExists(ctx context.Context, name string) error {
	if snap, err := s.snapshot(); err == nil {
		if _, ok := snap.Task(name); ok {
			return nil
		}
	}
	_, err := s.tasks.Task(ctx, name)
	return err
}

func (s *Server) apiTaskSeries(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("task")
	rng, span, err := plotRange(r)
	if err != nil {
		return err
	}
	if err := s.taskExists(r.Context(), name); err != nil {
		return err
	}
	ring, written, found, err := monitor.ReadSeries(r.Context(), s.deps.Session, name)
	if err != nil {
		return err
	}
	now := s.deps.Now().UTC()
	tier, pts, err := ring.Points(span, now)
	if err != nil {
		return err
	}
	out := seriesAnswer{Task: name, Range: rng, From: now.Add(-span), To: now, Step: int64(tier.Step / time.Second),
		Units: seriesUnits, Points: make([]seriesPoint, len(pts))}
	for i, pt := range pts {
		out.Points[i] = seriesPoint{T: pt.At.Unix(), Lag: orNull(pt.Lag), Rows: orNull(pt.Rows)}
	}
	if found {
		out.Written = &written
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// durationsAnswer is GET /api/v1/jobs/{job}/durations.
type durationsAnswer struct {
	Job   string            `json:"job"`
	Range string            `json:"range"`
	From  time.Time         `json:"from"`
	To    time.Time         `json:"to"`
	Units map[string]string `json:"units"`
	Runs  []durationPoint   `json:"runs"`
}

// durationPoint is one finished run.
type durationPoint struct {
	RunKey   string  `json:"runKey"`
	T        int64   `json:"t"`
	Duration float64 `json:"duration"`
	Status   string  `json:"status"`
	Host     string  `json:"host,omitempty"`
}

var durationUnits = map[string]string{
	"t":        "unix seconds: when the run started",
	"duration": "seconds: from its start to its end",
}

// maxDurationPoints bounds an answer: the newest are kept.
const maxDurationPoints = 2000

// runDurations are the finished runs of runs that started within
// [from, to], oldest first: at most maxDurationPoints, the newest.
func runDurations(runs []scheduler.RunInfo, from, to time.Time) []durationPoint {
	out := []durationPoint{}
	for _, ri := range runs {
		res := ri.Result
		if res == nil || res.Start.IsZero() || res.End.Before(res.Start) || res.Start.Before(from) || res.Start.After(to) {
			continue
		}
		out = append(out, durationPoint{RunKey: ri.RunKey, T: res.Start.Unix(), Duration: res.End.Sub(res.Start).Seconds(),
			Status: string(res.Status), Host: res.Host})
	}
	slices.SortStableFunc(out, func(a, b durationPoint) int { return cmp.Compare(a.T, b.T) })
	if over := len(out) - maxDurationPoints; over > 0 {
		out = out[over:]
	}
	return out
}

func (s *Server) apiJobDurations(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("job")
	rng, span, err := plotRange(r)
	if err != nil {
		return err
	}
	if _, err := s.job(r.Context(), name); err != nil {
		return err
	}
	runs, err := scheduler.NewAdmin(s.deps.Session).Runs(r.Context(), name)
	if err != nil {
		return err
	}
	now := s.deps.Now().UTC()
	writeJSON(w, http.StatusOK, durationsAnswer{Job: name, Range: rng, From: now.Add(-span), To: now, Units: durationUnits,
		Runs: runDurations(runs, now.Add(-span), now)})
	return nil
}
