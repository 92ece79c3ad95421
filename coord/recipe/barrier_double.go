package recipe

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// doubleBarrierReady is the child whose creation opens a DoubleBarrier.
const doubleBarrierReady = "ready"

// DoubleBarrier is the double barrier of the ZooKeeper recipes (and
// Curator's DistributedDoubleBarrier): n participants Enter, none goes on
// until all have entered; they Leave, and none goes on until all have
// left — a computation starts and ends together.
//
// Each participant has an ephemeral child of the barrier's node, named
// after it. Entering, the n-th to arrive creates the child "ready",
// which every waiting participant watches. Leaving, the participants'
// nodes are ordered by name: the first waits for the last to go, every
// other deletes its node and waits for the first to go — each waits on one
// node, so a departure wakes few. The last to leave deletes "ready",
// making the barrier ready for another round.
//
// One round at a time: a participant must not Enter the next round before
// all have left this one.
type DoubleBarrier struct {
	s      *Session
	path   string
	n      int
	member string
	node   string
}

// NewDoubleBarrier returns participant member of the double barrier of n
// participants at path (a persistent node created on first use). member
// names the participant's node: unique among participants, not "ready".
func NewDoubleBarrier(s *Session, path string, n int, member string) *DoubleBarrier {
	return &DoubleBarrier{s: s, path: path, n: n, member: member, node: zpath.Join(path, member)}
}

func (b *DoubleBarrier) check() error {
	if b.n <= 0 {
		return fmt.Errorf("%w %s: size %d: need at least one participant", ErrBadBarrier, b.path, b.n)
	}
	if b.member == doubleBarrierReady {
		return fmt.Errorf("%w %s: member name %q is reserved", ErrBadBarrier, b.path, b.member)
	}
	return checkName("barrier member", b.member)
}

// Enter joins the barrier and waits, as long as ctx allows, until all n
// participants have entered. An Enter that gives up leaves the barrier.
// A participant whose session is lost while it waits enters again on its
// new session.
func (b *DoubleBarrier) Enter(ctx context.Context) error {
	if err := b.check(); err != nil {
		return fmt.Errorf("recipe: double barrier %s: %w", b.path, err)
	}
	s := b.s
	if err := s.Retry(ctx, func() error { return s.EnsurePath(ctx, b.path) }); err != nil {
		return fmt.Errorf("recipe: double barrier %s: %w", b.path, err)
	}
	for {
		genDone, err := s.claimEphemeral(ctx, b.node, nil)
		if err != nil {
			return fmt.Errorf("recipe: double barrier %s: enter as %s: %w", b.path, b.member, err)
		}
		err = b.awaitReady(ctx, genDone)
		if errors.Is(err, errRestart) {
			continue
		}
		if err != nil {
			s.abandon(b.node, genDone)
			return fmt.Errorf("recipe: double barrier %s: enter: %w", b.path, err)
		}
		return nil
	}
}

// awaitReady waits for the ready node, creating it when the participants
// are all there.
func (b *DoubleBarrier) awaitReady(ctx context.Context, genDone <-chan struct{}) error {
	s := b.s
	ready := zpath.Join(b.path, doubleBarrierReady)
	for {
		ok, _, ch, err := s.Retrying().ExistsW(ctx, ready)
		if err != nil || ok {
			return err
		}
		members, err := b.members(ctx)
		if err != nil {
			return err
		}
		if len(members) >= b.n {
			err := s.Retry(ctx, func() error {
				_, err := s.Create(ctx, ready, nil, zk.FlagPersistent, nil)
				return err
			})
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
			return nil
		}
		select {
		case <-ch:
		case <-genDone:
			return errRestart
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return ErrClosed
		}
	}
}

// members returns the names of the participants' nodes, sorted.
func (b *DoubleBarrier) members(ctx context.Context) ([]string, error) {
	names, _, err := b.s.Retrying().Children(ctx, b.path)
	if err != nil {
		return nil, err
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == doubleBarrierReady })
	slices.Sort(names)
	return names, nil
}

// Leave leaves the barrier and waits, as long as ctx allows, until all
// participants have left.
func (b *DoubleBarrier) Leave(ctx context.Context) error {
	if err := b.leave(ctx); err != nil {
		return fmt.Errorf("recipe: double barrier %s: leave: %w", b.path, err)
	}
	return nil
}

func (b *DoubleBarrier) leave(ctx context.Context) error {
	s := b.s
	for {
		_, genDone, err := s.awaitSession(ctx)
		if err != nil {
			return err
		}
		members, err := b.members(ctx)
		if err != nil {
			return err
		}
		me := slices.Index(members, b.member)
		if len(members) == 0 || (len(members) == 1 && me == 0) {
			if err := deleteOwn(ctx, s, b.node); err != nil {
				return err
			}
			break
		}
		// The first waits for the last; the others go, then wait for the
		// first. A participant whose node went with a lost session is
		// gone already and waits like the others.
		watch := members[0]
		if me == 0 {
			watch = members[len(members)-1]
		} else if err := deleteOwn(ctx, s, b.node); err != nil {
			return err
		}
		var ch <-chan zk.Event
		// A get, not an exists: an exists on a node gone meanwhile would
		// leave a watch for its creation behind.
		_, _, ch, err = s.Retrying().GetW(ctx, zpath.Join(b.path, watch))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		select {
		case <-ch:
		case <-genDone:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return ErrClosed
		}
	}
	err := s.Retry(ctx, func() error { return s.Delete(ctx, zpath.Join(b.path, doubleBarrierReady), -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}
