package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/monitor"
	"github.com/shepherd-dev/shepherd/monitor/series"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// TestRunDurations: a job's plot has the finished runs that started in
// the range, oldest first, with their duration in seconds; runs without
// a start or an end, and those outside the range, are left out.
func TestRunDurations(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	run := func(key string, start, took time.Duration, st scheduler.Status) scheduler.RunInfo {
		res := &scheduler.Result{RunKey: key, Status: st, Start: now.Add(start), End: now.Add(start + took), Host: "h1"}
		return scheduler.RunInfo{RunKey: key, Result: res}
	}
	runs := []scheduler.RunInfo{
		run("late", -10*time.Minute, 90*time.Second, scheduler.Failed),
		run("early", -50*time.Minute, 1500*time.Millisecond, scheduler.Succeeded),
		run("before-the-range", -2*time.Hour, time.Second, scheduler.Succeeded),
		{RunKey: "running", Running: true},
		{RunKey: "missed", Result: &scheduler.Result{Status: scheduler.Missed}},
		{RunKey: "no-end", Result: &scheduler.Result{Status: scheduler.Abandoned, Start: now.Add(-time.Minute)}},
	}
	got := runDurations(runs, now.Add(-time.Hour), now)
	want := []durationPoint{
		{RunKey: "early", T: now.Add(-50 * time.Minute).Unix(), Duration: 1.5, Status: "succeeded", Host: "h1"},
		{RunKey: "late", T: now.Add(-10 * time.Minute).Unix(), Duration: 90, Status: "failed", Host: "h1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("durations %+v, want %+v", got, want)
	}
	many := make([]scheduler.RunInfo, maxDurationPoints+5)
	for i := range many {
		many[i] = run(fmt.Sprint(i), time.Duration(i-len(many))*time.Second, time.Second, scheduler.Succeeded)
	}
	if got := runDurations(many, now.Add(-time.Hour), now); len(got) != maxDurationPoints || got[0].RunKey != "5" {
		t.Fatalf("%d points from %q, want the newest %d", len(got), got[0].RunKey, maxDurationPoints)
	}
}

// seriesJSON is the series answer as a client decodes it.
type seriesJSON struct {
	Task   string            `json:"task"`
	Range  string            `json:"range"`
	Step   int64             `json:"step"`
	Units  map[string]string `json:"units"`
	From   time.Time         `json:"from"`
	To     time.Time         `json:"to"`
	Points []struct {
		T    int64    `json:"t"`
		Lag  *float64 `json:"lag"`
		Rows *float64 `json:"rowsPerSecond"`
	} `json:"points"`
	Written *time.Time `json:"written"`
}

func getSeries(t *testing.T, cl *client, task, rng string) seriesJSON {
	t.Helper()
	st, body := cl.do("GET", "/api/v1/tasks/"+task+"/series?range="+rng, nil, nil)
	if st != http.StatusOK {
		t.Fatalf("GET series of %s (%s): %d %s", task, rng, st, body)
	}
	var out seriesJSON
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("series answer %s: %v", body, err)
	}
	return out
}

// runMonitor runs a monitor of the cluster at connect on its own session
// with feed, its sources not read (none in these tests); stop ends it and
// waits.
func runMonitor(t *testing.T, connect string, feed cluster.Feed) (stop func()) {
	t.Helper()
	cfg := monitor.DefaultConfig()
	cfg.Name, cfg.Interval = fmt.Sprintf("monitor-%d", time.Now().UnixNano()), 100*time.Millisecond
	m, err := monitor.New(cfg, monitor.Deps{Session: dial(t, connect, coordtest.Auth), Feed: feed, Logger: slog.New(slog.DiscardHandler),
		ReadSource: func(ctx context.Context, ep core.Endpoint, pw string, now time.Time) monitor.SourceReading {
			return monitor.SourceReading{At: now, Err: "no source in this test"}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := m.Run(ctx); err != nil {
			t.Errorf("monitor: %v", err)
		}
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// runningOrders is task orders of the tree with a RUNNING owner that
// reports lag seconds behind and rows per second.
func runningOrders(t *testing.T, c *console, lag, rows float64) *Snapshot {
	t.Helper()
	ts, err := c.admin.Task(context.Background(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	ts.Instances = []core.Instance{{Name: "core1-0000000001", State: core.InstanceState{State: core.StateRunning, Host: "core1", LagSeconds: lag, RowsPerSecond: rows}}}
	return &Snapshot{ReadAt: time.Now(), Tasks: []core.TaskStatus{ts}}
}

// TestSeriesSurviveAConsoleRestart: the lag and rows/s a real monitor
// records for a running task are served by the console's API with their
// units; after the console and the monitor both stop, a new console
// serves the same points: they live in the coordination tree, not in a
// process.
func TestSeriesSurviveAConsoleRestart(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		c := startConsole(t, tg, nil)
		c.addOrders()
		c.refresh()
		stopMonitor := runMonitor(t, c.connect, cluster.NewFixed(runningOrders(t, c, 4.5, 321)))
		viewer := c.as("viewer")
		var first seriesJSON
		coordtest.WaitFor(t, 20*time.Second, "the monitor's series of orders in the API", func() error {
			first = getSeries(t, viewer, "orders", "1h")
			n := len(first.Points)
			if n == 0 || first.Points[n-1].Lag == nil || *first.Points[n-1].Lag != 4.5 || first.Points[n-1].Rows == nil || *first.Points[n-1].Rows != 321 {
				return fmt.Errorf("answer %+v", first)
			}
			return nil
		})
		if first.Task != "orders" || first.Range != "1h" || first.Step != 60 || first.Written == nil || first.To.Sub(first.From) != time.Hour ||
			!strings.HasPrefix(first.Units["lag"], "seconds") || !strings.HasPrefix(first.Units["rowsPerSecond"], "rows per second") || !strings.HasPrefix(first.Units["t"], "unix seconds") {
			t.Errorf("answer %+v", first)
		}
		for _, rng := range []string{"6h", "24h"} {
			if got := getSeries(t, viewer, "orders", rng); len(got.Points) == 0 || got.Step != map[string]int64{"6h": 300, "24h": 900}[rng] {
				t.Errorf("range %s: %+v", rng, got)
			}
		}
		stopMonitor()
		stored := getSeries(t, viewer, "orders", "1h") // after the monitor's last write
		c.http.Close()

		again := startConsoleOn(t, c)
		after := getSeries(t, again.as("viewer"), "orders", "1h")
		if !reflect.DeepEqual(after.Points, stored.Points) || !after.Written.Equal(*stored.Written) {
			t.Fatalf("after the restarts: %+v\nbefore: %+v", after, stored)
		}
	})
}

// TestSeriesAPIRefusesWhatItCannotTrust: a range the plots do not offer
// and an unknown task are refused with the reason; a stored series that
// does not decode is 502 bad_series, one another identity could have
// written is refused and recorded as a security event; the job
// durations answer the runs with their duration.
func TestSeriesAPIRefusesWhatItCannotTrust(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	c.addOrders()
	c.refresh()
	viewer := c.as("viewer")
	ctx := context.Background()
	for _, tc := range []struct {
		path string
		st   int
		says string
	}{
		{"/api/v1/tasks/orders/series?range=2h", http.StatusBadRequest, `range \"2h\": want 1h, 6h or 24h`},
		{"/api/v1/tasks/nope/series", http.StatusNotFound, "nope"},
		{"/api/v1/jobs/nope/durations", http.StatusNotFound, "nope"},
		{"/api/v1/jobs/report/durations?range=1d", http.StatusBadRequest, "want 1h, 6h or 24h"},
	} {
		if st, body := viewer.do("GET", tc.path, nil, nil); st != tc.st || !strings.Contains(body, tc.says) {
			t.Errorf("GET %s: %d %s; want %d saying %q", tc.path, st, body, tc.st, tc.says)
		}
	}
	// No monitor yet: no points, and no error.
	if got := getSeries(t, viewer, "orders", "1h"); len(got.Points) != 0 || got.Written != nil {
		t.Errorf("before any monitor: %+v", got)
	}
	if err := c.session.EnsurePath(ctx, monitor.SeriesPath); err != nil {
		t.Fatal(err)
	}
	if _, err := c.session.Create(ctx, monitor.SeriesPath+"/orders", []byte(`{"version":1,"tiers":[]}`), zk.FlagPersistent, nil); err != nil {
		t.Fatal(err)
	}
	st, body := viewer.do("GET", "/api/v1/tasks/orders/series", nil, nil)
	if st != http.StatusBadGateway || errorCode(body) != "bad_series" || !strings.Contains(body, "0 tiers, want 3") {
		t.Errorf("a series that does not decode: %d %s", st, body)
	}
	var r series.Ring
	r.Append(series.Sample{At: time.Now(), Lag: 0, Rows: 1})
	if _, err := c.session.Set(ctx, monitor.SeriesPath+"/orders", r.Encode(), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.session.SetACL(ctx, monitor.SeriesPath+"/orders", zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	st, body = viewer.do("GET", "/api/v1/tasks/orders/series", nil, nil)
	if st/100 != 5 || !strings.Contains(body, "series of task orders") || strings.Contains(body, `"points"`) {
		t.Errorf("a series anyone may write: %d %s", st, body)
	}
	st, body = c.as("admin").do("GET", "/api/v1/audit?stream=security", nil, nil)
	if st != http.StatusOK || !strings.Contains(body, "untrusted_node") || !strings.Contains(body, "/series/orders") {
		t.Errorf("security stream: %d %s", st, body)
	}

	// A job's durations, from the results its scheduler wrote.
	if err := scheduler.NewAdmin(c.session).StoreJob(ctx, scheduler.Job{Name: "report", Schedule: "@hourly", Command: "/bin/true"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-20 * time.Minute).Truncate(time.Second).UTC()
	for i, st := range []scheduler.Status{scheduler.Succeeded, scheduler.Failed} {
		key := fmt.Sprintf("manual-2026-11-25T13:0%d:00.000Z", i)
		res, _ := json.Marshal(scheduler.Result{Version: 1, Job: "report", RunKey: key, Status: st, Scheduled: start,
			Start: start.Add(time.Duration(i) * time.Minute), End: start.Add(time.Duration(i)*time.Minute + time.Duration(i+1)*1500*time.Millisecond)})
		if err := c.session.EnsurePath(ctx, scheduler.RunPath("report", key)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.session.Create(ctx, scheduler.ResultPath("report", key), res, zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
	}
	st, body = viewer.do("GET", "/api/v1/jobs/report/durations?range=6h", nil, nil)
	var d durationsAnswer
	if err := json.Unmarshal([]byte(body), &d); st != http.StatusOK || err != nil {
		t.Fatalf("durations: %d %s (%v)", st, body, err)
	}
	if len(d.Runs) != 2 || d.Runs[0].Duration != 1.5 || d.Runs[0].Status != "succeeded" || d.Runs[1].Duration != 3 || d.Runs[1].Status != "failed" ||
		d.Runs[0].T != start.Unix() || d.Range != "6h" || !strings.HasPrefix(d.Units["duration"], "seconds") {
		t.Errorf("durations %+v", d)
	}
	if math.Abs(d.To.Sub(d.From).Hours()-6) > 1e-9 {
		t.Errorf("durations range %v to %v", d.From, d.To)
	}
}
