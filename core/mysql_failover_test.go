package core

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// failoverRows is the size of the load the RUNNING core is killed in.
const failoverRows = 100_000

// TestMySQLHotFailoverKill9: two `shepherd core` processes stand by for one
// task between two mariadbd servers; the RUNNING one is killed with
// SIGKILL in the middle of a 100k-row load. The STANDBY takes over once
// the server expires the dead core's session, resumes from the target's
// checkpoint, and the target ends up identical to the source — including
// a table without a key, where a transaction applied twice would leave
// extra rows — and a counter table updated with counter = counter + 1.
func TestMySQLHotFailoverKill9(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		source, target := sharedMariaDB(t)
		ctx := coordtest.Context(t, 3*time.Minute)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		db := testDB("failover")
		createWorkloadSchema(t, db, source, target)
		task := "hot_" + db
		mustAdd(t, a, mysqlSpec(task, db, source, target))

		first := startCoreProc(t, connect, "a", "--task", task)
		running := waitOwner(t, a, task, "a", StateRunning, 30*time.Second)
		startCoreProc(t, connect, "b", "--task", task)
		coordtest.WaitFor(t, 30*time.Second, "b to stand by", func() error {
			ts, err := a.Task(ctx, task)
			if err != nil || len(ts.Instances) != 2 || ts.Instances[1].State.State != StateStandby {
				return fmt.Errorf("instances %v, %v", instanceNames(ts), err)
			}
			return nil
		})
		coordtest.WaitFor(t, 10*time.Second, "the start position in lastCommit", func() error {
			if lc, ok, err := readLastCommit(ctx, a.s, a.layout.LastCommit(task)); !ok || err != nil || lc.Position().IsZero() {
				return fmt.Errorf("lastCommit %+v, %v, %v", lc, ok, err)
			}
			return nil
		})

		loaded := make(chan error, 1)
		began := time.Now()
		go func() { loaded <- load(ctx, source.DB(t), db, 0, failoverRows, 500) }()
		coordtest.WaitFor(t, 60*time.Second, "the target to have a third of the load", func() error {
			var n int
			if err := target.DB(t).QueryRowContext(ctx, "SELECT COUNT(*) FROM "+db+".items").Scan(&n); err != nil {
				return err
			}
			if n < failoverRows/3 {
				return fmt.Errorf("%d rows", n)
			}
			return nil
		})
		first.kill9()
		killed := time.Now()
		t.Logf("killed the RUNNING core %s after %v", running.Name, killed.Sub(began).Round(time.Millisecond))

		// Failover: from the kill until b has claimed the target's
		// checkpoint, and until b's first commit moves it.
		var claimed, applying time.Duration
		var claimPos uint64
		coordtest.WaitFor(t, 30*time.Second, "b to commit to the target", func() error {
			owner, _, pos, err := targetCheckpoint(ctx, target.DB(t), task)
			if err != nil || !strings.HasPrefix(owner, "b-") {
				return fmt.Errorf("checkpoint owner %q, %v", owner, err)
			}
			if claimed == 0 {
				claimed, claimPos = time.Since(killed), pos
			}
			if pos == claimPos {
				return fmt.Errorf("b has claimed the checkpoint at %d but not committed yet", pos)
			}
			applying = time.Since(killed)
			return nil
		})
		t.Logf("failover (%s, session timeout %v): b claimed the target %v after the kill, applying after %v",
			tg.Name, coreSessionTimeout, claimed.Round(time.Millisecond), applying.Round(time.Millisecond))

		if err := <-loaded; err != nil {
			t.Fatal(err)
		}
		waitSameTables(t, source, target, db, 90*time.Second)
		next := waitOwner(t, a, task, "b", StateRunning, 10*time.Second)
		if next.State.Epoch <= running.State.Epoch {
			t.Errorf("epoch %d after %d: want it to grow", next.State.Epoch, running.State.Epoch)
		}
		coordtest.WaitFor(t, 10*time.Second, "lastCommit to be b's", func() error {
			lc, _, err := readLastCommit(ctx, a.s, a.layout.LastCommit(task))
			if err != nil || lc.Owner != next.Name || lc.Epoch != next.State.Epoch {
				return fmt.Errorf("lastCommit %+v, %v; want owner %s", lc, err, next.Name)
			}
			return nil
		})
	})
}

// TestMySQLZombieCannotWrite: a RUNNING core frozen (SIGSTOP) past its
// session timeout is a zombie when it wakes: still connected to both
// servers, sure it owns the task. The standby has taken over meanwhile;
// the zombie can neither commit to the target nor write lastCommit, and
// stands by again.
func TestMySQLZombieCannotWrite(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		source, target := sharedMariaDB(t)
		ctx := coordtest.Context(t, 3*time.Minute)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		db := testDB("zombie")
		createWorkloadSchema(t, db, source, target)
		task := "zombie_" + db
		mustAdd(t, a, mysqlSpec(task, db, source, target))

		zombie := startCoreProc(t, connect, "a", "--task", task)
		waitOwner(t, a, task, "a", StateRunning, 30*time.Second)
		startCoreProc(t, connect, "b", "--task", task)
		coordtest.WaitFor(t, 30*time.Second, "b to stand by", func() error {
			ts, err := a.Task(ctx, task)
			if err != nil || len(ts.Instances) != 2 {
				return fmt.Errorf("instances %v, %v", instanceNames(ts), err)
			}
			return nil
		})
		loaded := make(chan error, 1)
		go func() { loaded <- load(ctx, source.DB(t), db, 0, 40_000, 200) }()
		coordtest.WaitFor(t, 60*time.Second, "a to apply some", func() error {
			var n int
			if err := target.DB(t).QueryRowContext(ctx, "SELECT COUNT(*) FROM "+db+".items").Scan(&n); err != nil || n < 2000 {
				return fmt.Errorf("%d rows, %v", n, err)
			}
			return nil
		})
		zombie.signal(syscall.SIGSTOP)
		next := waitOwner(t, a, task, "b", StateRunning, 30*time.Second)
		// The zombie wakes with its connections and its belief. (It may
		// have been frozen inside a target transaction, whose locks hold
		// b's claim back: that transaction may still commit, before b's
		// claim, as it would have had a been slow rather than frozen.)
		zombie.signal(syscall.SIGCONT)
		coordtest.WaitFor(t, 60*time.Second, "b to own the target's checkpoint", func() error {
			owner, _, _, err := targetCheckpoint(ctx, target.DB(t), task)
			if err != nil || owner != next.Name {
				return fmt.Errorf("owner %q, %v", owner, err)
			}
			return nil
		})
		// From b's claim on, nothing of a's may get through.
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			owner, _, _, err := targetCheckpoint(ctx, target.DB(t), task)
			if err != nil {
				t.Fatal(err)
			}
			if owner != next.Name {
				t.Fatalf("the zombie wrote the target's checkpoint: owner %s", owner)
			}
			lc, _, err := readLastCommit(ctx, a.s, a.layout.LastCommit(task))
			if err != nil {
				t.Fatal(err)
			}
			if lc.Owner != next.Name {
				t.Fatalf("the zombie wrote lastCommit: %+v", lc)
			}
			time.Sleep(50 * time.Millisecond)
		}
		coordtest.WaitFor(t, 30*time.Second, "the zombie to stand by", func() error {
			ts, err := a.Task(ctx, task)
			if err != nil || len(ts.Instances) != 2 || ts.Instances[1].State.Host != "a" || ts.Instances[1].State.State != StateStandby {
				return fmt.Errorf("instances %v, %v", instanceNames(ts), err)
			}
			return nil
		})
		if err := <-loaded; err != nil {
			t.Fatal(err)
		}
		waitSameTables(t, source, target, db, 90*time.Second)
		log := zombie.logText()
		if !strings.Contains(log, "session lost") {
			t.Errorf("the zombie's log does not say it lost its session:\n%s", log)
		}
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "fenced") || strings.Contains(line, "session lost") || strings.Contains(line, "standing by") {
				t.Logf("zombie: %s", line)
			}
		}
	})
}
