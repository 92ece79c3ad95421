package recipe

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// ErrBadBarrier reports a barrier node whose data is not its size, a
// positive decimal number.
var ErrBadBarrier = errors.New("recipe: bad barrier")

// Barrier is the barrier of the source documents (/queue_barrier): a node
// whose data is the number n of participants, as decimal text. Each
// participant creates an ephemeral child named after itself and waits
// until the node has n children; then all go on together.
//
// The barrier node is set up beforehand — by CreateBarrier, or by an
// operator: `create /queue_barrier 10`. A participant whose session is
// lost while it waits registers again on its new session.
type Barrier struct {
	s      *Session
	path   string
	member string
	node   string
}

// CreateBarrier creates the barrier node at path (and its missing
// parents) with size n, or sets the size of an existing one.
func CreateBarrier(ctx context.Context, s *Session, path string, n int) error {
	if n <= 0 {
		return fmt.Errorf("%w %s: size %d: need at least one participant", ErrBadBarrier, path, n)
	}
	data := []byte(strconv.Itoa(n))
	err := s.Retry(ctx, func() error {
		if err := s.EnsurePath(ctx, path); err != nil {
			return err
		}
		_, err := s.Set(ctx, path, data, -1)
		return err
	})
	if err != nil {
		return fmt.Errorf("recipe: create barrier %s: %w", path, err)
	}
	return nil
}

// NewBarrier returns participant member of the barrier at path. member
// names the participant's node: unique among the participants, e.g. a
// host name.
func NewBarrier(s *Session, path, member string) *Barrier {
	return &Barrier{s: s, path: path, member: member, node: zpath.Join(path, member)}
}

// Size reads the barrier's size from its node.
func (b *Barrier) Size(ctx context.Context) (int, error) {
	data, _, err := b.s.Retrying().Get(ctx, b.path)
	if err != nil {
		return 0, fmt.Errorf("recipe: barrier %s: %w", b.path, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w %s: data %q is not a positive number of participants", ErrBadBarrier, b.path, data)
	}
	return n, nil
}

// Wait joins the barrier and returns once it has all its participants, as
// long as ctx allows. A Wait that gives up leaves the barrier. After Wait
// returns the participant stays counted until Leave (or the end of its
// session), so that latecomers still see the barrier full.
func (b *Barrier) Wait(ctx context.Context) error {
	if err := checkName("barrier member", b.member); err != nil {
		return fmt.Errorf("recipe: barrier %s: %w", b.path, err)
	}
	n, err := b.Size(ctx)
	if err != nil {
		return err
	}
	s := b.s
	for {
		genDone, err := s.claimEphemeral(ctx, b.node, nil)
		if err != nil {
			return fmt.Errorf("recipe: barrier %s: join as %s: %w", b.path, b.member, err)
		}
		err = b.await(ctx, n, genDone)
		if errors.Is(err, errRestart) {
			continue
		}
		if err != nil {
			s.abandon(b.node, genDone)
			return fmt.Errorf("recipe: barrier %s: %w", b.path, err)
		}
		return nil
	}
}

// await waits until the barrier has n children. errRestart means the
// session was lost: register again.
func (b *Barrier) await(ctx context.Context, n int, genDone <-chan struct{}) error {
	s := b.s
	for {
		names, _, ch, err := s.Retrying().ChildrenW(ctx, b.path)
		if err != nil {
			return err
		}
		if len(names) >= n {
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

// Leave removes the participant from the barrier.
func (b *Barrier) Leave(ctx context.Context) error {
	if err := deleteOwn(ctx, b.s, b.node); err != nil {
		return fmt.Errorf("recipe: barrier %s: leave: %w", b.path, err)
	}
	return nil
}

// deleteOwn deletes node if it is an ephemeral node of the current
// session. A node of a lost session goes with it.
func deleteOwn(ctx context.Context, s *Session, node string) error {
	err := s.Retry(ctx, func() error {
		ok, st, err := s.Exists(ctx, node)
		if err != nil || !ok || st.EphemeralOwner != s.ID() {
			return err
		}
		return s.Delete(ctx, node, -1)
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}
