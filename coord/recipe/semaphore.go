package recipe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// Node layout of a Semaphore, as Curator's InterProcessSemaphoreV2 lays it
// out: <path>/locks is a Mutex serialising acquisitions, <path>/leases
// holds one ephemeral sequential node per lease, _c_<uuid>-lease-<seq>.
const (
	semLocksDir  = "locks"
	semLeasesDir = "leases"
	semLeaseName = "lease-"
)

// Semaphore hands out at most n leases at a time across processes, with
// the node layout of Apache Curator's InterProcessSemaphoreV2, so Go and
// Java processes can share one. Every participant must use the same n:
// the limit is not stored.
//
// To acquire, a contender takes the Mutex at <path>/locks, creates its
// lease node under <path>/leases, and — while the leases outnumber n —
// waits for a change of the leases, then releases the Mutex. Only the
// Mutex holder ever waits on the leases, so a release wakes one process,
// and leases are granted in the order contenders queued for the Mutex.
type Semaphore struct {
	s    *Session
	path string
	n    int
	data []byte
}

// NewSemaphore returns the Semaphore at path with n leases. Its
// directories are created (as container nodes) on first use.
func NewSemaphore(s *Session, path string, n int) *Semaphore {
	return &Semaphore{s: s, path: path, n: n}
}

// Lease is one lease of a Semaphore, from Acquire to Release.
type Lease struct {
	h    *holding
	once sync.Once
	err  error
}

// Acquire waits for a lease as long as ctx allows. A contender that gives
// up deletes its nodes.
func (sem *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	if sem.n <= 0 {
		return nil, fmt.Errorf("recipe: semaphore %s: %d leases: need at least one", sem.path, sem.n)
	}
	for {
		// A fresh Mutex per acquisition: concurrent Acquires on one
		// Semaphore value are distinct contenders.
		m := NewMutex(sem.s, zpath.Join(sem.path, semLocksDir))
		if err := m.Lock(ctx); err != nil {
			return nil, fmt.Errorf("recipe: semaphore %s: %w", sem.path, err)
		}
		lease, err := sem.acquireLocked(ctx)
		if uerr := m.Unlock(); uerr != nil && !errors.Is(uerr, ErrLockLost) {
			sem.s.log.Warn("semaphore: releasing the acquisition lock", "path", sem.path, "err", uerr)
		}
		if errors.Is(err, errRestart) {
			continue
		}
		return lease, err
	}
}

// acquireLocked creates a lease node and waits until it is among the
// first n, holding the acquisition Mutex. errRestart means the session was
// lost meanwhile: start over, Mutex and all.
func (sem *Semaphore) acquireLocked(ctx context.Context) (*Lease, error) {
	s := sem.s
	_, genDone, err := s.awaitSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("recipe: semaphore %s: %w", sem.path, err)
	}
	leases := zpath.Join(sem.path, semLeasesDir)
	marker := protectedPrefix + newUUID() + "-"
	node, err := s.createMarked(ctx, leases, marker, marker+semLeaseName, sem.data, zk.FlagEphemeralSequential, nil, true)
	if err != nil {
		return nil, fmt.Errorf("recipe: semaphore %s: %w", sem.path, err)
	}
	_, name := zpath.Split(node)
	giveUp := func(err error) error {
		s.abandon(node, genDone)
		return fmt.Errorf("recipe: semaphore %s: %w", sem.path, err)
	}
	// Our node may outlive our interest in it (the Session declares a loss
	// before the server acts on it): delete it before starting over.
	restart := func() error {
		if err := s.deleteNode(ctx, node); err != nil {
			return giveUp(err)
		}
		return errRestart
	}
	for {
		children, _, ch, err := s.Retrying().ChildrenW(ctx, leases)
		if err != nil {
			return nil, giveUp(err)
		}
		select {
		case <-genDone:
			return nil, restart()
		default:
		}
		if !slices.Contains(children, name) { // gone with a lost session
			return nil, restart()
		}
		if len(children) <= sem.n {
			return &Lease{h: newHolding(s, node, genDone)}, nil
		}
		switch err := s.park(ctx, ch, genDone); {
		case errors.Is(err, errRestart):
			return nil, restart()
		case errors.Is(err, ErrClosed):
			return nil, err
		case err != nil:
			return nil, giveUp(err)
		}
	}
}

// Release gives the lease back. It returns ErrLockLost if the lease was
// lost while held; calling it again returns the same result.
func (l *Lease) Release() error {
	l.once.Do(func() {
		lost, err := l.h.release()
		switch {
		case lost:
			l.err = fmt.Errorf("%w: lease %s", ErrLockLost, l.h.node)
		case err != nil:
			l.err = fmt.Errorf("recipe: release lease %s: %w", l.h.node, err)
		}
	})
	return l.err
}

// Lost returns a channel closed when the lease is lost: its session was
// lost or its node deleted.
func (l *Lease) Lost() <-chan struct{} { return l.h.lost }

// Node returns the path of the lease node, for fenced writes.
func (l *Lease) Node() string { return l.h.node }
