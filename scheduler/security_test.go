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

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// dialAnon opens a session without a credential: the attacker.
func dialAnon(t *testing.T, connect string) *recipe.Session {
	t.Helper()
	return dialWith(t, connect, recipe.Options{SessionTimeout: testSessionTimeout})
}

// TestAttackPreCreatedJobs: before the scheduler's first start, an
// anonymous session makes /scheduler world-writable and stores jobs in
// it — one with the open ACL, one with an ACL naming the scheduler's own
// identity alone (which ZooKeeper lets anyone set) — plus a trigger; a
// trusted session stores a job named like a --jobs file job. The
// scheduler refuses all four, says why, and runs none of them, while the
// file job runs.
func TestAttackPreCreatedJobs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		dir := t.TempDir()
		evil, good := filepath.Join(dir, "evil"), filepath.Join(dir, "good")
		anon := dialAnon(t, connect)
		if err := NewAdmin(anon).StoreJob(ctx, appendJob("open", "* * * * * *", evil, "")); err != nil {
			t.Fatal(err)
		}
		owner, _ := recipe.ParseCredential(coordtest.Auth)
		forged := appendJob("forged", "* * * * * *", evil, "")
		if _, err := anon.Create(ctx, JobPath("forged"), forged.Encode(), 0, zk.DigestACL(zk.PermAll, owner.User, owner.Password)); err != nil {
			t.Fatal(err)
		}
		trigger, err := NewAdmin(anon).Trigger(ctx, "tick", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		trusted := dial(t, connect)
		// A trusted stored job may not replace a file job either.
		if err := NewAdmin(trusted).StoreJob(ctx, appendJob("tick", "* * * * * *", evil, "")); err != nil {
			t.Fatal(err)
		}

		sc, _ := startScheduler(t, connect, Options{Jobs: []Job{appendJob("tick", "* * * * * *", good, "")}}, nil)
		want := map[string]string{
			JobPath("open"):                   "world:anyone",
			JobPath("forged"):                 "its ancestor /scheduler",
			JobPath("tick"):                   "the --jobs file defines a job",
			TriggersPath + "/tick@" + trigger: "world:anyone",
		}
		coordtest.WaitFor(t, 30*time.Second, "condition", func() error {
			got := sc.Refused()
			for p, why := range want {
				if !strings.Contains(got[p], why) {
					return fmt.Errorf("refusal of %s = %q, want it to say %q (all: %v)", p, got[p], why, got)
				}
			}
			return nil
		})
		// The file job runs; the refused ones, scheduled as often, never.
		coordtest.WaitFor(t, 30*time.Second, "condition", func() error {
			if n := len(lines(t, good)); n < 3 {
				return fmt.Errorf("the file job ran %d times, want 3", n)
			}
			return nil
		})
		if got := lines(t, evil); len(got) > 0 {
			t.Errorf("a refused job ran: %q", got)
		}
		for _, job := range []string{"open", "forged"} {
			if runs := finished(t, trusted, job); len(runs) > 0 {
				t.Errorf("refused job %s has runs: %+v", job, runs)
			}
		}
	})
}

// TestAttackSecuredTree: once the scheduler has made its tree, an
// anonymous session can neither store nor trigger a job, nor read a
// run's output.
func TestAttackSecuredTree(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out := filepath.Join(t.TempDir(), "out")
		anon := dialAnon(t, connect) // first: the chroot is open, as a fresh ensemble's root is
		startScheduler(t, connect, Options{Jobs: []Job{appendJob("tick", "* * * * * *", out, "echo secret-output")}}, nil)
		trusted := dial(t, connect)
		var key string
		coordtest.WaitFor(t, 30*time.Second, "condition", func() error {
			runs := finished(t, trusted, "tick")
			if len(runs) == 0 {
				return errors.New("no run finished")
			}
			key = runs[0].RunKey
			return nil
		})
		if err := NewAdmin(anon).StoreJob(ctx, appendJob("evil", "* * * * * *", out+".evil", "")); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous job store: %v, want ErrNoAuth", err)
		}
		if _, err := NewAdmin(anon).Trigger(ctx, "tick", time.Now()); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous trigger: %v, want ErrNoAuth", err)
		}
		if _, _, err := anon.Get(ctx, ResultPath("tick", key)); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous read of a run's result: %v, want ErrNoAuth", err)
		}
		if _, err := os.Stat(out + ".evil"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the anonymous job ran: %v", err)
		}
	})
}

// TestAttackPlantedJobNarrowed is issue 23's planted job: before the
// scheduler's first start, an anonymous session creates /scheduler, its
// directories and a job whose command would leave a marker file, then
// narrows every ACL it made to world:anyone:r, so that no one else may
// write them either. The scheduler refuses the job, saying the node
// grants WRITE or ADMIN to no trusted identity, and never runs it, while
// a --jobs file job (scheduled as often) runs three times.
func TestAttackPlantedJobNarrowed(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		dir := t.TempDir()
		marker, good := filepath.Join(dir, "planted-ran"), filepath.Join(dir, "good")
		anon := dialAnon(t, connect)
		if err := NewAdmin(anon).StoreJob(ctx, appendJob("x", "* * * * * *", marker, "")); err != nil {
			t.Fatal(err)
		}
		// The other directories the scheduler needs, so that it starts.
		for _, p := range []string{PausedPath, TriggersPath} {
			if err := anon.EnsurePath(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []string{JobPath("x"), JobsPath, PausedPath, TriggersPath, Root} { // children first
			if _, err := anon.SetACL(ctx, p, zk.WorldACL(zk.PermRead), -1); err != nil {
				t.Fatalf("narrow %s: %v", p, err)
			}
		}

		sc, _ := startScheduler(t, connect, Options{Jobs: []Job{appendJob("tick", "* * * * * *", good, "")}}, nil)
		coordtest.WaitFor(t, 30*time.Second, "the planted job's refusal", func() error {
			why := sc.Refused()[JobPath("x")]
			if !strings.Contains(why, "grants WRITE or ADMIN to no trusted identity (its ACL: world:anyone:r)") {
				return fmt.Errorf("refusal of %s = %q, want the reason", JobPath("x"), why)
			}
			return nil
		})
		coordtest.WaitFor(t, 30*time.Second, "the file job's runs", func() error {
			if n := len(lines(t, good)); n < 3 {
				return fmt.Errorf("the file job ran %d times, want 3", n)
			}
			return nil
		})
		if got := lines(t, marker); len(got) > 0 {
			t.Errorf("the planted job ran: %q", got)
		}
	})
}
