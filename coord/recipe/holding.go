package recipe

import (
	"context"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// holding is one acquisition of a lock node, from grant to release. Its
// monitor goroutine watches the node and the session and closes lost when
// either goes: the holder must then stop acting as the holder.
type holding struct {
	s       *Session
	node    string
	genDone <-chan struct{}

	lost     chan struct{}
	lostOnce sync.Once

	cancel context.CancelFunc // stops the monitor
	done   chan struct{}      // closed when the monitor has returned
}

// newHolding starts watching node, held through generation genDone.
func newHolding(s *Session, node string, genDone <-chan struct{}) *holding {
	ctx, cancel := context.WithCancel(context.Background())
	h := &holding{
		s:       s,
		node:    node,
		genDone: genDone,
		lost:    make(chan struct{}),
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	go h.monitor(ctx)
	return h
}

// monitor keeps an exists watch on the node until the node is deleted,
// the session's generation ends, or stop. The watch is one more
// notification per release — to the releasing holder itself, when it
// deletes its own node — and the price of knowing when someone else does.
func (h *holding) monitor(ctx context.Context) {
	defer close(h.done)
	failures := 0
	for {
		ok, _, ch, err := h.s.ExistsW(ctx, h.node)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && IsRetryable(err):
			failures++
			t := time.NewTimer(h.s.opts.Retry.delay(failures))
			select {
			case <-t.C:
				continue
			case <-h.genDone:
				t.Stop()
				h.markLost("session lost")
				return
			case <-ctx.Done():
				t.Stop()
				return
			}
		case err != nil:
			h.markLost("cannot watch the lock node: " + err.Error())
			return
		case !ok:
			h.markLost("lock node deleted")
			return
		}
		failures = 0
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNodeDeleted {
				h.markLost("lock node deleted")
				return
			}
			// Its data changed, or the watch was invalidated: look again.
		case <-h.genDone:
			h.markLost("session lost")
			return
		case <-ctx.Done():
			return
		}
	}
}

func (h *holding) markLost(why string) {
	h.lostOnce.Do(func() {
		h.s.log.Warn("lock lost", "path", h.node, "reason", why)
		close(h.lost)
	})
}

func (h *holding) isLost() bool {
	select {
	case <-h.lost:
		return true
	default:
		return false
	}
}

// release stops the monitor and deletes the node. While the session is
// suspended the delete waits; once the session is lost or closed the
// server deletes the node, and release stops trying. lost reports whether
// the hold had been lost.
func (h *holding) release() (lost bool, err error) {
	h.stop()
	ctx, cancel := h.s.untilLost(h.genDone)
	defer cancel()
	err = h.s.deleteNode(ctx, h.node)
	if ctx.Err() != nil {
		err = nil
	}
	return h.isLost(), err
}

// stop ends the monitor and waits for it.
func (h *holding) stop() {
	h.cancel()
	<-h.done
}
