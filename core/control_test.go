package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestStopAndStart: a stopped task's owner pauses (PAUSED, nothing
// applied, lastCommit written) and resumes where it was when started.
func TestStopAndStart(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		ctx := coordtest.Context(t, 30*time.Second)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		mustAdd(t, a, testSpec("t1"))
		eng := NewMemEngine(1000)
		startCore(t, connect, "h1", eng, func(c *Config) { c.Tasks = []string{"t1"} })
		waitOwner(t, a, "t1", "h1", StateRunning, 10*time.Second)

		if err := a.SetState(ctx, "t1", DesiredStopped); err != nil {
			t.Fatal(err)
		}
		paused := waitOwner(t, a, "t1", "h1", StatePaused, 10*time.Second)
		_, _, _, cp := eng.stats()
		lc, _, err := readLastCommit(ctx, a.s, a.layout.LastCommit("t1"))
		if err != nil || lc.Position() != cp.Position || paused.State.Position != cp.Position {
			t.Errorf("paused at target %v, lastCommit %+v (%v), instance %v: want all equal", cp.Position, lc, err, paused.State.Position)
		}
		eng.AddEvents(100)
		time.Sleep(300 * time.Millisecond) // several commit intervals: nothing may be applied
		if _, _, _, now := eng.stats(); now.Position != cp.Position {
			t.Fatalf("a PAUSED owner applied: checkpoint %v → %v", cp.Position, now.Position)
		}
		if err := a.SetState(ctx, "t1", DesiredRunning); err != nil {
			t.Fatal(err)
		}
		waitOwner(t, a, "t1", "h1", StateRunning, 10*time.Second)
		waitApplied(t, eng, 20*time.Second)
	})
}

// TestNonRetryableFailure: a failure that retrying cannot fix makes the
// owner FAILED with the error; it keeps the task so the standby does not
// retry it; instances taking over after crashes give up after
// MaxFailures; ctl task start clears it.
func TestNonRetryableFailure(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		ctx := coordtest.Context(t, 60*time.Second)
		limit := func(c *Config) { c.Tasks, c.MaxFailures = []string{"t1"}, 2 }
		ft := startFailedTask(t, tg, limit)
		connect, a, eng, h1, failed := ft.connect, ft.a, ft.eng, ft.h1, ft.failed
		if !strings.Contains(failed.State.Error, "UPDATE t SET x=1") || !strings.Contains(failed.State.Error, "Duplicate entry") {
			t.Errorf("FAILED error %q: want the statement and the server's error", failed.State.Error)
		}
		h2 := startCore(t, connect, "h2", eng, limit)
		coordtest.WaitFor(t, 10*time.Second, "h2 to stand by", func() error {
			ts, err := a.Task(ctx, "t1")
			if err != nil || len(ts.Instances) != 2 || ts.Instances[1].State.State != StateStandby {
				return fmt.Errorf("instances %v, %v", instanceNames(ts), err)
			}
			return nil
		})
		checkFailure := func(attempts int) {
			t.Helper()
			lc, _, err := readLastCommit(ctx, a.s, a.layout.LastCommit("t1"))
			if err != nil || lc.Failure == nil || lc.Failure.Attempts != attempts || lc.Pos != 200 {
				t.Fatalf("lastCommit %+v (failure %+v), %v; want position 200 and %d failed attempts", lc, lc.Failure, err, attempts)
			}
		}
		checkFailure(1)

		h1.crash()
		waitOwner(t, a, "t1", "h2", StateFailed, 10*time.Second)
		checkFailure(2)
		_, _, opens, _ := eng.stats()
		startCore(t, connect, "h3", eng, limit)
		coordtest.WaitFor(t, 10*time.Second, "h3 to stand by", func() error {
			ts, err := a.Task(ctx, "t1")
			if err != nil || len(ts.Instances) != 2 || ts.Instances[1].State.Host != "h3" {
				return fmt.Errorf("instances %v, %v", instanceNames(ts), err)
			}
			return nil
		})
		// h2 crashes too: h3 sees two failures and does not try.
		h2.crash()
		gaveUp := waitOwner(t, a, "t1", "h3", StateFailed, 10*time.Second)
		if !strings.Contains(gaveUp.State.Error, "failed 2 times in a row") {
			t.Errorf("h3's error %q: want it to say the task failed twice", gaveUp.State.Error)
		}
		if _, _, now, _ := eng.stats(); now != opens {
			t.Errorf("h3 opened the replicator %d times; want it not to try", now-opens)
		}
		checkFailure(2)

		eng.mu.Lock()
		eng.poison = -1
		eng.mu.Unlock()
		if err := a.SetState(ctx, "t1", DesiredRunning); err != nil {
			t.Fatal(err)
		}
		waitOwner(t, a, "t1", "h3", StateRunning, 10*time.Second)
		waitApplied(t, eng, 20*time.Second)
		coordtest.WaitFor(t, 5*time.Second, "the failure to be cleared", func() error {
			lc, _, err := readLastCommit(ctx, a.s, a.layout.LastCommit("t1"))
			if err != nil || lc.Failure != nil {
				return fmt.Errorf("lastCommit %+v, %v", lc, err)
			}
			return nil
		})
	})
}

// TestRetryableFailureShowsInState: an unreachable target is retried with
// backoff; meanwhile the owner stays RUNNING with the error and the time
// of the next attempt, and it recovers by itself.
func TestRetryableFailureShowsInState(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		mustAdd(t, a, testSpec("t1"))
		eng := NewMemEngine(300)
		eng.SetDown(true)
		startCore(t, connect, "h1", eng, func(c *Config) { c.Tasks = []string{"t1"} })
		coordtest.WaitFor(t, 10*time.Second, "the error in the state", func() error {
			ts, err := a.Task(context.Background(), "t1")
			if err != nil {
				return err
			}
			owner, ok := ts.Owner()
			if !ok || owner.State.State != StateRunning || !strings.Contains(owner.State.Error, "target unreachable") || owner.State.RetryAt == nil {
				return fmt.Errorf("owner %+v", owner)
			}
			return nil
		})
		eng.SetDown(false)
		waitApplied(t, eng, 20*time.Second)
		coordtest.WaitFor(t, 5*time.Second, "the error to clear", func() error {
			ts, err := a.Task(context.Background(), "t1")
			if err != nil {
				return err
			}
			if owner, _ := ts.Owner(); owner.State.Error != "" || owner.State.RetryAt != nil || owner.State.Position.Pos != 300 {
				return fmt.Errorf("owner %+v", owner.State)
			}
			return nil
		})
	})
}

// TestCoreWithoutSpec: a core registered for a task nobody has added yet
// owns it FAILED, saying so, and starts when the spec arrives; a hot core
// refuses a cold task.
func TestCoreWithoutSpec(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		ctx := coordtest.Context(t, 30*time.Second)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		eng := NewMemEngine(100)
		startCore(t, connect, "h1", eng, func(c *Config) { c.Tasks = []string{"t1"} })
		in := waitOwner(t, a, "t1", "h1", StateFailed, 10*time.Second)
		if !strings.Contains(in.State.Error, "shepherd ctl task add") {
			t.Errorf("error %q: want it to say how to add the task", in.State.Error)
		}
		if _, err := a.Task(ctx, "t1"); err != nil {
			t.Fatal(err)
		}
		cold := coldSpec("t1", "g1")
		mustAdd(t, a, cold) // over the empty node the core registered
		coordtest.WaitFor(t, 10*time.Second, "h1 to show as a stray instance", func() error {
			ts, err := a.Task(ctx, "t1")
			if err != nil {
				return err
			}
			if len(ts.Instances) != 0 || len(ts.Stray) != 1 || !strings.Contains(ts.Stray[0].State.Error, "--group g1") {
				return fmt.Errorf("instances %v, stray %+v", instanceNames(ts), ts.Stray)
			}
			return nil
		})
		if err := a.AddTask(ctx, testSpec("t1"), false); !errors.Is(err, ErrTaskExists) {
			t.Fatalf("AddTask over a spec: %v, want ErrTaskExists", err)
		}
		if err := a.AddTask(ctx, testSpec("t1"), true); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, eng, 10*time.Second)
		waitOwner(t, a, "t1", "h1", StateRunning, 10*time.Second)
	})
}
