package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// TestMySQLCoordServerRestart: the coordination server restarts in the
// middle of a load. Its sessions outlive the restart, so the RUNNING core
// keeps the task — same instance, same epoch — pausing while it cannot
// reach the server; nothing is lost or applied twice.
func TestMySQLCoordServerRestart(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		source, target := sharedMariaDB(t)
		ctx := coordtest.Context(t, 3*time.Minute)
		srv := coordtest.StartRestartable(t, tg.Name, 500*time.Millisecond)
		const sessionTimeout = coordtest.RestartSessionTimeout // outlasts a JVM restart on a busy machine
		a := NewAdmin(dial(t, srv.Addr, sessionTimeout), "")
		db := testDB("restart")
		createWorkloadSchema(t, db, source, target)
		task := "restart_" + db
		mustAdd(t, a, mysqlSpec(task, db, source, target))
		aSession := dial(t, srv.Addr, sessionTimeout)
		startCoreOn(t, aSession, "a", MySQL{}, func(c *Config) { c.Tasks = []string{task} })
		before := waitOwner(t, a, task, "a", StateRunning, 30*time.Second)
		aID := aSession.ID()
		startCoreOn(t, dial(t, srv.Addr, sessionTimeout), "b", MySQL{}, func(c *Config) { c.Tasks = []string{task} })
		coordtest.WaitFor(t, 10*time.Second, "the start position in lastCommit", func() error {
			if lc, ok, err := readLastCommit(ctx, a.s, a.layout.LastCommit(task)); !ok || err != nil || lc.Position().IsZero() {
				return fmt.Errorf("lastCommit %+v, %v", lc, err)
			}
			return nil
		})
		loaded := make(chan error, 1)
		go func() { loaded <- load(ctx, source.DB(t), db, 0, 30_000, 100) }()
		coordtest.WaitFor(t, 60*time.Second, "some rows applied", func() error {
			var n int
			if err := target.DB(t).QueryRowContext(ctx, "SELECT COUNT(*) FROM "+db+".items").Scan(&n); err != nil || n < 3000 {
				return fmt.Errorf("%d rows, %v", n, err)
			}
			return nil
		})
		began := time.Now()
		srv.Restart(t)
		t.Logf("%s restarted in %v", tg.Name, time.Since(began).Round(time.Millisecond))
		if err := <-loaded; err != nil {
			t.Fatal(err)
		}
		waitSameTables(t, source, target, db, 90*time.Second)
		// How long the server takes to come back is the machine's (a JVM
		// restart has taken 84 s next to a CPU hog): if a's session did
		// not survive it, the task moved to a new term, and the tables
		// above are what must hold; else the term is the same.
		if aSession.ID() != aID {
			t.Logf("the server came back after the session timeout (%v): a's session was lost, the task has a new term", sessionTimeout)
		} else if after := waitOwner(t, a, task, "a", StateRunning, 30*time.Second); after.Name != before.Name || after.State.Epoch != before.State.Epoch {
			t.Errorf("owner %s epoch %d after the restart, %s epoch %d before: want the same term", after.Name, after.State.Epoch, before.Name, before.State.Epoch)
		}
		coordtest.WaitFor(t, 10*time.Second, "lastCommit to catch up", func() error {
			lc, _, err := readLastCommit(ctx, a.s, a.layout.LastCommit(task))
			if err != nil {
				return err
			}
			owner, _, pos, err := targetCheckpoint(ctx, target.DB(t), task)
			if err != nil || uint64(lc.Pos) != pos || lc.Owner != owner {
				return fmt.Errorf("lastCommit %s:%d by %s; target checkpoint %d by %s (%v)", lc.File, lc.Pos, lc.Owner, pos, owner, err)
			}
			return nil
		})
	})
}

// TestMySQLServerOutages: the source restarts and the target goes away
// for a while; the owner retries (its state says so), never FAILED, and
// the target ends up identical to the source.
func TestMySQLServerOutages(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		source := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
		target := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
		ctx := coordtest.Context(t, 3*time.Minute)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		db := testDB("outage")
		createWorkloadSchema(t, db, source, target)
		task := "outage_" + db
		mustAdd(t, a, mysqlSpec(task, db, source, target))
		startCore(t, connect, "a", MySQL{}, func(c *Config) { c.Tasks = []string{task} })
		owner := waitOwner(t, a, task, "a", StateRunning, 30*time.Second)
		coordtest.WaitFor(t, 10*time.Second, "the start position in lastCommit", func() error {
			if lc, ok, err := readLastCommit(ctx, a.s, a.layout.LastCommit(task)); !ok || err != nil || lc.Position().IsZero() {
				return fmt.Errorf("lastCommit %+v, %v", lc, err)
			}
			return nil
		})
		next := 0
		step := func(what string, rows int) {
			t.Helper()
			if err := load(ctx, source.DB(t), db, next, rows, 100); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			next += rows
		}
		step("before the outages", 5000)
		waitSameTables(t, source, target, db, 60*time.Second)

		source.Restart(t)
		step("after the source restarted", 8000)
		waitSameTables(t, source, target, db, 60*time.Second)

		if err := target.Stop(); err != nil {
			t.Fatal(err)
		}
		step("while the target is down", 9000)
		coordtest.WaitFor(t, 30*time.Second, "the owner to report the outage", func() error {
			ts, err := a.Task(ctx, task)
			if err != nil {
				return err
			}
			in, _ := ts.Owner()
			if in.State.State != StateRunning || in.State.Error == "" {
				return fmt.Errorf("owner %s: %s %q", in.Name, in.State.State, in.State.Error)
			}
			t.Logf("while the target is down: %s %s", in.State.State, in.State.Error)
			return nil
		})
		target.Start(t)
		waitSameTables(t, source, target, db, 60*time.Second)
		after := waitOwner(t, a, task, "a", StateRunning, 30*time.Second)
		if after.Name != owner.Name || after.State.Epoch != owner.State.Epoch {
			t.Errorf("owner %s (epoch %d) after the outages, %s (epoch %d) before", after.Name, after.State.Epoch, owner.Name, owner.State.Epoch)
		}
		coordtest.WaitFor(t, 10*time.Second, "the error to clear", func() error {
			ts, err := a.Task(ctx, task)
			if err != nil {
				return err
			}
			if in, _ := ts.Owner(); in.State.Error != "" {
				return fmt.Errorf("still %q", in.State.Error)
			}
			return nil
		})
	})
}

// TestMySQLBadSources: wrong credentials, an account that may not read
// the binlog position (start: current) and a source logging statements
// instead of rows make their tasks FAILED with errors saying what to fix;
// an unreachable source is retried; the core process keeps running the
// others.
func TestMySQLBadSources(t *testing.T) {
	source, dest := sharedMariaDB(t)
	statement := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{BinlogFormat: "STATEMENT"})
	// Logs in and reads variables, but lacks BINLOG MONITOR.
	source.Exec(t, "CREATE USER IF NOT EXISTS 'core_nomon'@'127.0.0.1' IDENTIFIED BY 'pw'",
		"GRANT SELECT ON *.* TO 'core_nomon'@'127.0.0.1'")
	t.Cleanup(func() { source.DB(t).Exec("DROP USER IF EXISTS 'core_nomon'@'127.0.0.1'") })
	onEachTarget(t, func(t *testing.T, tg *target) {
		target := dest
		ctx := coordtest.Context(t, 2*time.Minute)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		db := testDB("bad")
		createWorkloadSchema(t, db, source, target)

		// Task names are the target's checkpoint keys: each subtest has
		// its own.
		wrongPassword := mysqlSpec("wrong_password_"+db, db, source, target)
		wrongPassword.Source.Password = "not-the-password"
		noMonitor := mysqlSpec("no_binlog_monitor_"+db, db, source, target)
		noMonitor.Source.User, noMonitor.Source.Password = "core_nomon", "pw"
		stmt := mysqlSpec("statement_binlog_"+db, db, statement, target)
		unreachable := mysqlSpec("unreachable_"+db, db, source, target)
		unreachable.Source.Port = freeTCPPort(t)
		good := mysqlSpec("good_"+db, db, source, target)
		var names []string
		for _, sp := range []*Spec{wrongPassword, noMonitor, stmt, unreachable, good} {
			names = append(names, sp.Name)
			mustAdd(t, a, sp)
		}
		args := []string{}
		for _, n := range names {
			args = append(args, "--task", n)
		}
		proc := startCoreProc(t, connect, "a", args...)

		for _, tc := range []struct {
			task, state string
			want        []string
		}{
			{wrongPassword.Name, StateFailed, []string{"Access denied"}},
			{noMonitor.Name, StateFailed, []string{"BINLOG MONITOR", "GRANT REPLICATION CLIENT ON *.* TO core_nomon"}},
			{stmt.Name, StateFailed, []string{"binlog_format", "ROW"}},
			{unreachable.Name, StateRunning, []string{"connect", "refused"}},
			{good.Name, StateRunning, nil},
		} {
			coordtest.WaitFor(t, 30*time.Second, tc.task+" to be "+tc.state, func() error {
				ts, err := a.Task(ctx, tc.task)
				if err != nil {
					return err
				}
				in, ok := ts.Owner()
				if !ok || in.State.State != tc.state {
					return fmt.Errorf("instances %v", instanceNames(ts))
				}
				for _, w := range tc.want {
					if !strings.Contains(in.State.Error, w) {
						return fmt.Errorf("error %q lacks %q", in.State.Error, w)
					}
				}
				if tc.want != nil {
					t.Logf("%s: %s: %s", tc.task, in.State.State, in.State.Error)
				}
				return nil
			})
		}
		if err := load(ctx, source.DB(t), db, 0, 2000, 100); err != nil {
			t.Fatal(err)
		}
		waitSameTables(t, source, target, db, 60*time.Second)
		select {
		case <-proc.done:
			t.Fatalf("the core process exited: %v", proc.err)
		default:
		}
	})
}
