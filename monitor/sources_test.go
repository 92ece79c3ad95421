package monitor

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestSourceReadingsAreBounded: a source that hangs is cut at the reading
// timeout, a failed source is not read again until its backoff ends (its
// error standing in), a stopped task's source is read every
// stoppedReadEvery intervals, and once the evaluation's budget is spent no reading
// starts. The clock is the test's: every step is ordered, none timed.
func TestSourceReadingsAreBounded(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		admin := core.NewAdmin(s, "")
		snap := &cluster.Snapshot{}
		// task name → source account (user); "idle" is stopped.
		tasks := []struct{ name, user string }{{"up1", "u"}, {"up2", "u"}, {"down", "d"}, {"hang", "h"}, {"idle", "s"}}
		for _, task := range tasks {
			state := core.DesiredRunning
			if task.name == "idle" {
				state = core.DesiredStopped
			}
			sp := &core.Spec{Name: task.name, Version: core.SpecVersion, State: state, Start: core.StartCurrent,
				Source:  core.SourceEndpoint{Endpoint: core.Endpoint{Host: "127.0.0.1", Port: 1, User: task.user, Flavor: core.FlavorMySQL}},
				Target:  core.TargetEndpoint{Endpoint: core.Endpoint{Host: "127.0.0.1", Port: 2, User: "u", Flavor: core.FlavorMySQL}},
				Standby: core.Standby{Mode: core.ModeHot}}
			if err := admin.AddTask(ctx, sp, false); err != nil {
				t.Fatal(err)
			}
			snap.Tasks = append(snap.Tasks, core.TaskStatus{Name: task.name, Spec: sp.Redacted()})
		}
		var mu sync.Mutex
		reads := map[string]int{}
		deps := Deps{Session: s, Feed: cluster.NewFixed(snap), Logger: coordtest.Logger(t),
			ReadSource: func(ctx context.Context, ep core.Endpoint, _ string, now time.Time) SourceReading {
				mu.Lock()
				reads[ep.User]++
				mu.Unlock()
				switch ep.User {
				case "d":
					return SourceReading{At: now, Err: "connection refused"}
				case "h": // hangs until the monitor gives up on it
					select {
					case <-ctx.Done():
						return SourceReading{At: now, Err: ctx.Err().Error()}
					case <-time.After(time.Minute):
						return SourceReading{At: now, Err: "the monitor did not bound this reading"}
					}
				}
				return SourceReading{At: now, Logs: []BinlogFile{{Name: "bin.000001", Size: 4}}}
			}}
		m, err := New(DefaultConfig(), deps)
		if err != nil {
			t.Fatal(err)
		}
		m.sources.timeout = 50 * time.Millisecond
		interval := DefaultConfig().Interval

		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		step := func(at time.Duration, want map[string]int) map[string]SourceReading {
			t.Helper()
			got, _ := m.readSources(ctx, snap, t0.Add(at))
			mu.Lock()
			defer mu.Unlock()
			for user, n := range want {
				if reads[user] != n {
					t.Fatalf("at +%v: readings by account %v, want %v", at, reads, want)
				}
			}
			if len(got) != len(tasks) {
				t.Fatalf("at +%v: %d readings, want %d: %v", at, len(got), len(tasks), got)
			}
			return got
		}
		got := step(0, map[string]int{"u": 1, "d": 1, "h": 1, "s": 1})
		if !strings.Contains(got["hang"].Err, context.DeadlineExceeded.Error()) || got["up1"].Err != "" || got["idle"].Err != "" {
			t.Fatalf("first readings: %+v", got)
		}
		// Within the interval: the failed ones wait, the stopped one is recent.
		got = step(time.Second, map[string]int{"u": 2, "d": 1, "h": 1, "s": 1})
		if e := got["down"].Err; !strings.Contains(e, "connection refused") || !strings.Contains(e, "read again after") {
			t.Fatalf("a failed source in its backoff reads %q; want its error and when it is read again", e)
		}
		// The next evaluation skips them; two intervals on, they are read
		// again, and the second failure doubles the wait.
		step(interval, map[string]int{"u": 3, "d": 1, "h": 1, "s": 1})
		step(2*interval, map[string]int{"u": 4, "d": 2, "h": 2, "s": 1})
		step(2*interval+3*interval, map[string]int{"u": 5, "d": 2, "h": 2, "s": 1})
		step(m.sources.stoppedAge+time.Second, map[string]int{"u": 6, "d": 3, "h": 3, "s": 2})

		// The budget spent, nothing more is read (the stopped task's recent
		// reading still stands).
		m.sources.budget = 0
		got = step(m.sources.stoppedAge+2*time.Second, map[string]int{"u": 6, "d": 3, "h": 3, "s": 2})
		for _, task := range []string{"up1", "up2", "down", "hang"} {
			if got[task].Err != errBudgetSpent.Error() {
				t.Errorf("task %s with the budget spent: %+v, want %q", task, got[task], errBudgetSpent)
			}
		}
		if got["idle"].Err != "" || len(got["idle"].Logs) != 1 {
			t.Errorf("the stopped task's reading with the budget spent: %+v, want its last one", got["idle"])
		}
	})
}

func TestReadBudgetEndsBeforeTheInterval(t *testing.T) {
	for _, tc := range []struct{ interval, want time.Duration }{
		{15 * time.Second, 9 * time.Second},
		{time.Minute, 54 * time.Second},
		{8 * time.Second, 4 * time.Second},
		{time.Second, 2 * time.Second},
	} {
		if got := readBudget(tc.interval); got != tc.want {
			t.Errorf("readBudget(%v) = %v, want %v", tc.interval, got, tc.want)
		}
	}
}
