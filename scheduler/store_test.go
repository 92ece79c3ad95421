package scheduler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestStaleMasterCannotPublish: once another master has bumped the
// run's attempts, the old master's result is refused.
func TestStaleMasterCannotPublish(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		job := Job{Name: "j", Schedule: "@daily", Command: "true"}
		p, _ := compile(job)
		old, err := New(dial(t, connect), Options{Host: "old"})
		if err != nil {
			t.Fatal(err)
		}
		next, err := New(dial(t, connect), Options{Host: "new"})
		if err != nil {
			t.Fatal(err)
		}
		key := "2026-11-22"
		if err := old.sess.EnsurePath(ctx, RunPath("j", key)); err != nil {
			t.Fatal(err)
		}
		if won, err := old.elect(ctx, runUnit("j", key), time.Now()); !won || err != nil {
			t.Fatalf("elect = %v, %v; want won", won, err)
		}
		ver, err := old.writeAttempts(ctx, runUnit("j", key), attempts{Attempts: 1}, -1)
		if err != nil {
			t.Fatal(err)
		}
		// The new master took over (as after the old one's session expired)
		// and started attempt 2.
		if _, err := next.writeAttempts(ctx, runUnit("j", key), attempts{Attempts: 2}, ver); err != nil {
			t.Fatal(err)
		}
		_, err = old.publish(ctx, p, runUnit("j", key), Result{Job: "j", RunKey: key, Status: Succeeded, Host: "old", Attempt: 1}, ver)
		if !errors.Is(err, ErrNotMaster) {
			t.Fatalf("stale publish = %v, want ErrNotMaster", err)
		}
		if _, ok, _ := readResult(ctx, next.sess, "j", key); ok {
			t.Fatal("the stale master's result was stored")
		}
	})
}

// TestSettledRunNeverRunsAgain: a scheduler that fires a run whose result
// exists (it started late, or its clock is behind) learns the result and
// runs nothing.
func TestSettledRunNeverRunsAgain(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		out := filepath.Join(t.TempDir(), "effects")
		p, _ := compile(appendJob("j", "@daily", out, ""))
		sc, err := New(dial(t, connect), Options{Host: "late", LogDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		key := p.RunKey(at)
		first, err := sc.settle(ctx, runReq{p: p, key: key, scheduled: at})
		if err != nil || first.Status != Succeeded {
			t.Fatalf("first settle = %+v, %v; want succeeded", first, err)
		}
		again, err := sc.settle(ctx, runReq{p: p, key: key, scheduled: at})
		if err != nil || !again.Start.Equal(first.Start) || again.Host != first.Host {
			t.Fatalf("second settle = %+v, %v; want the first result", again, err)
		}
		if got := lines(t, out); len(got) != 1 {
			t.Fatalf("effects %q, want one run", got)
		}
	})
}

// TestHistoryLimit: old finished runs and their log files are deleted.
func TestHistoryLimit(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		out := filepath.Join(t.TempDir(), "effects")
		logDir := t.TempDir()
		job := appendJob("h", "* * * * * *", out, "")
		job.HistoryLimit = 2
		startScheduler(t, connect, Options{Jobs: []Job{job}, Host: "a", LogDir: logDir}, nil)
		obs := dial(t, connect)
		// Checked while runs go on, at a moment between two (runs may
		// overlap on a loaded machine, so none is assumed finished): the
		// first run to finish is cut from the history with its log, two
		// finished runs are kept, and every log left is of a run the
		// history still has (kept, or running).
		first := ""
		coordtest.WaitFor(t, 30*time.Second, "the history cut to 2 runs, the first one's log gone", func() error {
			runs, err := listRuns(t.Context(), obs, "h")
			if err != nil {
				return err
			}
			inHistory := map[string]bool{}
			var kept []string
			for _, r := range runs {
				inHistory[r.RunKey] = true
				if r.Result != nil {
					kept = append(kept, r.RunKey)
				}
			}
			switch {
			case first == "" && len(kept) == 0:
				return errors.New("no run finished yet")
			case first == "":
				first = kept[0]
				return fmt.Errorf("first run %s finished", first)
			case inHistory[first]:
				return fmt.Errorf("the first run %s is still in the history (%d finished)", first, len(kept))
			case len(kept) != 2:
				return fmt.Errorf("%d finished runs kept, want 2: %v", len(kept), kept)
			}
			logs, _ := filepath.Glob(filepath.Join(logDir, "h", "*.log"))
			for _, l := range logs {
				if key := strings.TrimSuffix(filepath.Base(l), ".log"); !inHistory[key] {
					return fmt.Errorf("log %s of a run the history no longer has (history %v)", l, kept)
				}
			}
			return nil
		})
	})
}

// TestStoredJobPauseAndResume: a job stored in /scheduler/jobs is
// picked up, stops firing while paused (run-now still works) and
// catches up when resumed.
func TestStoredJobPauseAndResume(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		out := filepath.Join(t.TempDir(), "effects")
		startScheduler(t, connect, Options{Host: "a"}, nil)
		s := dial(t, connect)
		job := appendJob("stored", "* * * * * *", out, `case $SHEPHERD_RUN_KEY in manual-*) sleep 3;; esac`)
		if err := NewAdmin(s).StoreJob(ctx, job); err != nil {
			t.Fatal(err)
		}
		coordtest.WaitFor(t, 20*time.Second, "condition", func() error {
			if n := len(finished(t, s, "stored")); n < 2 {
				return fmt.Errorf("%d runs of the stored job, want 2", n)
			}
			return nil
		})
		if err := NewAdmin(s).SetPaused(ctx, "stored", true); err != nil {
			t.Fatal(err)
		}
		pausedAt := time.Now()
		key := trigger(t, s, "stored")
		coordtest.WaitFor(t, 20*time.Second, "condition", func() error {
			if _, ok, err := readResult(ctx, s, "stored", key); !ok {
				return fmt.Errorf("manual run of a paused job has no result (%v)", err)
			}
			return nil
		})
		for _, r := range finished(t, s, "stored") {
			if r.RunKey != key && r.Result.Status != Missed && r.Scheduled.After(pausedAt.Add(time.Second)) {
				t.Errorf("run %s scheduled at %v ran while the job was paused (since %v)", r.RunKey, r.Scheduled, pausedAt)
			}
		}
		if err := NewAdmin(s).SetPaused(ctx, "stored", false); err != nil {
			t.Fatal(err)
		}
		resumedAt := time.Now()
		coordtest.WaitFor(t, 20*time.Second, "condition", func() error {
			for _, r := range finished(t, s, "stored") {
				if r.Result.Status == Succeeded && r.Scheduled.After(resumedAt) {
					return nil
				}
			}
			return fmt.Errorf("no run after resuming")
		})
		if err := NewAdmin(s).RemoveJob(ctx, "stored"); err != nil {
			t.Fatal(err)
		}
		if err := NewAdmin(s).RemoveJob(ctx, "stored"); !errors.Is(err, ErrNoSuchJob) {
			t.Errorf("second RemoveJob = %v, want ErrNoSuchJob", err)
		}
		if ok, _, _ := s.Exists(ctx, PausedPath+"/stored"); ok {
			t.Error("paused flag left after RemoveJob")
		}
		_ = os.Remove(out)
	})
}

// TestStoredJobNamedOtherwiseIsRefusedByAll: a job document stored at
// /scheduler/jobs/alias that names the job "real" is refused, for the
// same reason, by the scheduler (it would fire it under one name and
// record its runs under the other) and by every reader (Admin.LoadJob,
// Admin.Jobs): one decoder serves them all.
func TestStoredJobNamedOtherwiseIsRefusedByAll(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		out := filepath.Join(t.TempDir(), "effects")
		s := dial(t, connect)
		if err := s.EnsurePath(ctx, JobsPath); err != nil {
			t.Fatal(err)
		}
		doc := appendJob("real", "* * * * * *", out, "").Encode()
		if _, err := s.Create(ctx, JobPath("alias"), doc, zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		const why = `stored at /scheduler/jobs/alias but named "real"`
		a := NewAdmin(s)
		if _, err := a.LoadJob(ctx, "alias"); !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), why) {
			t.Fatalf("LoadJob = %v, want ErrInvalidJob saying %q", err, why)
		}
		jobs, _, err := a.Jobs(ctx, 0)
		if err != nil || len(jobs) != 1 || jobs[0].Name != "alias" || !strings.Contains(jobs[0].Error, why) {
			t.Fatalf("Jobs = %+v, %v; want alias refused", jobs, err)
		}
		sc, _ := startScheduler(t, connect, Options{}, nil)
		coordtest.WaitFor(t, 20*time.Second, "the scheduler to refuse the alias", func() error {
			if got := sc.Refused()[JobPath("alias")]; !strings.Contains(got, why) {
				return fmt.Errorf("refusal of alias = %q, want it to say %q", got, why)
			}
			return nil
		})
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the refused job ran: %s exists (%v)", out, err)
		}
	})
}

// TestCreateAndUpdateJobConditionally: CreateJob refuses a name already
// stored (StoreJob replaces it); UpdateJob replaces a job only at the
// version read, and neither stores an invalid job.
func TestCreateAndUpdateJobConditionally(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		a := NewAdmin(dial(t, connect))
		j := Job{Name: "cond", Schedule: "@daily", Command: "/bin/true"}
		if err := a.UpdateJob(ctx, j, AnyVersion); !errors.Is(err, ErrNoSuchJob) {
			t.Fatalf("update before create = %v, want ErrNoSuchJob", err)
		}
		if err := a.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		if err := a.CreateJob(ctx, j); !errors.Is(err, ErrJobExists) {
			t.Fatalf("second create = %v, want ErrJobExists", err)
		}
		if err := a.CreateJob(ctx, Job{Name: "bad", Schedule: "nope", Command: "x"}); !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), "schedule") {
			t.Fatalf("create of a bad job = %v, want ErrInvalidJob naming schedule", err)
		}
		got, v, err := a.JobVersion(ctx, "cond")
		if err != nil || got.Schedule != "@daily" {
			t.Fatalf("JobVersion = %+v, %d, %v", got, v, err)
		}
		j.Schedule = "@hourly"
		if err := a.UpdateJob(ctx, j, v+1); !errors.Is(err, ErrVersionConflict) {
			t.Fatalf("update at a wrong version = %v, want ErrVersionConflict", err)
		}
		if err := a.UpdateJob(ctx, j, v); err != nil {
			t.Fatal(err)
		}
		if err := a.UpdateJob(ctx, j, v); !errors.Is(err, ErrVersionConflict) {
			t.Fatalf("update at the version before = %v, want ErrVersionConflict", err)
		}
		if got, v2, err := a.JobVersion(ctx, "cond"); err != nil || got.Schedule != "@hourly" || v2 != v+1 {
			t.Fatalf("after update: %+v, %d, %v", got, v2, err)
		}
		for _, name := range []string{"..", "a/b", ""} {
			if _, _, err := a.JobVersion(ctx, name); !errors.Is(err, ErrNoSuchJob) {
				t.Errorf("JobVersion(%q) = %v, want ErrNoSuchJob", name, err)
			}
			if _, err := a.Job(ctx, name, 0); !errors.Is(err, ErrNoSuchJob) {
				t.Errorf("Job(%q) = %v, want ErrNoSuchJob", name, err)
			}
		}
	})
}
