package recipe

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// leaderNode returns the name of the first candidate's node, or
// ErrNoLeader.
func (e *Election) leaderNode(ctx context.Context) (string, error) {
	names, _, err := e.s.Retrying().Children(ctx, e.path)
	if errors.Is(err, zk.ErrNoNode) {
		return "", ErrNoLeader
	}
	if err != nil {
		return "", err
	}
	cs := contenders(names)
	if len(cs) == 0 {
		return "", ErrNoLeader
	}
	return cs[0].name, nil
}

// Leader returns the identity of the current leader — the data of the
// first candidate's node, whatever its implementation (a kazoo
// candidate's identifier, a Curator participant's id) — or ErrNoLeader.
func (e *Election) Leader(ctx context.Context) (string, error) {
	for {
		name, err := e.leaderNode(ctx)
		if err != nil {
			return "", fmt.Errorf("recipe: leader of %s: %w", e.path, err)
		}
		var data []byte
		data, _, err = e.s.Retrying().Get(ctx, zpath.Join(e.path, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue // it left as we looked: ask again
		}
		if err != nil {
			return "", fmt.Errorf("recipe: leader of %s: %w", e.path, err)
		}
		return string(data), nil
	}
}

// Observe follows the leadership of the election: the channel receives
// the identity of the leader now, then each new leader's as leadership
// changes hands, and "" while there is none. Identities coalesce: a
// reader that falls behind gets the latest. The channel is closed when
// ctx ends or the Session closes.
//
// An observer watches only the leader's node (or, with no candidates, the
// election directory), so candidates coming and going behind the leader
// do not wake it.
func (e *Election) Observe(ctx context.Context) <-chan string {
	out := make(chan string, 1)
	last := "\x00" // not an identity: the first read is always sent
	read := func(ctx context.Context) (<-chan zk.Event, error) {
		id, ch, err := e.readLeader(ctx)
		if err != nil {
			return nil, err
		}
		if ch == firedWatch {
			return ch, nil // the leader changed as we looked: look again first
		}
		if id != last {
			last = id
			offer(out, id)
		}
		return ch, nil
	}
	go func() {
		defer close(out)
		err := e.s.follow(ctx, "leader of "+e.path, read)
		if err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			e.s.log.Warn("leader observer stopped", "path", e.path, "err", err)
		}
	}()
	return out
}

// readLeader reads the leader's identity and sets a watch that fires
// when the leader may have changed: on the leader's node, or — without
// candidates — on the directory's children (its existence, if there is
// no directory).
func (e *Election) readLeader(ctx context.Context) (string, <-chan zk.Event, error) {
	names, _, err := e.s.Children(ctx, e.path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", nil, err
	}
	cs := contenders(names)
	if len(cs) == 0 {
		// No candidate: wait for the first. The watch is set only now, so
		// that observers of a busy election are not woken by every
		// candidate that queues behind the leader.
		var ch <-chan zk.Event
		names, _, ch, err = e.s.ChildrenW(ctx, e.path)
		if errors.Is(err, zk.ErrNoNode) {
			ok, _, ech, err := e.s.ExistsW(ctx, e.path)
			switch {
			case err != nil:
				return "", nil, err
			case ok:
				return "", firedWatch, nil
			}
			return "", ech, nil
		}
		if err != nil {
			return "", nil, err
		}
		if cs = contenders(names); len(cs) == 0 {
			return "", ch, nil
		}
		// A candidate came meanwhile; the children watch fires once more
		// later, costing one more read.
	}
	data, _, ch, err := e.s.GetW(ctx, zpath.Join(e.path, cs[0].name))
	if errors.Is(err, zk.ErrNoNode) {
		return "", firedWatch, nil
	}
	if err != nil {
		return "", nil, err
	}
	return string(data), ch, nil
}

// offer sends v on ch (capacity 1), replacing a value the reader has not
// taken yet. It must be ch's only sender.
func offer(ch chan string, v string) {
	for {
		select {
		case ch <- v:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}
