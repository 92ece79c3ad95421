package recipe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// ErrTakeUncertain reports a Take whose claiming delete was cut off by a
// connection loss and whose item is gone: the delete may have succeeded —
// the item is this consumer's — or another consumer may have taken it.
// Take returns the item's data with this error; process it only if
// processing twice is harmless, or record it for a person to decide.
var ErrTakeUncertain = errors.New("recipe: queue item may have been taken by another consumer")

// queueItemName starts the names of the items a Queue puts.
const queueItemName = "qn-"

// Queue is the FIFO queue of the ZooKeeper recipes. Producers add items
// as persistent sequential children of the queue's node; a consumer takes
// the item with the smallest sequence number by deleting it — the delete
// that succeeds is the claim, so each item goes to exactly one consumer.
//
// Items are named qn-<uuid>-<seq>: the uuid lets a Put retried after a
// connection loss find the item it may already have made instead of
// adding it twice. Items are ordered by sequence number only, so Take
// also takes items other producers name differently (the Java recipe's
// qn-<seq>, the source documents' <host>-<seq>); children without a
// sequence number are not items and are left alone.
//
// Waiting consumers watch the queue's children: every Put wakes them all
// and one wins the item (a herd, bounded by the number of idle
// consumers, which is what a queue with several consumers pays for
// never keeping an item waiting while a consumer is idle).
//
// The sequence number ZooKeeper appends is a signed 32-bit count of the
// children ever created under the queue node: after 2³¹ items it wraps
// around, and the queue node must be replaced.
type Queue struct {
	s    *Session
	path string
	// remove deletes an item: Session.Delete, replaced by tests to lose
	// the reply of a delete.
	remove func(ctx context.Context, path string, version int32) error
}

// NewQueue returns the Queue at path, a persistent node created on first
// use.
func NewQueue(s *Session, path string) *Queue { return &Queue{s: s, path: path, remove: s.Delete} }

// Path returns the queue's node.
func (q *Queue) Path() string { return q.path }

// Put adds an item with data at the end of the queue and returns its
// node's path.
func (q *Queue) Put(ctx context.Context, data []byte) (string, error) {
	marker := queueItemName + strings.ReplaceAll(newUUID(), "-", "") + "-"
	p, err := q.s.createMarked(ctx, q.path, marker, marker, data, zk.FlagSequence, nil, false)
	if errors.Is(err, zk.ErrNoNode) { // first use: no queue node yet
		if err = q.ensure(ctx); err == nil {
			p, err = q.s.createMarked(ctx, q.path, marker, marker, data, zk.FlagSequence, nil, false)
		}
	}
	if err != nil {
		return "", fmt.Errorf("recipe: queue %s: put: %w", q.path, err)
	}
	return p, nil
}

func (q *Queue) ensure(ctx context.Context) error {
	err := q.s.Retry(ctx, func() error { return q.s.EnsurePath(ctx, q.path) })
	if err != nil {
		return fmt.Errorf("recipe: queue %s: %w", q.path, err)
	}
	return nil
}

// Take removes the item at the head of the queue and returns its data,
// waiting for one as long as ctx allows. See ErrTakeUncertain for the one
// case in which it cannot know whether the item is its own.
func (q *Queue) Take(ctx context.Context) ([]byte, error) {
	for {
		_, genDone := q.s.generation()
		data, ok, ch, err := q.take(ctx, true)
		if err != nil || ok {
			return data, err
		}
		err = q.s.park(ctx, ch, genDone)
		switch {
		case errors.Is(err, ErrClosed):
			return nil, err
		case err != nil && !errors.Is(err, errRestart):
			return nil, fmt.Errorf("recipe: queue %s: take: %w", q.path, err)
		}
	}
}

// TryTake removes the item at the head of the queue and returns its data,
// or returns false at once if the queue is empty.
func (q *Queue) TryTake(ctx context.Context) ([]byte, bool, error) {
	data, ok, _, err := q.take(ctx, false)
	return data, ok, err
}

// Len returns the number of items in the queue.
func (q *Queue) Len(ctx context.Context) (int, error) {
	names, _, err := q.s.Retrying().Children(ctx, q.path)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("recipe: queue %s: len: %w", q.path, err)
	}
	return len(contenders(names)), nil
}

// take claims the first item it can. When the queue is empty it returns
// ok false and, with watch, a watch on the queue's children.
func (q *Queue) take(ctx context.Context, watch bool) (data []byte, ok bool, ch <-chan zk.Event, err error) {
	s := q.s
	for {
		names, _, err := s.Retrying().Children(ctx, q.path)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return nil, false, nil, fmt.Errorf("recipe: queue %s: take: %w", q.path, err)
		}
		for _, it := range contenders(names) {
			data, ok, err := q.claim(ctx, zpath.Join(q.path, it.name))
			if err != nil || ok {
				return data, ok, nil, err
			}
		}
		if !watch {
			return nil, false, nil, nil
		}
		if err := q.ensure(ctx); err != nil {
			return nil, false, nil, err
		}
		names, _, ch, err = s.Retrying().ChildrenW(ctx, q.path)
		if err != nil {
			return nil, false, nil, fmt.Errorf("recipe: queue %s: take: %w", q.path, err)
		}
		if len(contenders(names)) == 0 {
			return nil, false, ch, nil
		}
		// Items came between the two reads; the watch fires later and
		// costs one spare read.
	}
}

// claim reads the item at node and deletes it. ok is false if another
// consumer took it first.
func (q *Queue) claim(ctx context.Context, node string) (data []byte, ok bool, err error) {
	s := q.s
	for {
		var st *zk.Stat
		data, st, err = s.Retrying().Get(ctx, node)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("recipe: queue %s: take: %w", q.path, err)
		}
		err = q.remove(ctx, node, st.Version)
		switch {
		case err == nil:
			return data, true, nil
		case errors.Is(err, zk.ErrNoNode):
			return nil, false, nil
		case errors.Is(err, zk.ErrBadVersion):
			continue // rewritten since we read it: read it again
		case !IsRetryable(err):
			return nil, false, fmt.Errorf("recipe: queue %s: take: %w", q.path, err)
		}
		// The delete's outcome is unknown. If the item is still there it
		// is not taken yet: try again. If it is gone, it was us or
		// another consumer.
		var exists bool
		if err := s.Retry(ctx, func() (err error) {
			exists, _, err = s.Exists(ctx, node)
			return err
		}); err != nil {
			return nil, false, fmt.Errorf("recipe: queue %s: take: %w", q.path, err)
		}
		if !exists {
			return data, true, fmt.Errorf("%w: %s", ErrTakeUncertain, node)
		}
	}
}
