package coord

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// syncer makes batches durable and then releases their replies. It is the
// only goroutine that appends to the log, so log order is batch order.
type syncer struct {
	s        *Server
	in       chan *batch
	free     chan *batch // committed batches, emptied, for the pipeline to refill
	snapping atomic.Bool // a snapshot is being written
	failed   bool        // the disk failed: nothing more may be acknowledged
}

func newSyncer(s *Server) *syncer {
	// No queue: the pipeline keeps adding to its batch while the syncer
	// works, and hands over everything it gathered when the syncer is free
	// (see pipeline.run), rather than a few small batches that would each
	// cost an fsync.
	return &syncer{s: s, in: make(chan *batch), free: make(chan *batch, 4)}
}

// reuse returns an empty batch for the pipeline to fill: a committed one
// if there is one, so that a busy server does not allocate two slices
// per batch.
func (y *syncer) reuse() *batch {
	select {
	case b := <-y.free:
		return b
	default:
		return &batch{}
	}
}

// recycle empties a committed batch and offers it for reuse. Its slices
// are cleared so that they keep no replies or log records alive.
func (y *syncer) recycle(b *batch) {
	clear(b.txns)
	clear(b.outs)
	b.txns, b.outs, b.snapshot = b.txns[:0], b.outs[:0], nil
	select {
	case y.free <- b:
	default:
	}
}

func (y *syncer) snapshotIdle() bool { return !y.snapping.Load() }

func (y *syncer) run() {
	for b := range y.in {
		y.commit(b)
		y.recycle(b)
	}
}

// commit makes b's transactions durable with one fsync, then releases its
// replies and starts its snapshot. The pipeline hands over everything it
// gathered while the last commit ran as one batch (see pipeline.run), so
// one fsync covers it all.
func (y *syncer) commit(b *batch) {
	if y.failed {
		return
	}
	store := y.s.store
	for _, t := range b.txns {
		if err := store.Append(t.zxid, t.data); err != nil {
			y.fail(fmt.Errorf("append zxid %#x: %w", t.zxid, err))
			return
		}
	}
	if len(b.txns) > 0 {
		started := time.Now()
		if err := store.Sync(); err != nil {
			y.fail(fmt.Errorf("fsync transaction log: %w", err))
			return
		}
		y.s.metrics.fsyncSeconds.Observe(time.Since(started).Seconds())
		y.s.metrics.batchTxns.Observe(float64(len(b.txns)))
	}
	for _, d := range b.outs {
		d.conn.send(d.frame)
	}
	// Every transaction the snapshot covers is durable now, and none
	// after it has been appended: its new log segment starts right here.
	if b.snapshot != nil {
		y.snapshot(b)
	}
}

// snapshot writes b's frozen tree in the background. Every transaction it
// contains is already durable in the log (this batch was just synced), so a
// crash mid-snapshot loses nothing: recovery uses the previous snapshot.
func (y *syncer) snapshot(b *batch) {
	if err := y.s.store.Roll(); err != nil {
		y.s.log.Warn("cannot start a new log segment before the snapshot", "err", err)
	}
	y.snapping.Store(true)
	frozen := b.snapshot
	y.s.run(func() {
		defer y.snapping.Store(false)
		started := time.Now()
		err := y.s.store.WriteSnapshot(frozen.Zxid(), func(w io.Writer) error {
			_, err := frozen.WriteTo(w)
			return err
		})
		if err != nil {
			y.s.log.Error("snapshot failed; the log still has every transaction", "zxid", fmt.Sprintf("%#x", frozen.Zxid()), "err", err)
			return
		}
		y.s.metrics.snapshotSeconds.Observe(time.Since(started).Seconds())
		y.s.log.Info("snapshot written", "zxid", fmt.Sprintf("%#x", frozen.Zxid()), "took", time.Since(started).Round(time.Millisecond))
	})
}

func (y *syncer) fail(err error) {
	y.failed = true
	y.s.fatal(err)
}
