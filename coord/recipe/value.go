package recipe

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
)

// Value keeps an always-current copy of one node's data: the
// configuration subscriber of the publish/subscribe recipe. It reads the
// node with a watch, and reads it again — setting a new watch — after
// every change, reconnect and new session, so that it follows the node
// through creations, deletions and the loss of its own session.
//
// The copy is as current as the connection allows: while the session is
// suspended, Get returns the last value read. Changes closer together
// than a round trip may be seen as one (ZooKeeper's watches are one-shot),
// but the latest value is never missed.
type Value struct {
	s    *Session
	path string

	changes chan struct{}
	cancel  context.CancelFunc
	done    chan struct{} // closed when the follower has returned

	mu     sync.Mutex
	data   []byte
	stat   zk.Stat
	exists bool
}

// WatchValue reads the node at path and follows it until ctx ends or
// Close is called. It returns once the first read is done, so that Get
// answers at once; a node that does not exist is a valid value (Get
// reports it absent). The first read's errors other than connection loss
// (an invalid path, no permission) are returned.
func WatchValue(ctx context.Context, s *Session, path string) (*Value, error) {
	if _, err := s.checkPath("watch value", path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	v := &Value{
		s:       s,
		path:    path,
		changes: make(chan struct{}, 1),
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	// The first read is done here, with retries, so that its failure is
	// the caller's error rather than a log line.
	var ch <-chan zk.Event
	err := s.Retry(ctx, func() (err error) {
		ch, err = v.read(ctx)
		return err
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("recipe: watch value %s: %w", path, err)
	}
	wakeUp(v.changes) // the first value, absent or not, is news too
	go func() {
		defer close(v.done)
		defer close(v.changes)
		select { // the first read's watch
		case <-ch:
		case <-ctx.Done():
			return
		case <-s.done:
			return
		}
		err := s.follow(ctx, "value "+path, v.read)
		if err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			s.log.Warn("value watcher stopped", "path", path, "err", err)
		}
	}()
	return v, nil
}

// read reads the node and sets a watch on it: a data watch when it
// exists, an existence watch when it does not.
func (v *Value) read(ctx context.Context) (<-chan zk.Event, error) {
	data, st, ch, err := v.s.GetW(ctx, v.path)
	if err == nil {
		v.update(data, st, true)
		return ch, nil
	}
	if !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	ok, _, ch, err := v.s.ExistsW(ctx, v.path)
	if err != nil {
		return nil, err
	}
	if ok {
		// Created between the two reads: the exists watch stands for its
		// next change, but we have no data yet — read again now.
		return firedWatch, nil
	}
	v.update(nil, &zk.Stat{}, false)
	return ch, nil
}

// update stores a read and signals Changes if it differs from the last.
func (v *Value) update(data []byte, st *zk.Stat, exists bool) {
	v.mu.Lock()
	same := exists == v.exists && st.Czxid == v.stat.Czxid && st.Mzxid == v.stat.Mzxid
	v.data, v.stat, v.exists = data, *st, exists
	v.mu.Unlock()
	if !same {
		wakeUp(v.changes)
	}
}

// Get returns the last value read: the node's data and stat, and whether
// the node exists (false also before the node was ever created). The
// data must not be modified.
func (v *Value) Get() (data []byte, stat zk.Stat, exists bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.data, v.stat, v.exists
}

// Changes returns a channel that receives a signal after the value
// changes — data written, node created or deleted — and is closed when
// the Value stops. Signals coalesce: after a burst of changes one signal
// is pending, and Get returns the latest value. The first read's value is
// signalled too. Changes is meant for one reader; give each consumer its
// own Value.
func (v *Value) Changes() <-chan struct{} { return v.changes }

// Path returns the path of the node followed.
func (v *Value) Path() string { return v.path }

// Close stops following the node and waits until the Value has stopped.
func (v *Value) Close() {
	v.cancel()
	<-v.done
}
