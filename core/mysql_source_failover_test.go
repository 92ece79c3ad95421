package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/duration"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// gtidReplica makes r a GTID replica of primary, read-only as replicas
// are kept.
func gtidReplica(t testing.TB, r, primary *testpeer.MariaDB) {
	t.Helper()
	r.Exec(t, "SET GLOBAL read_only = ON",
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d, MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos", primary.Port()),
		"START SLAVE")
}

// TestMySQLSourceFailoverKill9: a hot-standby task reads a primary with
// two GTID replicas as source.hosts. The primary is killed with SIGKILL
// in the middle of a write load, and the RUNNING core is killed as soon
// as it has recorded its switch to a replica; the standby takes over,
// the operator's promotion of that replica follows, and the load goes on
// there. The target must end equal to the promoted replica —
// including a keyless table, where a transaction applied twice would be
// a second row — with one RUNNING owner reading from it.
//
// The primary's death can cut off a transaction the target applied
// before any replica received it. Then no candidate holds the target's
// checkpoint and the task must not switch at all: the test accepts that
// outcome only with the refusal shown in the owner's state.
func TestMySQLSourceFailoverKill9(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	_, target := sharedMariaDB(t)
	args := []string{"--log-slave-updates"}
	primary := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{GTIDStrictMode: true, ExtraArgs: args})
	r1 := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{GTIDStrictMode: true, ExtraArgs: args})
	r2 := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{GTIDStrictMode: true, ExtraArgs: args})
	gtidReplica(t, r1, primary)
	gtidReplica(t, r2, primary)
	ctx := coordtest.Context(t, 4*time.Minute)
	connect := chrootOf(t, tg)
	a := NewAdmin(dial(t, connect, testSessionTimeout), "")
	db := testDB("srcfail")
	createWorkloadSchema(t, db, primary, target) // primary: replicated to r1 and r2
	task := "srcfail_" + db
	sp := mysqlSpec(task, db, primary, target)
	sp.Source.Hosts = []string{r1.Addr(), r2.Addr()}
	sp.Source.FailoverAfter = duration.Duration(2 * time.Second)
	mustAdd(t, a, sp)

	first := startCoreProc(t, connect, "a", "--task", task)
	waitOwner(t, a, task, "a", StateRunning, 30*time.Second)
	startCoreProc(t, connect, "b", "--task", task)
	coordtest.WaitFor(t, 30*time.Second, "b to stand by", func() error {
		ts, err := a.Task(ctx, task)
		if err != nil || len(ts.Instances) != 2 || ts.Instances[1].State.State != StateStandby {
			return fmt.Errorf("instances %v, %v", instanceNames(ts), err)
		}
		return nil
	})

	loaded := make(chan error, 1)
	const rows = 60_000
	go func() { loaded <- load(ctx, primary.DB(t), db, 0, rows, 200) }()
	coordtest.WaitFor(t, 60*time.Second, "the target to have some of the load", func() error {
		var n int
		if err := target.DB(t).QueryRowContext(ctx, "SELECT COUNT(*) FROM "+db+".items").Scan(&n); err != nil {
			return err
		}
		if n < rows/4 {
			return fmt.Errorf("%d rows", n)
		}
		return nil
	})
	primary.Kill()
	killed := time.Now()
	if err := <-loaded; err == nil {
		t.Fatal("the load ended before the primary was killed: kill it earlier")
	}

	// The RUNNING core dies right after deciding to switch; or, if no
	// replica holds the checkpoint, it must say so and not switch.
	var switched *SourceSwitch
	coordtest.WaitFor(t, 60*time.Second, "a recorded switch, or the refusal", func() error {
		ts, err := a.Task(ctx, task)
		if err != nil {
			return err
		}
		if lc := ts.LastCommit; lc != nil && lc.Switch != nil {
			switched = lc.Switch
			return nil
		}
		if in, ok := ts.Owner(); ok && strings.Contains(in.State.Error, "no candidate can take over") {
			return nil
		}
		return errors.New("neither yet")
	})
	if switched == nil {
		ts, _ := a.Task(ctx, task)
		in, _ := ts.Owner()
		t.Logf("no replica held the target's checkpoint when the primary died; refused with: %s", in.State.Error)
		return
	}
	first.kill9()
	t.Logf("switch %s -> %s (%s) %v after the primary's kill; the RUNNING core killed then",
		switched.From, switched.To, switched.Reason, time.Since(killed).Round(time.Millisecond))

	// The operator promotes the replica the task switched to — the one
	// that held everything the target applied, as an orchestrator picks
	// the most advanced — and repoints the other at it; the load goes on.
	promoted, other := r1, r2
	if switched.To == r2.Addr() {
		promoted, other = r2, r1
	}
	promoted.Exec(t, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF")
	other.Exec(t, "STOP SLAVE", "RESET SLAVE ALL")
	gtidReplica(t, other, promoted)
	if err := load(ctx, promoted.DB(t), db, rows, 20_000, 200); err != nil {
		t.Fatal(err)
	}
	waitSameTables(t, promoted, target, db, 90*time.Second)
	owner := waitOwner(t, a, task, "b", StateRunning, 30*time.Second)
	ts, err := a.Task(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	if lc := ts.LastCommit; lc == nil || lc.Source != promoted.Addr() {
		t.Fatalf("lastCommit %+v: want the task reading %s, the promoted replica", ts.LastCommit, promoted.Addr())
	}
	for _, in := range ts.Instances {
		if in.Name != owner.Name && in.State.State == StateRunning {
			t.Fatalf("two RUNNING instances: %v", instanceNames(ts))
		}
	}
	if o, _, _, err := targetCheckpoint(context.Background(), target.DB(t), task); err != nil || o != owner.Name {
		t.Fatalf("target checkpoint owner %q, %v: want %s", o, err, owner.Name)
	}
	// The history the target followed (both servers' writes) is mirrored
	// into lastCommit with the position: the monitor judges candidates
	// against it (SourceFailoverUnsafe).
	coordtest.WaitFor(t, 30*time.Second, "lastCommit to carry the target's history", func() error {
		var file string
		var pos uint32
		var state string
		if err := target.DB(t).QueryRowContext(ctx, "SELECT binlog_file, binlog_pos, gtid_state FROM shepherd.shepherd_checkpoint WHERE task = ?", task).Scan(&file, &pos, &state); err != nil {
			return err
		}
		ts, err := a.Task(ctx, task)
		if err != nil {
			return err
		}
		lc := ts.LastCommit
		if lc == nil || lc.File != file || lc.Pos != pos || lc.Followed != state || !strings.Contains(state, ",") {
			return fmt.Errorf("lastCommit %+v; the target's checkpoint at %s:%d followed %q (want two servers' writes)", lc, file, pos, state)
		}
		return nil
	})
}

// TestMySQLRepointWithReplace: the operator's manual move. A task reads a
// primary; its GTID replica is promoted, and the task's spec is replaced
// with the replica as source.host (ctl task add --replace). The running
// core restarts on the new spec and resumes on the replica by GTID — the
// replica's binlog files have other names and offsets — and the target
// ends equal to the replica.
func TestMySQLRepointWithReplace(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	_, target := sharedMariaDB(t)
	args := []string{"--log-slave-updates"}
	primary := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{GTIDStrictMode: true, ExtraArgs: args})
	replica := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{GTIDStrictMode: true, ExtraArgs: args})
	gtidReplica(t, replica, primary)
	ctx := coordtest.Context(t, 3*time.Minute)
	connect := chrootOf(t, tg)
	a := NewAdmin(dial(t, connect, testSessionTimeout), "")
	db := testDB("repoint")
	createWorkloadSchema(t, db, primary, target)
	task := "repoint_" + db
	sp := mysqlSpec(task, db, primary, target)
	mustAdd(t, a, sp)
	startCoreProc(t, connect, "a", "--task", task)
	waitOwner(t, a, task, "a", StateRunning, 30*time.Second)
	if err := load(ctx, primary.DB(t), db, 0, 5_000, 100); err != nil {
		t.Fatal(err)
	}
	waitSameTables(t, primary, target, db, 60*time.Second)

	// Promote the replica once it has everything; the primary retires.
	coordtest.WaitFor(t, 60*time.Second, "the replica to catch up", func() error {
		var want, got string
		if err := primary.DB(t).QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&want); err != nil {
			return err
		}
		if err := replica.DB(t).QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&got); err != nil || got != want {
			return fmt.Errorf("replica at %q, primary at %q (%v)", got, want, err)
		}
		return nil
	})
	replica.Exec(t, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF")
	primary.Kill()
	moved := mysqlSpec(task, db, replica, target)
	if err := a.AddTask(ctx, moved, true); err != nil {
		t.Fatal(err)
	}
	if err := load(ctx, replica.DB(t), db, 5_000, 5_000, 100); err != nil {
		t.Fatal(err)
	}
	waitSameTables(t, replica, target, db, 90*time.Second)
	coordtest.WaitFor(t, 30*time.Second, "lastCommit to name the replica", func() error {
		ts, err := a.Task(ctx, task)
		if err != nil {
			return err
		}
		if lc := ts.LastCommit; lc == nil || lc.Server != "mariadb:"+fmt.Sprint(replica.ServerID()) || lc.Source != replica.Addr() {
			return fmt.Errorf("lastCommit %+v", ts.LastCommit)
		}
		return nil
	})
}
