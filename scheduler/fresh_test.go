package scheduler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

func TestParseCaughtUpTo(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"", 0, false},
		{"scheduled", 0, false},
		{"scheduled+5m", 5 * time.Minute, false},
		{"scheduled-1h30m", -90 * time.Minute, false},
		{"scheduled+", 0, true},
		{"scheduled++5m", 0, true},
		{"scheduled+-5m", 0, true},
		{"scheduled5m", 0, true},
		{"now", 0, true},
		{"scheduled+5 minutes", 0, true},
	} {
		got, err := ParseCaughtUpTo(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseCaughtUpTo(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestParseDependency: the text form of ctl's --after and the console's
// form reads back what String writes.
func TestParseDependency(t *testing.T) {
	for in, want := range map[string]Dependency{
		"extract":                         {Job: "extract"},
		"task:copy_hot_item":              {Task: "copy_hot_item"},
		"task:copy_hot_item@scheduled+5m": {Task: "copy_hot_item", CaughtUpTo: "scheduled+5m"},
	} {
		d, err := ParseDependency(in)
		if err != nil || d != want || d.String() != in {
			t.Errorf("ParseDependency(%q) = %+v, %v (String %q); want %+v", in, d, err, d.String(), want)
		}
	}
	for _, in := range []string{"task:x@", "task:x@yesterday", "task:x@scheduled+1h@scheduled"} {
		if _, err := ParseDependency(in); !errors.Is(err, ErrInvalidJob) {
			t.Errorf("ParseDependency(%q): %v, want ErrInvalidJob", in, err)
		}
	}
}

// TestValidateGates: freshness gates are checked like upstream jobs,
// errors naming the entry's field, and take no part in cycles or the
// upstream variables.
func TestValidateGates(t *testing.T) {
	for _, tt := range []struct {
		name  string
		after []Dependency
		want  string // empty: valid
	}{
		{"valid", []Dependency{{Job: "extract"}, {Task: "copy", CaughtUpTo: "scheduled+5m"}, {Task: "load"}}, ""},
		{"both", []Dependency{{Job: "a", Task: "copy"}}, "after[0].task: give job or task, not both"},
		{"caughtUpTo alone", []Dependency{{CaughtUpTo: "scheduled"}}, "after[0].task: missing"},
		{"bad time", []Dependency{{Task: "copy", CaughtUpTo: "noon"}}, `after[0].caughtUpTo: "noon"`},
		{"bad name", []Dependency{{Task: "a/b"}}, `after[0].task: "a/b"`},
		{"twice", []Dependency{{Task: "copy"}, {Task: "copy", CaughtUpTo: "scheduled+1m"}}, `after[1].task: "copy" is listed twice`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := Job{Name: "load", Schedule: "@daily", Command: "true", After: tt.after}
			err := j.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	// A task named like a job is no dependency on that job.
	jobs := []Job{
		{Name: "a", Schedule: "@daily", Command: "true", After: []Dependency{{Task: "b"}}},
		{Name: "b", Schedule: "@daily", Command: "true", After: []Dependency{{Job: "a"}}},
	}
	if err := CheckCycles(jobs); err != nil {
		t.Errorf("CheckCycles: %v; a gate on task b is no edge to job b", err)
	}
	g := BuildGraph(jobs)
	if i := slices.IndexFunc(g.Jobs, func(j GraphJob) bool { return j.Name == "a" }); i < 0 || !slices.Equal(g.Jobs[i].Gates, []string{"task:b"}) || len(g.Jobs[i].After) != 0 {
		t.Errorf("graph %+v: want job a with gate task:b and no upstream job", g)
	}
}

// fakeFreshness answers gates as a test says: every gate is reached once
// open is called, with the goal it chose at the first answer.
type fakeFreshness struct {
	mu      sync.Mutex
	reached bool
	changed chan struct{} // closed and replaced at each change
	calls   []freshCall
}

type freshCall struct {
	task, mark string
	at         time.Time
}

func newFakeFreshness() *fakeFreshness { return &fakeFreshness{changed: make(chan struct{})} }

func (f *fakeFreshness) Fresh(_ context.Context, task string, at time.Time, mark string) (FreshAnswer, <-chan struct{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, freshCall{task, mark, at})
	ans := FreshAnswer{Target: "mysql-bin.000001:100", Mark: "goal-of-" + task, Position: "mysql-bin.000001:4", Why: "task is STOPPED"}
	if f.reached {
		ans.Position, ans.Reached, ans.Why = ans.Target, true, ""
	}
	return ans, f.changed, nil
}

func (f *fakeFreshness) open() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reached = true
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeFreshness) seen() []freshCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// TestFreshnessGate: a run of a job with a freshness gate waits, shown
// WAITING with the gate's goal and why it is not reached, and starts once
// the gate is reached, never before; its result records the position the
// task's target reached. The goal chosen first is the one asked again.
// A gate never reached makes the run missed at its starting deadline,
// saying so, as does a scheduler that cannot read tasks.
func TestFreshnessGate(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		out := filepath.Join(t.TempDir(), "effects")
		report := appendJob("report", "@yearly", out, "")
		report.After = []Dependency{{Task: "copy", CaughtUpTo: "scheduled+90m"}}
		late := appendJob("late", "@yearly", out, "")
		late.After, late.StartingDeadline = []Dependency{{Task: "copy"}}, Duration(500*time.Millisecond)
		fresh := newFakeFreshness()
		startScheduler(t, connect, Options{Jobs: []Job{report, late}, Host: "a", Freshness: fresh}, nil)
		obs := dial(t, connect)

		const key = "2030-01-01"
		triggerKey(t, obs, "report", key)
		coordtest.WaitFor(t, 30*time.Second, "report waiting for its gate", func() error {
			runs, err := NewAdmin(obs).Runs(context.Background(), "report")
			if err != nil {
				return err
			}
			for _, r := range runs {
				if r.RunKey == key && r.Waiting != nil && len(r.Waiting.Gates) == 1 {
					want := "for task copy fresh to 2030-01-01T01:30:00Z: at mysql-bin.000001:4, waiting for mysql-bin.000001:100 (task is STOPPED)"
					if r.Waiting.For != want {
						return errors.New("waiting " + r.Waiting.For + ", want " + want)
					}
					return nil
				}
			}
			return errors.New("not waiting yet")
		})
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("report ran before its gate was reached (%v)", err)
		}
		fresh.open()
		r := awaitResult(t, obs, "report", key)
		if r.Status != Succeeded || len(r.Gates) != 1 || !r.Gates[0].Reached || r.Gates[0].Target != "mysql-bin.000001:100" || r.Gates[0].Task != "copy" {
			t.Errorf("result %+v, want succeeded with gate copy reached at mysql-bin.000001:100", r)
		}
		if got := lines(t, out); len(got) != 1 {
			t.Errorf("effects %q, want one run", got)
		}
		calls := fresh.seen()
		if len(calls) < 2 {
			t.Errorf("Fresh calls %+v: want one while waiting and one after the change", calls)
		}
		wantAt := time.Date(2030, 1, 1, 1, 30, 0, 0, time.UTC)
		for i, c := range calls {
			wantMark := "goal-of-copy"
			if i == 0 {
				wantMark = ""
			}
			if c.task != "copy" || !c.at.Equal(wantAt) || c.mark != wantMark {
				t.Errorf("Fresh call %d: %+v, want task copy at %v, mark %q", i, c, wantAt, wantMark)
			}
		}

		// A gate the deadline passes: the run is missed, and never ran.
		fresh.mu.Lock()
		fresh.reached = false
		fresh.mu.Unlock()
		triggerKey(t, obs, "late", key)
		if r := awaitResult(t, obs, "late", key); r.Status != Missed || !strings.Contains(r.Error, "waited for task copy fresh to 2030-01-01T00:00:00Z") {
			t.Errorf("late: %+v, want missed waiting for task copy", r)
		}
	})
}

// TestFreshnessGateWithoutFreshness: a scheduler given no Freshness
// cannot open a gate: the run waits until its deadline, then is missed,
// saying why.
func TestFreshnessGateWithoutFreshness(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		out := filepath.Join(t.TempDir(), "effects")
		j := appendJob("report", "@yearly", out, "")
		j.After, j.StartingDeadline = []Dependency{{Task: "copy"}}, Duration(500*time.Millisecond)
		startScheduler(t, connect, Options{Jobs: []Job{j}, Host: "a"}, nil)
		obs := dial(t, connect)
		triggerKey(t, obs, "report", "2030-01-01")
		if r := awaitResult(t, obs, "report", "2030-01-01"); r.Status != Missed || !strings.Contains(r.Error, errNoFreshness) {
			t.Errorf("result %+v, want missed because %q", r, errNoFreshness)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("the run ran (%v)", err)
		}
	})
}
