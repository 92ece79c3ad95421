package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// maxTurnChecks bounds how often one contender re-reads the queue while
// waiting for one acquisition; each check follows a notification or a
// predecessor that vanished, so a few per contender ahead suffice.
const maxTurnChecks = 100_000

// errMutualExclusion is returned if two contenders held the lock at once:
// the server broke sequential-node or watch semantics.
var errMutualExclusion = errors.New("two contenders held the lock at once")

// lockStats is shared by the contenders of one lock run.
type lockStats struct {
	cycles        atomic.Int64
	notifications atomic.Int64
	holders       atomic.Int32
	lastRelease   atomic.Int64 // UnixNano of the latest release, 0 before the first
}

// runLock makes every session a contender for one lock implemented the
// herd-free way (ZooKeeper recipe): create an ephemeral-sequential node,
// hold the lock when it is the smallest, otherwise watch only the next
// smaller node. Result.Ops counts acquire+release cycles; P50/P99 are of
// the hand-off, from the holder's release until the next holder knows it
// holds. "notify/release" is the watch notifications the contenders got
// per release: near 1 when herd-free, near the contender count with a
// herd.
func runLock(parent context.Context, e *env) (Result, error) {
	dir := e.root + "/lock"
	if err := ensurePath(e.conns[0], dir); err != nil {
		return Result{}, err
	}
	limit := int64(maxLoopOps)
	if e.o.Ops > 0 {
		limit = int64(e.o.Ops)
	}
	var (
		st       lockStats
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		handoffs = make([]*recorder, len(e.conns))
		waits    = make([]*recorder, len(e.conns))
	)
	p := newProgress(e.log, "lock cycles", e.o.Ops)
	m, err := e.startMeasured(parent)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(parent, e.o.Duration)
	defer cancel()
	for i, conn := range e.conns {
		handoffs[i], waits[i] = newRecorder(uint64(i)), newRecorder(uint64(i)+1<<32)
		wg.Go(func() {
			for ctx.Err() == nil && st.cycles.Load() < limit {
				if err := lockCycle(ctx, conn, dir, &st, handoffs[i], waits[i]); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("bench: %s: contender %d: %w", e.name, i, err) })
					cancel()
					return
				}
				p.add(1)
			}
		})
	}
	wg.Wait()
	if err := e.stopMeasured(m); err != nil {
		return Result{}, err
	}
	if firstErr != nil {
		return Result{}, firstErr
	}
	if err := parent.Err(); err != nil {
		return Result{}, fmt.Errorf("bench: %s: %w", e.name, err)
	}
	cycles := st.cycles.Load()
	res := m.result(e.name, int(cycles), mergeRecorders(handoffs...))
	res.Extra["contenders"] = fmt.Sprint(len(e.conns))
	res.Extra["notify/release"] = formatRatio(float64(st.notifications.Load()), float64(cycles))
	res.Extra["acquire-wait-p50"] = formatDuration(mergeRecorders(waits...).percentile(0.5))
	return res, nil
}

// lockCycle queues for the lock, holds it for no time and releases it. If
// ctx ends while queued it withdraws from the queue and returns nil.
func lockCycle(ctx context.Context, conn *zk.Conn, dir string, st *lockStats, handoff, wait *recorder) error {
	start := time.Now()
	me, err := conn.Create(dir+"/c-", nil, zk.FlagEphemeralSequential, openACL)
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	held, err := awaitTurn(ctx, conn, dir, me[len(dir)+1:], st)
	if err != nil || !held {
		// Withdraw so that the successor is not left behind a ghost; the
		// session's end would remove it too, but only at Close.
		if derr := conn.Delete(me, -1); derr != nil && !errors.Is(derr, zk.ErrNoNode) {
			err = errors.Join(err, fmt.Errorf("withdraw %s: %w", me, derr))
		}
		return err
	}
	acquired := time.Now()
	if st.holders.Add(1) != 1 {
		return fmt.Errorf("%w (%s)", errMutualExclusion, me)
	}
	if last := st.lastRelease.Load(); last != 0 {
		handoff.record(acquired.Sub(time.Unix(0, last)))
	}
	wait.record(acquired.Sub(start))
	st.cycles.Add(1)
	st.holders.Add(-1)
	st.lastRelease.Store(time.Now().UnixNano())
	if err := conn.Delete(me, -1); err != nil {
		return fmt.Errorf("release %s: %w", me, err)
	}
	return nil
}

// awaitTurn blocks until name is the smallest child of dir (true), or ctx
// ends (false).
func awaitTurn(ctx context.Context, conn *zk.Conn, dir, name string, st *lockStats) (bool, error) {
	for range maxTurnChecks {
		children, _, err := conn.Children(dir)
		if err != nil {
			return false, fmt.Errorf("list %s: %w", dir, err)
		}
		// Every child shares the "c-" prefix, so the zero-padded
		// sequence numbers sort lexically.
		slices.Sort(children)
		i, found := slices.BinarySearch(children, name)
		if !found {
			return false, fmt.Errorf("own node %s/%s vanished", dir, name)
		}
		if i == 0 {
			return true, nil
		}
		pred := dir + "/" + children[i-1]
		ok, _, ch, err := conn.ExistsW(pred)
		if err != nil {
			return false, fmt.Errorf("watch %s: %w", pred, err)
		}
		if !ok {
			continue // the predecessor left between the listing and the watch
		}
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDeleted {
				return false, fmt.Errorf("watch %s: %w: %v %v", pred, errWrongEvent, ev.Type, ev.Err)
			}
			st.notifications.Add(1)
		case <-ctx.Done():
			return false, nil
		}
	}
	return false, fmt.Errorf("not the smallest of %s after %d checks", dir, maxTurnChecks)
}
