package recipe

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// Node-name parts of RWMutex contenders, as Curator's
// InterProcessReadWriteLock names them.
const (
	curatorReadName  = "__READ__"
	curatorWriteName = "__WRIT__"
	kazooReadName    = "__rlock__" // kazoo's ReadLock
)

// RWMutex is a distributed readers-writer lock: the shared lock of the
// ZooKeeper recipes, with Curator's InterProcessReadWriteLock node names
// (_c_<uuid>-__READ__<seq>, _c_<uuid>-__WRIT__<seq>).
//
// Readers and writers queue together by sequence number. A writer holds
// the lock when it comes first and waits for its immediate predecessor. A
// reader holds it when no writer comes before it, and waits only for the
// last writer before it: readers never wait for readers, and a release
// wakes only the contenders it unblocks. Any sequential node that is not a
// reader's (Curator's __READ__ or kazoo's __rlock__) counts as a writer.
//
// Both sides are reentrant per RWMutex value. The holder of the write lock
// may take the read lock too: that read hold rides on the write node, which
// stays until both are released. Releasing the write lock first keeps the
// holder reading — a downgrade that lets nobody in between, but that lets
// no other reader in either until RUnlock. (A separate read node would sit
// behind any writer queued meanwhile, which would then be granted the lock
// while we still read.) The holder of only the read lock cannot take the
// write lock (ErrLockUpgrade): it would queue behind itself.
type RWMutex struct {
	path string
	r, w *lock

	mu          sync.Mutex // guards readOnWrite; taken before w's locks
	readOnWrite int        // read holds riding on the write node
}

// NewRWMutex returns the RWMutex at path, a directory created (as
// container nodes) on first use.
func NewRWMutex(s *Session, path string) *RWMutex {
	rw := &RWMutex{path: path}
	rw.w = newLock(s, path, protectedNamer(curatorWriteName), waitForPredecessor)
	rw.r = newLock(s, path, protectedNamer(curatorReadName), readerWaitsFor)
	return rw
}

// protectedNamer names nodes _c_<uuid>-<name>, as Curator does.
func protectedNamer(name string) func() (string, string) {
	return func() (string, string) {
		marker := protectedPrefix + newUUID() + "-"
		return marker, marker + name
	}
}

// isReader reports whether a contender node is a reader's.
func isReader(name string) bool {
	kind := name[:len(name)-seqLen]
	return strings.HasSuffix(kind, curatorReadName) || strings.HasSuffix(kind, kazooReadName)
}

// readerWaitsFor is the rule of the read side: wait for the last writer
// before us.
func readerWaitsFor(cs []contender, me int) int {
	for i := me - 1; i >= 0; i-- {
		if !isReader(cs[i].name) {
			return i
		}
	}
	return -1
}

// RLock acquires the read lock, waiting as long as ctx allows; at once
// for the holder of the write lock.
func (rw *RWMutex) RLock(ctx context.Context) error {
	if ok, err := rw.readOnWriteLock(ctx); ok || err != nil {
		return err
	}
	return rw.r.lock(ctx)
}

// TryRLock acquires the read lock if no writer is queued before us.
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) {
	if ok, err := rw.readOnWriteLock(ctx); ok || err != nil {
		return ok, err
	}
	return rw.r.tryLock(ctx)
}

// readOnWriteLock takes a read hold on the write node if this RWMutex
// holds the write lock, and reports whether it did.
func (rw *RWMutex) readOnWriteLock(ctx context.Context) (bool, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.w.heldName() == "" {
		return false, nil
	}
	if err := rw.w.lock(ctx); err != nil { // reentrant: no round trip
		return false, err
	}
	rw.readOnWrite++
	return true, nil
}

// RUnlock releases one hold of the read lock.
func (rw *RWMutex) RUnlock() error {
	rw.mu.Lock()
	if rw.readOnWrite > 0 {
		rw.readOnWrite--
		rw.mu.Unlock()
		return rw.w.unlock()
	}
	rw.mu.Unlock()
	return rw.r.unlock()
}

// Lock acquires the write lock, waiting as long as ctx allows. It returns
// ErrLockUpgrade if this RWMutex holds only the read lock.
func (rw *RWMutex) Lock(ctx context.Context) error {
	if err := rw.checkUpgrade(); err != nil {
		return err
	}
	return rw.w.lock(ctx)
}

// TryLock acquires the write lock if nobody holds or waits for the lock.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) {
	if err := rw.checkUpgrade(); err != nil {
		return false, err
	}
	return rw.w.tryLock(ctx)
}

func (rw *RWMutex) checkUpgrade() error {
	if rw.w.node() == "" && rw.r.node() != "" {
		return fmt.Errorf("%w: %s", ErrLockUpgrade, rw.path)
	}
	return nil
}

// Unlock releases one hold of the write lock.
func (rw *RWMutex) Unlock() error { return rw.w.unlock() }

// Lost returns a channel closed when the write hold is lost (or already
// closed when the write lock is not held).
func (rw *RWMutex) Lost() <-chan struct{} { return rw.w.lost() }

// RLost returns a channel closed when the read hold is lost (or already
// closed when the read lock is not held).
func (rw *RWMutex) RLost() <-chan struct{} {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.readOnWrite > 0 {
		return rw.w.lost()
	}
	return rw.r.lost()
}

// RLocker returns the read side as a Locker, for MultiLock.
func (rw *RWMutex) RLocker() Locker { return readLocker{rw} }

// Path returns the lock's directory.
func (rw *RWMutex) Path() string { return rw.path }

type readLocker struct{ rw *RWMutex }

func (r readLocker) Lock(ctx context.Context) error { return r.rw.RLock(ctx) }
func (r readLocker) Unlock() error                  { return r.rw.RUnlock() }
func (r readLocker) Lost() <-chan struct{}          { return r.rw.RLost() }
