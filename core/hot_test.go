package core

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestHotStandbyHandOver: the first core runs the task, the second stands
// by; when the first stops gracefully it writes lastCommit and hands over,
// and the second resumes where it stopped: every event applied once, by
// one instance at a time, and the epoch grows.
func TestHotStandbyHandOver(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		mustAdd(t, a, testSpec("t1"))
		eng := NewMemEngine(3000)
		eng.delay = time.Millisecond

		// h1 mirrors lastCommit only when it stops: what h2 resumes from
		// shows that it did.
		first := startCore(t, connect, "h1", eng, func(c *Config) { c.Tasks, c.CheckpointInterval = []string{"t1"}, time.Hour })
		owner := waitOwner(t, a, "t1", "h1", StateRunning, 10*time.Second)
		if !regexp.MustCompile(`^h1-\d{10}$`).MatchString(owner.Name) {
			t.Errorf("instance node %q: want h1-<10-digit sequence>", owner.Name)
		}
		reg := prometheus.NewRegistry()
		startCore(t, connect, "h2", eng, func(c *Config) { c.Tasks, c.Registerer = []string{"t1"}, reg })
		coordtest.WaitFor(t, 10*time.Second, "h2 to stand by", func() error {
			ts, err := a.Task(context.Background(), "t1")
			if err != nil {
				return err
			}
			if len(ts.Instances) != 2 || ts.Instances[1].State.State != StateStandby || ts.Instances[1].State.Host != "h2" {
				return fmt.Errorf("instances %v", instanceNames(ts))
			}
			return nil
		})
		coordtest.WaitFor(t, 10*time.Second, "h1 to apply something", func() error {
			if _, _, _, cp := eng.stats(); cp.Position.Pos < 300 {
				return fmt.Errorf("checkpoint %v", cp.Position)
			}
			return nil
		})
		first.stop()
		next := waitOwner(t, a, "t1", "h2", StateRunning, 10*time.Second)
		// The instance shows RUNNING just before its first Run starts.
		var last Position
		var froms []ownerPos
		i := -1
		coordtest.WaitFor(t, 10*time.Second, "h2's first run", func() error {
			eng.mu.Lock()
			last, froms = eng.lastBy[owner.Name], slices.Clone(eng.froms)
			eng.mu.Unlock()
			if i = slices.IndexFunc(froms, func(f ownerPos) bool { return f.owner == next.Name }); i < 0 {
				return fmt.Errorf("runs so far: %+v", froms)
			}
			return nil
		})
		if froms[i].pos != last {
			t.Errorf("h2's runs started at %+v; want the first at %v, where h1 stopped (its final lastCommit)", froms, last)
		}
		if next.State.Epoch <= owner.State.Epoch {
			t.Errorf("epoch %d after %d: want it to grow with the takeover", next.State.Epoch, owner.State.Epoch)
		}
		eng.AddEvents(500)
		waitApplied(t, eng, 20*time.Second)
		if maxRunning, _, _, _ := eng.stats(); maxRunning != 1 {
			t.Errorf("%d instances applied at once; want 1", maxRunning)
		}
		task := map[string]string{"task": "t1"}
		if v := metricValue(t, reg, "shepherd_core_instance_state", map[string]string{"task": "t1", "state": StateRunning}); v != 1 {
			t.Errorf("h2's RUNNING state gauge = %v, want 1", v)
		}
		if v := metricValue(t, reg, "shepherd_core_terms_total", task); v != 1 {
			t.Errorf("h2's terms = %v, want 1", v)
		}
		if v := metricValue(t, reg, "shepherd_core_rows_applied_total", task); v < 500 {
			t.Errorf("h2 applied %v rows by its metrics, want at least the 500 added after the takeover", v)
		}
		coordtest.WaitFor(t, 5*time.Second, "lastCommit to reach the end", func() error {
			lc, _, err := readLastCommit(context.Background(), a.s, a.layout.LastCommit("t1"))
			if err != nil {
				return err
			}
			if lc.Pos != 3500 || lc.Owner != next.Name || lc.Epoch != next.State.Epoch {
				return fmt.Errorf("lastCommit %+v; want pos 3500 by %s epoch %d", lc, next.Name, next.State.Epoch)
			}
			return nil
		})
	})
}

// TestHotStandbyTakeOverAfterCrash: the owner's session ends without a
// hand-over; the standby resumes from the later of lastCommit and the
// target's checkpoint, with nothing applied twice.
func TestHotStandbyTakeOverAfterCrash(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		mustAdd(t, a, testSpec("t1"))
		eng := NewMemEngine(4000)
		eng.delay = time.Millisecond
		first := startCore(t, connect, "h1", eng, func(c *Config) {
			c.Tasks = []string{"t1"}
			c.CheckpointInterval = time.Hour // lastCommit lags far behind the target
		})
		waitOwner(t, a, "t1", "h1", StateRunning, 10*time.Second)
		startCore(t, connect, "h2", eng, func(c *Config) { c.Tasks = []string{"t1"} })
		coordtest.WaitFor(t, 10*time.Second, "h1 to apply a fair part", func() error {
			if _, _, _, cp := eng.stats(); cp.Position.Pos < 1000 {
				return fmt.Errorf("checkpoint %v", cp.Position)
			}
			return nil
		})
		eng.kill(t, "h1-") // the process dies, then the server notices
		first.crash()
		waitOwner(t, a, "t1", "h2", StateRunning, 10*time.Second)
		waitApplied(t, eng, 20*time.Second)
		if maxRunning, _, _, _ := eng.stats(); maxRunning != 1 {
			t.Errorf("%d instances applied at once; want 1", maxRunning)
		}
	})
}

// TestSuspendedOwnerPausesAndLostOwnerStandsBy: an owner cut off from the
// coordination server stops applying at once (Suspended); once its
// session has expired the standby takes over with a larger epoch; when
// the network heals, the old owner queues again as STANDBY.
func TestSuspendedOwnerPausesAndLostOwnerStandsBy(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		mustAdd(t, a, testSpec("t1"))
		eng := NewMemEngine(100000)
		eng.delay = 5 * time.Millisecond
		eng.batch = 1

		// h1 reaches the server through a partition it can be cut off by.
		_, chroot, _ := cutChroot(connect)
		p := newPartition(t, tg.Addr)
		s1 := dial(t, p.Addr()+chroot, testSessionTimeout)
		startCoreOn(t, s1, "h1", eng, func(c *Config) { c.Tasks = []string{"t1"} })
		owner := waitOwner(t, a, "t1", "h1", StateRunning, 10*time.Second)
		startCore(t, connect, "h2", eng, func(c *Config) { c.Tasks = []string{"t1"} })

		p.Partition()
		cut := time.Now()
		coordtest.WaitFor(t, 5*time.Second, "h1 to stop applying", func() error {
			eng.mu.Lock()
			defer eng.mu.Unlock()
			if n := eng.running[owner.Name]; n != 0 {
				return fmt.Errorf("h1 has %d runs applying", n)
			}
			return nil
		})
		if d := time.Since(cut); d > testSessionTimeout {
			t.Errorf("h1 paused %v after the cut: after its session could have expired", d)
		}
		next := waitOwner(t, a, "t1", "h2", StateRunning, 15*time.Second)
		if next.State.Epoch <= owner.State.Epoch {
			t.Errorf("epoch %d after %d", next.State.Epoch, owner.State.Epoch)
		}
		p.Heal()
		coordtest.WaitFor(t, 15*time.Second, "h1 to stand by again", func() error {
			ts, err := a.Task(context.Background(), "t1")
			if err != nil {
				return err
			}
			if len(ts.Instances) != 2 || ts.Instances[1].State.Host != "h1" || ts.Instances[1].State.State != StateStandby {
				return fmt.Errorf("instances %v", instanceNames(ts))
			}
			return nil
		})
		eng.endSoon(50)
		waitApplied(t, eng, 20*time.Second)
		if maxRunning, _, _, _ := eng.stats(); maxRunning != 1 {
			t.Errorf("%d instances applied at once; want 1", maxRunning)
		}
	})
}

// TestZombieOwnerIsFenced: an owner whose session is gone but whose
// replicator goes on applying (a process that was frozen, or does not
// notice) cannot commit once the new owner has: the target's epoch fence
// stops it, nothing is applied twice, and lastCommit stays the new
// owner's.
func TestZombieOwnerIsFenced(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		mustAdd(t, a, testSpec("t1"))
		eng := NewMemEngine(100000)
		eng.delay = 5 * time.Millisecond
		eng.batch = 1
		eng.zombie["h1-"] = true

		_, chroot, _ := cutChroot(connect)
		p := newPartition(t, tg.Addr)
		s1 := dial(t, p.Addr()+chroot, testSessionTimeout)
		startCoreOn(t, s1, "h1", eng, func(c *Config) { c.Tasks = []string{"t1"} })
		waitOwner(t, a, "t1", "h1", StateRunning, 10*time.Second)
		startCore(t, connect, "h2", eng, func(c *Config) { c.Tasks = []string{"t1"} })

		p.Partition()
		next := waitOwner(t, a, "t1", "h2", StateRunning, 15*time.Second)
		coordtest.WaitFor(t, 10*time.Second, "the zombie to be fenced by the target", func() error {
			if _, fenced, _, _ := eng.stats(); fenced == 0 {
				return fmt.Errorf("no commit refused yet")
			}
			return nil
		})
		coordtest.WaitFor(t, 5*time.Second, "lastCommit written by the new owner", func() error {
			lc, _, err := readLastCommit(context.Background(), a.s, a.layout.LastCommit("t1"))
			if err != nil {
				return err
			}
			if lc.Owner != next.Name {
				return fmt.Errorf("lastCommit owner %s, want %s", lc.Owner, next.Name)
			}
			return nil
		})
		p.Heal()
		eng.endSoon(50)
		waitApplied(t, eng, 20*time.Second)
		if _, _, _, cp := eng.stats(); cp.Owner != next.Name {
			t.Errorf("target checkpoint by %s, want the new owner %s", cp.Owner, next.Name)
		}
	})
}

// cutChroot splits a connect string into servers and chroot.
func cutChroot(connect string) (servers, chroot string, ok bool) {
	for i := 0; i < len(connect); i++ {
		if connect[i] == '/' {
			return connect[:i], connect[i:], true
		}
	}
	return connect, "", false
}
