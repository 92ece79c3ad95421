package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/monitor/series"
)

// seriesRig is a series writer on its own term node, with its writes
// counted and a clock the test moves.
type seriesRig struct {
	t      *testing.T
	s      *recipe.Session
	w      *seriesWriter
	term   string
	writes int
	now    time.Time
}

func newSeriesRig(t *testing.T, s *recipe.Session, term string) *seriesRig {
	t.Helper()
	if _, err := s.Create(context.Background(), term, nil, zk.FlagPersistent, nil); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	r := &seriesRig{t: t, s: s, term: term, now: time.Date(2026, 11, 25, 12, 0, 5, 0, time.UTC)}
	r.w = newSeriesWriter(s, slog.New(slog.DiscardHandler), func() { r.writes++ })
	return r
}

// evaluate records one evaluation of tasks at the rig's clock, then
// moves it on by step.
func (r *seriesRig) evaluate(step time.Duration, tasks ...core.TaskStatus) error {
	err := r.w.record(context.Background(), r.term, &Input{Now: r.now, Snap: &cluster.Snapshot{ReadAt: r.now, Tasks: tasks}})
	r.now = r.now.Add(step)
	return err
}

func (r *seriesRig) mustEvaluate(step time.Duration, tasks ...core.TaskStatus) {
	r.t.Helper()
	if err := r.evaluate(step, tasks...); err != nil {
		r.t.Fatal(err)
	}
}

// running is a task whose owner applies rows/s with lag (seconds).
func running(name string, lag, rows float64) core.TaskStatus {
	ts := task(name, core.StateRunning)
	ts.Instances[0].State.LagSeconds, ts.Instances[0].State.RowsPerSecond = lag, rows
	return ts
}

func stopped(name string) core.TaskStatus {
	ts := task(name)
	ts.Spec.State = core.DesiredStopped
	return ts
}

// readSeries reads a task's stored series, failing the test on an error.
func readSeries(t *testing.T, s *recipe.Session, name string) (*series.Ring, bool) {
	t.Helper()
	r, _, found, err := ReadSeries(context.Background(), s, name)
	if err != nil {
		t.Fatalf("read the series of %s: %v", name, err)
	}
	return r, found
}

// lags are the known lags of the last hour before now of a series.
func lags(t *testing.T, r *series.Ring, now time.Time) []float64 {
	t.Helper()
	_, pts, err := r.Points(time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, p := range pts {
		out = append(out, p.Lag)
	}
	return out
}

func sameValues(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

// TestSeriesIdleTasksCostNothing: with 3,000 stopped tasks and one
// running, only the running task's series is read and written — at its
// first sample and then once a minute, not at every evaluation; when it
// stops, once more with what was not yet stored, then never; a task
// leaving the snapshot takes its series with it.
func TestSeriesIdleTasksCostNothing(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		rig := newSeriesRig(t, s, "/term-a")
		tasks := []core.TaskStatus{running("orders", 2, 100)}
		for i := range 3000 {
			tasks = append(tasks, stopped(fmt.Sprintf("idle-%04d", i)))
		}
		for range 12 { // 12:00:05 to 12:02:50, 15 s apart: three minutes
			rig.mustEvaluate(15*time.Second, tasks...)
		}
		if rig.writes != 3 {
			t.Errorf("%d writes over 12 evaluations in 3 minutes, want 3 (one a minute)", rig.writes)
		}
		if len(rig.w.tasks) != 1 {
			t.Errorf("%d series in memory, want the running task's alone", len(rig.w.tasks))
		}
		kids, _, err := s.Children(context.Background(), SeriesPath)
		if err != nil || len(kids) != 1 || kids[0] != "orders" {
			t.Fatalf("series nodes %v (%v), want orders alone", kids, err)
		}
		r, _ := readSeries(t, s, "orders")
		if got := lags(t, r, rig.now); !sameValues(got, []float64{2, 2, 2}) { // the third minute's first sample
			t.Errorf("stored lags %v, want 2 in each of three minutes", got)
		}

		// It stops: the rest of its third minute is stored, once.
		tasks[0] = stopped("orders")
		for range 8 {
			rig.mustEvaluate(15*time.Second, tasks...)
		}
		if rig.writes != 4 {
			t.Errorf("%d writes after the task stopped, want 4: one more with its last samples", rig.writes)
		}
		// Deleted: its series goes, the stopped tasks still cost nothing.
		rig.mustEvaluate(15*time.Second, tasks[1:]...)
		if ok, _, err := s.Exists(context.Background(), SeriesPath+"/orders"); err != nil || ok {
			t.Fatalf("the series of a deleted task: exists %v, %v", ok, err)
		}
		if rig.writes != 4 || len(rig.w.tasks) != 0 {
			t.Errorf("%d writes, %d series in memory; want 4 and none", rig.writes, len(rig.w.tasks))
		}
	})
}

// TestSeriesContinuesAcrossTerms: a monitor that takes over continues
// the series its predecessor stored; the predecessor, its term over,
// can no longer write.
func TestSeriesContinuesAcrossTerms(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		a := newSeriesRig(t, s, "/term-a")
		for i := range 3 { // 12:00, 12:01, 12:02
			a.mustEvaluate(time.Minute, running("orders", float64(i+1), 10))
		}
		if err := s.Delete(context.Background(), a.term, -1); err != nil {
			t.Fatal(err)
		}
		if err := a.evaluate(time.Minute, running("orders", 9, 10)); err == nil {
			t.Fatal("a monitor whose term ended wrote a series")
		}
		b := newSeriesRig(t, dial(t, connect, recipe.Options{Auth: coordtest.Auth}), "/term-b")
		b.now = a.now
		b.mustEvaluate(time.Minute, running("orders", 4, 10)) // 12:04
		r, _ := readSeries(t, s, "orders")
		if got, want := lags(t, r, b.now), []float64{1, 2, 3, math.NaN(), 4}; !sameValues(got, want) {
			t.Fatalf("lags after the takeover %v, want %v: the predecessor's three minutes, a gap, the successor's", got, want)
		}
	})
}

// TestSeriesNodesNotTheMonitorsAreReplaced: a series node anyone may
// write is refused by readers (ErrUntrusted) and one that does not
// decode is an error naming ErrBadSeries; the active monitor replaces
// each at the task's next sample.
func TestSeriesNodesNotTheMonitorsAreReplaced(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		if err := s.EnsurePath(ctx, SeriesPath); err != nil {
			t.Fatal(err)
		}
		var forged series.Ring
		forged.Append(series.Sample{At: time.Now(), Lag: 0, Rows: 1})
		if _, err := s.Create(ctx, SeriesPath+"/open", forged.Encode(), zk.FlagPersistent, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, SeriesPath+"/garbled", []byte(`{"version":1,"tiers":"x"}`), zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := ReadSeries(ctx, s, "open"); !errors.Is(err, recipe.ErrUntrusted) {
			t.Errorf("a node anyone may write: %v, want ErrUntrusted", err)
		}
		if _, _, _, err := ReadSeries(ctx, s, "garbled"); !errors.Is(err, series.ErrBadSeries) {
			t.Errorf("a node that does not decode: %v, want ErrBadSeries", err)
		}
		if _, _, _, err := ReadSeries(ctx, s, ".."); !errors.Is(err, ErrSeriesName) {
			t.Errorf("task name ..: %v, want ErrSeriesName", err)
		}
		rig := newSeriesRig(t, s, "/term-a")
		rig.mustEvaluate(time.Minute, running("open", 7, 1), running("garbled", 8, 1))
		for name, lag := range map[string]float64{"open": 7, "garbled": 8} {
			r, found := readSeries(t, s, name)
			if got := lags(t, r, rig.now); !found || !sameValues(got, []float64{lag}) {
				t.Errorf("%s after the monitor's sample: lags %v (found %v), want [%v] alone", name, got, found, lag)
			}
		}
	})
}

// TestTaskSampleIsTheTaskView: the series records what cluster.ViewTask
// says, as the task page and ctl show it: the owner's lag and rate while
// it runs, no lag for a stopped task, no rate without an owner applying.
func TestTaskSampleIsTheTaskView(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name      string
		ts        core.TaskStatus
		lag, rows float64
	}{
		{"running", running("a", 1.5, 300), 1.5, 300},
		{"retrying", func() core.TaskStatus {
			ts := running("a", 1.5, 300)
			ts.Instances[0].State.Error = "target unreachable"
			return ts
		}(), math.NaN(), 0},
		{"stopped", stopped("a"), math.NaN(), math.NaN()},
		{"no core", task("a"), math.NaN(), math.NaN()},
		{"standby only", task("a", core.StateStandby), math.NaN(), math.NaN()},
	} {
		s := TaskSample(tc.ts, nil, now)
		if !sameValues([]float64{s.Lag, s.Rows}, []float64{tc.lag, tc.rows}) || !s.At.Equal(now) {
			t.Errorf("%s: lag %v rows %v, want %v %v", tc.name, s.Lag, s.Rows, tc.lag, tc.rows)
		}
	}
}

// TestMonitorRecordsSeries: the active monitor records its tasks'
// series as it evaluates (none for a stopped task), and a monitor that
// restarts keeps what was stored.
func TestMonitorRecordsSeries(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		feed := cluster.NewFixed(&cluster.Snapshot{ReadAt: time.Now(), Tasks: []core.TaskStatus{running("orders", 3, 250), stopped("idle")}})
		cfg := testConfig(newReceiver(t))
		_, stop := startMonitor(t, dial(t, connect, recipe.Options{Auth: coordtest.Auth}), feed, cfg, Deps{})
		var first time.Time
		coordtest.WaitFor(t, 20*time.Second, "the series of orders", func() error {
			r, _, found, err := ReadSeries(context.Background(), s, "orders")
			if err != nil || !found {
				return fmt.Errorf("found %v, %v", found, err)
			}
			_, pts, err := r.Points(time.Hour, time.Now())
			if err != nil || len(pts) == 0 || pts[len(pts)-1].Lag != 3 || pts[len(pts)-1].Rows != 250 {
				return fmt.Errorf("points %+v, %v", pts, err)
			}
			first = pts[0].At
			return nil
		})
		stop()
		m2, _ := startMonitor(t, dial(t, connect, recipe.Options{Auth: coordtest.Auth}), feed, cfg, Deps{})
		waitEvaluations(t, m2, 2)
		r, _ := readSeries(t, s, "orders")
		if _, pts, err := r.Points(time.Hour, time.Now()); err != nil || len(pts) == 0 || !pts[0].At.Equal(first) || pts[0].Lag != 3 {
			t.Fatalf("after the restart: %+v, %v; want the stored series from %v kept", pts, err, first)
		}
		if ok, _, err := s.Exists(context.Background(), SeriesPath+"/idle"); err != nil || ok {
			t.Errorf("a stopped task has a series node: %v, %v", ok, err)
		}
	})
}
