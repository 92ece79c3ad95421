package recipe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// lock is the engine shared by Mutex, both sides of RWMutex and the lease
// lock of Semaphore: the herd-free queue of the source documents.
//
//  1. Create an ephemeral sequential child of the lock directory (with a
//     unique marker in its name, so a create retried after a connection
//     loss finds the node it may already have made).
//  2. List the children and order them by sequence number.
//  3. If ours comes first (by the rule of the lock's kind), we hold it.
//  4. Otherwise get-with-watch the one node we wait for — for an exclusive
//     lock, our immediate predecessor — and go back to 2 when it changes.
//     Only that node's owner's release wakes us: one notification per
//     release, however many wait.
//
// A node created by a session that is then lost dies with it; the engine
// deletes it (it might outlive our interest: the Session declares a loss
// before the server acts on it) and starts again from 1 on the new session.
type lock struct {
	s    *Session
	dir  string
	data []byte
	// dirFlag makes a missing lock directory: zk.FlagContainer (Curator's
	// way: the server removes it once empty) or zk.FlagPersistent.
	dirFlag int32
	// name builds a contender node name from a fresh unique marker; the
	// server appends the sequence number.
	name func() (marker, name string)
	// waitFor returns the index in cs of the contender cs[me] must wait
	// for, or -1 if cs[me] holds the lock.
	waitFor func(cs []contender, me int) int
	// byOwner: names carry no unique marker (WithNodePrefix), so a create
	// cut off by a connection loss is recovered by the node's owner.
	byOwner bool

	// turn serialises acquisitions on this value: one node per holder.
	turn chan struct{}

	mu    sync.Mutex // guards count and held; never held across a call out
	count int
	held  *holding
}

func newLock(s *Session, dir string, name func() (string, string), waitFor func([]contender, int) int) *lock {
	return &lock{s: s, dir: dir, name: name, waitFor: waitFor, dirFlag: zk.FlagContainer, turn: make(chan struct{}, 1)}
}

// errRestart makes the acquisition loop start over with a new node.
var errRestart = errors.New("recipe: lock node lost, start again")

func (l *lock) lock(ctx context.Context) error {
	_, err := l.acquire(ctx, false)
	return err
}

func (l *lock) tryLock(ctx context.Context) (bool, error) {
	return l.acquire(ctx, true)
}

// acquire takes the lock, or one more hold of it if held already. With
// try, it gives up at once if another contender is ahead.
func (l *lock) acquire(ctx context.Context, try bool) (bool, error) {
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return false, fmt.Errorf("recipe: lock %s: %w", l.dir, ctx.Err())
	}
	defer func() { <-l.turn }()

	l.mu.Lock()
	if h := l.held; h != nil {
		defer l.mu.Unlock()
		if h.isLost() {
			return false, fmt.Errorf("%w: %s: unlock it before locking it again", ErrLockLost, l.dir)
		}
		l.count++
		return true, nil
	}
	l.mu.Unlock()

	h, err := l.contend(ctx, try)
	if err != nil || h == nil {
		return false, err
	}
	l.mu.Lock()
	l.held, l.count = h, 1
	l.mu.Unlock()
	return true, nil
}

// unlock drops one hold, and releases the lock with the last.
func (l *lock) unlock() error {
	l.mu.Lock()
	h := l.held
	if h == nil {
		l.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotLocked, l.dir)
	}
	l.count--
	last := l.count == 0
	if last {
		l.held = nil
	}
	l.mu.Unlock()
	if !last {
		if h.isLost() {
			return fmt.Errorf("%w: %s", ErrLockLost, l.dir)
		}
		return nil
	}
	return l.release(h)
}

// release deletes the node of h. It returns ErrLockLost if the lock was
// lost while held.
func (l *lock) release(h *holding) error {
	lost, err := h.release()
	if lost {
		return fmt.Errorf("%w: %s", ErrLockLost, l.dir)
	}
	if err != nil {
		return fmt.Errorf("recipe: unlock %s: %w", l.dir, err)
	}
	return nil
}

// node returns the path of the held lock node, or "".
func (l *lock) node() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		return ""
	}
	return l.held.node
}

// heldName returns the name of the held node if the hold is live, or "".
func (l *lock) heldName() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil || l.held.isLost() {
		return ""
	}
	_, name := zpath.Split(l.held.node)
	return name
}

// lost returns the lost channel of the current hold; closed when not held.
func (l *lock) lost() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		return closedChan
	}
	return l.held.lost
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// contend runs the queue until this contender holds the lock (or, with
// try, finds it cannot). It returns nil, nil when try fails.
func (l *lock) contend(ctx context.Context, try bool) (*holding, error) {
	for {
		_, genDone, err := l.s.awaitSession(ctx)
		if err != nil {
			return nil, fmt.Errorf("recipe: lock %s: %w", l.dir, err)
		}
		marker, name := l.name()
		node, err := l.createNode(ctx, marker, name)
		if err != nil {
			return nil, fmt.Errorf("recipe: lock %s: %w", l.dir, err)
		}
		h, err := l.queue(ctx, node, genDone, try)
		if errors.Is(err, errRestart) {
			// Ours, whichever session it belongs to: delete it so that
			// our next node does not queue behind it.
			if err := l.s.deleteNode(ctx, node); err != nil {
				return nil, fmt.Errorf("recipe: lock %s: %w", l.dir, err)
			}
			continue
		}
		return h, err
	}
}

// queue waits in line with node until it holds the lock.
func (l *lock) queue(ctx context.Context, node string, genDone <-chan struct{}, try bool) (*holding, error) {
	_, name := zpath.Split(node)
	for {
		select {
		case <-genDone:
			return nil, errRestart
		default:
		}
		children, _, err := l.s.Retrying().Children(ctx, l.dir)
		if err != nil {
			return nil, l.giveUp(node, genDone, err)
		}
		cs := contenders(children)
		me := indexOf(cs, name)
		if me < 0 { // the session was lost, or somebody deleted our node
			return nil, errRestart
		}
		w := l.waitFor(cs, me)
		if w < 0 {
			select {
			case <-genDone: // granted to a session we no longer have
				return nil, errRestart
			default:
			}
			return newHolding(l.s, node, genDone), nil
		}
		if try {
			return nil, l.giveUp(node, genDone, nil)
		}
		var ch <-chan zk.Event
		err = l.s.Retry(ctx, func() (err error) {
			// A get, not an exists: exists would leave a watch behind on a
			// node already gone, waiting for a creation that never comes.
			_, _, ch, err = l.s.GetW(ctx, zpath.Join(l.dir, cs[w].name))
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, l.giveUp(node, genDone, err)
		}
		if err := l.s.park(ctx, ch, genDone); err != nil {
			if errors.Is(err, errRestart) || errors.Is(err, ErrClosed) {
				return nil, err
			}
			return nil, l.giveUp(node, genDone, err)
		}
	}
}

// park waits for a waiter's watch to fire. It returns errRestart when the
// session's generation ends, and the context's error or ErrClosed.
func (s *Session) park(ctx context.Context, ch <-chan zk.Event, genDone <-chan struct{}) error {
	s.parked.Add(1)
	defer s.parked.Add(-1)
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNotWatching {
			s.waiterWakeups.Add(1)
		}
		return nil
	case <-genDone:
		return errRestart
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return ErrClosed
	}
}

// giveUp abandons the queue: it deletes our node (see abandon) and
// returns err wrapped.
func (l *lock) giveUp(node string, genDone <-chan struct{}, err error) error {
	l.s.abandon(node, genDone)
	if err == nil {
		return nil
	}
	return fmt.Errorf("recipe: lock %s: %w", l.dir, err)
}

// abandonWait bounds the delete of an abandoned node done before
// returning to the caller; a delete that takes longer goes on in the
// background.
const abandonWait = 2 * time.Second

// abandon deletes a node we no longer want, whose caller may have run out
// of context. It tries once in the foreground, so that the caller returns
// with its node gone (a TryLock followed by another contender must not
// see it); if the connection is down it keeps trying in the background
// until the session of the node ends.
func (s *Session) abandon(node string, genDone <-chan struct{}) {
	ctx, cancel := s.untilLost(genDone)
	fg, fgCancel := context.WithTimeout(ctx, abandonWait)
	err := s.Delete(fg, node, -1)
	fgCancel()
	if err == nil || errors.Is(err, zk.ErrNoNode) || ctx.Err() != nil {
		cancel()
		return
	}
	s.goBackground(func() {
		defer cancel()
		if err := s.deleteNode(ctx, node); err != nil && ctx.Err() == nil {
			s.log.Warn("abandoned lock node not deleted; it goes with the session", "path", node, "err", err)
		}
	})
}

// deleteNode deletes node, retrying; a node already gone is fine.
func (s *Session) deleteNode(ctx context.Context, node string) error {
	err := s.Retry(ctx, func() error { return s.Delete(ctx, node, -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// untilLost returns a context that ends when generation genDone ends or
// the Session closes — when the server deletes the session's ephemeral
// nodes by itself.
func (s *Session) untilLost(genDone <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-genDone:
		case <-s.done:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}
