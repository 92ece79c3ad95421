package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// groupOwners returns, per task, the host of its single RUNNING
// instance, or an error if some task has none or more than one instance.
func groupOwners(a *Admin, tasks []string) (map[string]string, error) {
	owners := map[string]string{}
	for _, name := range tasks {
		ts, err := a.Task(context.Background(), name)
		if err != nil {
			return nil, err
		}
		if len(ts.Instances) != 1 || ts.Instances[0].State.State != StateRunning {
			return nil, fmt.Errorf("%s: instances %v", name, instanceNames(ts))
		}
		owners[name] = ts.Instances[0].State.Host
	}
	return owners, nil
}

// TestColdGroupScan: two cores scanning one group run its three tasks,
// each exactly once; when a core dies its tasks move to the other within
// a scan interval, and resume without applying anything twice.
func TestColdGroupScan(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		tasks := []string{"c1", "c2", "c3"}
		fleet := memFleet{}
		for _, name := range tasks {
			mustAdd(t, a, coldSpec(name, "g1"))
			fleet[name] = NewMemEngine(2000)
		}
		mustAdd(t, a, coldSpec("other", "g2")) // not this group's
		const scan = 300 * time.Millisecond
		group := func(c *Config) { c.Group, c.ScanInterval = "g1", scan }
		cores := map[string]*runningCore{
			"h1": startCore(t, connect, "h1", fleet, group),
			"h2": startCore(t, connect, "h2", fleet, group),
		}
		var owners map[string]string
		coordtest.WaitFor(t, 10*time.Second, "every task to run once", func() (err error) {
			owners, err = groupOwners(a, tasks)
			return err
		})
		if ts, err := a.Task(context.Background(), "other"); err != nil || len(ts.Instances) != 0 {
			t.Errorf("task of group g2: instances %v, %v; want none", instanceNames(ts), err)
		}
		victim := owners["c1"]
		survivor := map[string]string{"h1": "h2", "h2": "h1"}[victim]
		for _, eng := range fleet {
			eng.kill(t, victim+"-") // the process dies, then the server notices
		}
		cores[victim].crash()
		gone := time.Now()
		coordtest.WaitFor(t, 10*time.Second, "the tasks to move to "+survivor, func() error {
			now, err := groupOwners(a, tasks)
			if err != nil {
				return err
			}
			for name, host := range now {
				if host != survivor {
					return fmt.Errorf("%s still owned by %s", name, host)
				}
			}
			return nil
		})
		moved := time.Since(gone)
		t.Logf("tasks moved %v after the owner's session ended (scan interval %v)", moved.Round(time.Millisecond), scan)
		for name, eng := range fleet {
			eng.AddEvents(100)
			waitApplied(t, eng, 20*time.Second)
			if maxRunning, _, _, _ := eng.stats(); maxRunning != 1 {
				t.Errorf("%s: %d instances applied at once; want 1", name, maxRunning)
			}
		}
	})
}

// TestColdStopReleases: a stopped cold task is given up (no instance) and
// not taken by scans until it is started again.
func TestColdStopReleases(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		ctx := coordtest.Context(t, 30*time.Second)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		mustAdd(t, a, coldSpec("c1", "g1"))
		eng := NewMemEngine(500)
		startCore(t, connect, "h1", eng, func(c *Config) { c.Group = "g1" })
		waitOwner(t, a, "c1", "h1", StateRunning, 10*time.Second)
		if err := a.SetState(ctx, "c1", DesiredStopped); err != nil {
			t.Fatal(err)
		}
		coordtest.WaitFor(t, 10*time.Second, "the task to be given up", func() error {
			ts, err := a.Task(ctx, "c1")
			if err != nil || len(ts.Instances) != 0 {
				return fmt.Errorf("instances %v, %v", instanceNames(ts), err)
			}
			return nil
		})
		time.Sleep(3 * 200 * time.Millisecond) // three scans
		if ts, _ := a.Task(ctx, "c1"); len(ts.Instances) != 0 {
			t.Fatalf("a stopped task was taken: %v", instanceNames(ts))
		}
		// Stopped, it can be removed; a cold core has nothing to stop.
		if err := a.RemoveTask(ctx, "c1"); err != nil {
			t.Fatalf("RemoveTask of a stopped cold task: %v", err)
		}
		for _, p := range []string{a.layout.Task("c1"), a.layout.GroupTask("g1", "c1")} {
			if ok, _, err := a.s.Exists(ctx, p); ok || err != nil {
				t.Errorf("%s after RemoveTask: exists %v, %v", p, ok, err)
			}
		}
		mustAdd(t, a, coldSpec("c1", "g1"))
		waitOwner(t, a, "c1", "h1", StateRunning, 10*time.Second)
		if ts, err := a.Task(ctx, "c1"); err != nil || ts.LastCommit == nil || !strings.HasPrefix(ts.LastCommit.Owner, "h1-") {
			t.Errorf("lastCommit of the re-added task: %+v, %v", ts.LastCommit, err)
		}
	})
}
