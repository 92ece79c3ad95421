package core

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/duration"
)

// TestMySQLVerify: `shepherd ctl task verify` against a task a `shepherd
// core` process runs. Under load the pair compares equal (exit 0); rows
// deleted and changed on the target behind the task's back are listed by
// key (exit 1) and kept in the task's verify node; --repair, fenced by
// the owner's epoch, rewrites them, and the report is clean again.
func TestMySQLVerify(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		source, target := sharedMariaDB(t)
		ctx := coordtest.Context(t, 3*time.Minute)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		db := testDB("verify")
		createWorkloadSchema(t, db, source, target)
		task := "verify_" + db
		mustAdd(t, a, mysqlSpec(task, db, source, target))
		startCoreProc(t, connect, "a", "--task", task)
		waitOwner(t, a, task, "a", StateRunning, 30*time.Second)

		loaded := make(chan error, 1)
		go func() { loaded <- load(ctx, source.DB(t), db, 0, 6_000, 200) }()
		out, code := ctlExit(t, connect, "task", "verify", "--chunk-rows", "1000", task)
		if code != 0 || !strings.Contains(out, ": equal") {
			t.Fatalf("verify under load: exit %d\n%s", code, out)
		}
		t.Logf("verify under load:\n%s", out)
		if err := <-loaded; err != nil {
			t.Fatal(err)
		}
		waitSameTables(t, source, target, db, time.Minute)

		target.Exec(t, "DELETE FROM "+db+".items WHERE id = 42", "UPDATE "+db+".items SET v = -1 WHERE id = 4242")
		out, code = ctlExit(t, connect, "task", "verify", "--chunk-rows", "1000", task)
		if code != 1 || !strings.Contains(out, "missing on target 42\n") || !strings.Contains(out, "different         4242\n") {
			t.Fatalf("verify of planted differences: exit %d, want 1\n%s", code, out)
		}
		t.Logf("verify of planted differences:\n%s", out)
		ts, err := a.Task(ctx, task)
		if err != nil || ts.Verify == nil || ts.Verify.Differences != 2 {
			t.Fatalf("stored report: %+v, %v", ts.Verify, err)
		}

		out, code = ctlExit(t, connect, "task", "verify", "--repair", "--chunk-rows", "1000", "--tables", db+".items", task)
		if code != 0 || !strings.Contains(out, "2 rows repaired") {
			t.Fatalf("verify --repair: exit %d\n%s", code, out)
		}
		t.Logf("verify --repair:\n%s", out)
		waitSameTables(t, source, target, db, time.Minute)
		show, _ := ctlExit(t, connect, "task", "show", task)
		if !strings.Contains(show, "verify:") || !strings.Contains(show, "equal, 2 rows repaired") {
			t.Fatalf("task show after the repair:\n%s", show)
		}
	})
}

// ctlExit runs `shepherd ctl --zk connect args…` and returns its output
// (stdout, then stderr) and exit status.
func ctlExit(t testing.TB, connect string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(shepherdBinary(t), append([]string{"ctl", "--zk", connect, "--auth-file", coordtest.AuthFile(t)}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out) + stderr.String(), ee.ExitCode()
	case err != nil:
		t.Fatalf("shepherd ctl %s: %v", strings.Join(args, " "), err)
	}
	return string(out) + stderr.String(), 0
}

// TestMySQLVerifyEvery: a task with verify: {every: 1s} is verified by
// its owner while it runs: a row deleted on the target shows in the
// stored report; after a repair the owner's next report is clean.
func TestMySQLVerifyEvery(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		source, target := sharedMariaDB(t)
		ctx := coordtest.Context(t, 3*time.Minute)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		db := testDB("verify_every")
		createWorkloadSchema(t, db, source, target)
		task := "every_" + db
		sp := mysqlSpec(task, db, source, target)
		sp.Verify = VerifyPolicy{Every: duration.Duration(time.Second), ChunkRows: 500}
		mustAdd(t, a, sp)
		startCoreProc(t, connect, "a", "--task", task)
		waitOwner(t, a, task, "a", StateRunning, 30*time.Second)
		if err := load(ctx, source.DB(t), db, 0, 2_000, 200); err != nil {
			t.Fatal(err)
		}
		waitSameTables(t, source, target, db, time.Minute)
		target.Exec(t, "DELETE FROM "+db+".items WHERE id = 7")

		report := func(want func(*VerifyReport) error) {
			t.Helper()
			coordtest.WaitFor(t, time.Minute, "the owner's verify report", func() error {
				ts, err := a.Task(ctx, task)
				if err != nil {
					return err
				}
				if ts.Verify == nil {
					return errors.New("no report yet")
				}
				return want(ts.Verify)
			})
		}
		report(func(r *VerifyReport) error {
			if r.Differences != 1 {
				return fmt.Errorf("report with %d differences: %+v", r.Differences, r)
			}
			return nil
		})
		rep, err := a.Verify(ctx, task, VerifyOptions{Repair: true, Tables: []string{db + ".items"}}, DefaultEngine(), coordtest.Logger(t))
		if err != nil || rep.Repaired != 1 {
			t.Fatalf("repair: %v; %+v", err, rep)
		}
		repaired := rep.Finished
		report(func(r *VerifyReport) error {
			if r.Differences != 0 || !r.Started.After(repaired) || len(r.Tables) != 3 {
				return fmt.Errorf("report of %s with %d differences in %d tables", r.Started, r.Differences, len(r.Tables))
			}
			return nil
		})
	})
}
