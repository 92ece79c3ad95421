package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestMySQLSnapshotKill9: a task with start: snapshot copies a
// 20,000-row database (a keyed table, a counter table and a keyless
// journal) into a target that has none of its tables, while the source
// takes writes; the RUNNING core is killed with SIGKILL mid-copy. The
// STANDBY resumes the copy at the target's cursor, hands over to the
// binlog, and the target ends identical to the source. The copy's
// progress is in the owner's instance state while it runs.
func TestMySQLSnapshotKill9(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		source, target := sharedMariaDB(t)
		ctx := coordtest.Context(t, 3*time.Minute)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		db := testDB("snapshot")
		createWorkloadSchema(t, db, source) // the copy creates the target's tables
		if err := load(ctx, source.DB(t), db, 0, 20_000, 500); err != nil {
			t.Fatal(err)
		}
		task := "snap_" + db
		sp := mysqlSpec(task, db, source, target)
		sp.Start = StartSnapshot
		sp.Snapshot = Snapshot{ChunkRows: 500, MaxRowsPerSecond: 4000}
		mustAdd(t, a, sp)

		first := startCoreProc(t, connect, "a", "--task", task)
		waitOwner(t, a, task, "a", StateRunning, 30*time.Second)
		startCoreProc(t, connect, "b", "--task", task)

		loaded := make(chan error, 1)
		go func() { loaded <- load(ctx, source.DB(t), db, 20_000, 5_000, 250) }()
		coordtest.WaitFor(t, 60*time.Second, "a to report copy progress", func() error {
			ts, err := a.Task(ctx, task)
			if err != nil {
				return err
			}
			o, ok := ts.Owner()
			if !ok || o.State.Snapshot == nil || o.State.Snapshot.Rows == 0 || o.State.Snapshot.Estimated == 0 {
				return fmt.Errorf("owner %v: %+v", ok, o.State.Snapshot)
			}
			return nil
		})
		first.kill9()
		var state string
		if err := target.DB(t).QueryRowContext(ctx, "SELECT snapshot_state FROM shepherd.shepherd_checkpoint WHERE task = ?", task).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(state, `"done":true`) {
			t.Fatalf("the copy finished before the kill: %s", state)
		}
		t.Logf("killed the RUNNING core at copy cursor %s", state)

		waitOwner(t, a, task, "b", StateRunning, 30*time.Second)
		coordtest.WaitFor(t, 90*time.Second, "b to finish the copy", func() error {
			var state string
			if err := target.DB(t).QueryRowContext(ctx, "SELECT snapshot_state FROM shepherd.shepherd_checkpoint WHERE task = ?", task).Scan(&state); err != nil {
				return err
			}
			if !strings.Contains(state, `"done":true`) {
				return fmt.Errorf("copy state %s", state)
			}
			return nil
		})
		if err := <-loaded; err != nil {
			t.Fatal(err)
		}
		waitSameTables(t, source, target, db, 90*time.Second)
	})
}
