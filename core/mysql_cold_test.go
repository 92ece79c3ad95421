package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestMySQLColdGroupKill9: two `shepherd core --group` processes share
// three tasks; each task runs exactly once. One core is killed with
// SIGKILL; once the server has expired its session, its tasks move to the
// other within one scan interval, and every target matches its source.
func TestMySQLColdGroupKill9(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		source, target := sharedMariaDB(t)
		ctx := coordtest.Context(t, 3*time.Minute)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		tasks, dbs := addColdMySQLTasks(t, a, "cold", 3, source, target)
		const scan = 500 * time.Millisecond // startCoreProc's --scan-interval
		cores := map[string]*coreProc{
			"a": startCoreProc(t, connect, "a", "--group", "g1"),
			"b": startCoreProc(t, connect, "b", "--group", "g1"),
		}
		var owners map[string]string
		coordtest.WaitFor(t, 30*time.Second, "every task to run once", func() (err error) {
			owners, err = groupOwners(a, tasks)
			return err
		})
		// The start positions are pinned once the tasks run: load now.
		waitStartsPinned(t, ctx, a, tasks)
		loaded := make(chan error, len(dbs))
		for _, db := range dbs {
			go func() { loaded <- load(ctx, source.DB(t), db, 0, 20_000, 200) }()
		}
		victim := owners[tasks[0]]
		survivor := map[string]string{"a": "b", "b": "a"}[victim]
		cores[victim].kill9()
		killed := time.Now()
		coordtest.WaitFor(t, 30*time.Second, "the tasks to move to "+survivor, func() error {
			now, err := groupOwners(a, tasks)
			if err != nil {
				return err
			}
			for task, host := range now {
				if host != survivor {
					return fmt.Errorf("%s still owned by %s", task, host)
				}
			}
			return nil
		})
		moved := time.Since(killed)
		t.Logf("cold failover (%s): tasks moved %v after the kill (session timeout %v, scan interval %v)",
			tg.Name, moved.Round(time.Millisecond), coreSessionTimeout, scan)
		for range dbs {
			if err := <-loaded; err != nil {
				t.Fatal(err)
			}
		}
		for _, db := range dbs {
			waitSameTables(t, source, target, db, 90*time.Second)
		}
	})
}
