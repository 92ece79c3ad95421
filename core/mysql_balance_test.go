package core

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestMySQLColdBalanceRollingRestart: four tasks in a group of two
// `shepherd core` processes spread 2/2; under a steady load each core is
// stopped (SIGTERM) and started again in turn. No task is ever RUNNING on
// two cores, the group ends 2/2, and every target ends identical to its
// source (a keyless journal and counter increments: an apply repeated
// after a hand-over would show).
func TestMySQLColdBalanceRollingRestart(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		source, target := sharedMariaDB(t)
		ctx := coordtest.Context(t, 4*time.Minute)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		tasks, dbs := addColdMySQLTasks(t, a, "bal", 4, source, target)
		hosts := []string{"a", "b"}
		cores := map[string]*coreProc{}
		for _, h := range hosts {
			cores[h] = startCoreProc(t, connect, h, "--group", "g1")
		}
		spread := func() (map[string]int, error) {
			owners, err := groupOwners(a, tasks)
			out := map[string]int{}
			for _, h := range owners {
				out[h]++
			}
			return out, err
		}
		even := map[string]int{"a": 2, "b": 2}
		coordtest.WaitFor(t, 60*time.Second, "the tasks spread 2/2", func() error {
			got, err := spread()
			if err == nil && !maps.Equal(got, even) {
				err = fmt.Errorf("spread %v", got)
			}
			return err
		})
		waitStartsPinned(t, ctx, a, tasks)
		sampler := sampleGroupOwnership(t, dial(t, connect, testSessionTimeout), "g1", tasks)
		loadCtx, stopLoad := context.WithCancel(ctx)
		loaded := make(chan error, len(dbs))
		for _, db := range dbs {
			go func() { // 1000 rows at a time until the restarts are over
				var err error
				for first := 0; err == nil && loadCtx.Err() == nil && first < 200_000; first += 1000 {
					err = load(ctx, source.DB(t), db, first, 1000, 50)
				}
				loaded <- err
			}()
		}
		for _, h := range hosts {
			cores[h].stop()
			coordtest.WaitFor(t, 60*time.Second, h+"'s tasks to move", func() error {
				got, err := spread()
				if err == nil && got[h] > 0 {
					err = fmt.Errorf("spread %v", got)
				}
				return err
			})
			cores[h] = startCoreProc(t, connect, h, "--group", "g1")
			coordtest.WaitFor(t, 60*time.Second, "the tasks spread 2/2 again", func() error {
				got, err := spread()
				if err == nil && !maps.Equal(got, even) {
					err = fmt.Errorf("spread %v", got)
				}
				return err
			})
		}
		stopLoad()
		for range dbs {
			if err := <-loaded; err != nil {
				t.Fatal(err)
			}
		}
		for _, db := range dbs {
			waitSameTables(t, source, target, db, 90*time.Second)
		}
		sampler.check(t)
	})
}
