package recipe

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// follow is the engine of the watchers of this package (Value,
// GroupWatcher, Election.Observe): it calls read, which reads what it
// follows and sets one watch, then waits for that watch to fire and calls
// read again — so every change is followed by a fresh read, and nothing
// is missed between a read and its watch, which ZooKeeper sets atomically
// with the read.
//
// read is also called again after every reconnect and on every new
// session. A new session has no watches at all (go-zookeeper fires the old
// ones with EventNotWatching); after a reconnect of the same session the
// client library restores them, but one more read costs a round trip and
// does not depend on it.
//
// Retryable errors are retried with the Session's backoff. Others (an ACL
// that forbids the read, say) are logged and retried at the policy's
// longest delay, since an operator may fix them; follow never gives up
// by itself. It returns when ctx ends (ctx.Err()) or the Session closes
// (ErrClosed).
func (s *Session) follow(ctx context.Context, what string, read func(ctx context.Context) (<-chan zk.Event, error)) error {
	kick := make(chan struct{}, 1)
	unlisten := s.Listen(func(st State) {
		if st == StateReconnected || st == StateConnected {
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	})
	defer unlisten()
	failures := 0
	for {
		_, genDone, err := s.awaitSession(ctx)
		if err != nil {
			return err
		}
		select { // this read sees every state change so far
		case <-kick:
		default:
		}
		ch, err := read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, ErrClosed) {
				return ErrClosed
			}
			failures++
			d := s.opts.Retry.delay(failures)
			if !IsRetryable(err) {
				s.log.Warn("watcher cannot read; retrying", "what", what, "err", err, "retry_in", s.opts.Retry.MaxDelay)
				d = s.opts.Retry.MaxDelay
			}
			if err := s.pause(ctx, d); err != nil {
				return err
			}
			continue
		}
		failures = 0
		select {
		case <-ch: // fired, or invalidated by a lost connection
		case <-genDone:
		case <-kick:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return ErrClosed
		}
	}
}

// pause waits for d, or returns early with ctx's error or ErrClosed.
func (s *Session) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return ErrClosed
	}
}

// firedWatch is a watch channel that has already fired: returned by a read
// that saw the state change under it, so that follow reads again at once.
var firedWatch = func() <-chan zk.Event {
	ch := make(chan zk.Event, 1)
	ch <- zk.Event{Type: zk.EventNotWatching}
	close(ch)
	return ch
}()

// wakeUp wakes a coalescing notification channel (capacity 1) without
// blocking: a reader that was not listening gets one wake-up for any
// number of changes.
func wakeUp(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
