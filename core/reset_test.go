package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestResetEpochAfterEnsembleMove: a task whose stored epochs come from
// another coordination ensemble (larger than any this one hands out) is
// fenced for good; ResetEpoch refuses while the task runs, and once it is
// stopped sets both stored epochs to 0, keeping the positions, so that
// the task resumes from its checkpoint and applies everything once.
func TestResetEpochAfterEnsembleMove(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		ctx := context.Background()
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		mustAdd(t, a, testSpec("t1"))

		// What the old ensemble left: the target's checkpoint and
		// lastCommit at event 40, under an epoch of its own.
		const oldEpoch = int64(1) << 60
		eng := NewMemEngine(100)
		eng.mu.Lock()
		for i := range 40 {
			eng.applied[i] = 1
		}
		eng.cp = Checkpoint{Position: Position{File: memFile, Pos: 40}, Epoch: oldEpoch, Owner: "old-0000000007", Time: time.Now()}
		eng.hasCP = true
		eng.mu.Unlock()
		old := LastCommit{Version: docVersion, File: memFile, Pos: 40, Time: time.Now(), Owner: "old-0000000007", Epoch: oldEpoch}
		if _, err := a.s.Create(ctx, a.layout.LastCommit("t1"), old.Marshal(), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}

		startCore(t, connect, "h1", eng, func(c *Config) { c.Tasks = []string{"t1"} })
		// Fenced: the core keeps trying and never applies.
		time.Sleep(3 * testSessionTimeout)
		if n, _ := eng.Check(); n != 40 {
			t.Fatalf("before the reset: %d events applied; want the old 40", n)
		}
		if _, err := a.ResetEpoch(ctx, "t1", eng, coordtest.Logger(t)); !errors.Is(err, ErrTaskBusy) {
			t.Fatalf("ResetEpoch of a running task: %v, want ErrTaskBusy", err)
		}

		if err := a.SetState(ctx, "t1", DesiredStopped); err != nil {
			t.Fatal(err)
		}
		var first EpochReset
		coordtest.WaitFor(t, 20*time.Second, "no instance RUNNING", func() (err error) {
			first, err = a.ResetEpoch(ctx, "t1", eng, coordtest.Logger(t))
			return err
		})
		if first.TargetEpoch != oldEpoch || first.LastCommitEpoch != oldEpoch {
			t.Fatalf("ResetEpoch = %+v; want both epochs found at %d", first, oldEpoch)
		}
		// A second reset finds both at 0 already.
		res, err := a.ResetEpoch(ctx, "t1", eng, coordtest.Logger(t))
		if err != nil || res.TargetEpoch != 0 || res.LastCommitEpoch != 0 {
			t.Fatalf("second ResetEpoch = %+v, %v; want both epochs found at 0", res, err)
		}
		lc, _, err := readLastCommit(ctx, a.s, a.layout.LastCommit("t1"))
		if err != nil || lc.Pos != 40 || lc.Owner != old.Owner {
			t.Fatalf("lastCommit after the reset: %+v, %v; want position 40 kept", lc, err)
		}

		if err := a.SetState(ctx, "t1", DesiredRunning); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, eng, 20*time.Second)
		if n, _ := eng.Check(); n != 100 {
			t.Fatalf("%d events applied, want 100", n)
		}
		if _, _, _, cp := eng.stats(); cp.Epoch <= 0 || cp.Epoch >= oldEpoch {
			t.Errorf("target checkpoint epoch %d after the reset: want this ensemble's", cp.Epoch)
		}
	})
}
