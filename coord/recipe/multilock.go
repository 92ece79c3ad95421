package recipe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Locker is a lock a MultiLock can take: a *Mutex, a *RWMutex (its write
// side) or RWMutex.RLocker().
type Locker interface {
	Lock(ctx context.Context) error
	Unlock() error
	// Lost returns a channel closed when the current hold is lost, or
	// already closed when the lock is not held.
	Lost() <-chan struct{}
}

// MultiLock holds several locks as one, all or none, like Curator's
// InterProcessMultiLock. It takes them one by one in the order given and,
// if one cannot be taken (ctx done, session closed), releases those it
// took. Processes that take overlapping sets of locks must take them in
// one global order, or they can deadlock each other: NewMultiMutex sorts
// by path for that reason.
type MultiLock struct {
	locks []Locker

	mu    sync.Mutex // guards count and lost
	count int
	lost  chan struct{}
	stop  chan struct{}
	wg    sync.WaitGroup
}

// NewMultiLock returns a MultiLock over locks, taken in that order.
func NewMultiLock(locks ...Locker) *MultiLock {
	return &MultiLock{locks: locks}
}

// NewMultiMutex returns a MultiLock over the Mutexes at paths, taken in
// path order (duplicates dropped), so that every process taking an
// overlapping set takes the shared ones in the same order.
func NewMultiMutex(s *Session, paths ...string) *MultiLock {
	ps := slices.Clone(paths)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	locks := make([]Locker, len(ps))
	for i, p := range ps {
		locks[i] = NewMutex(s, p)
	}
	return NewMultiLock(locks...)
}

// Lock takes every lock, waiting as long as ctx allows, or none: on
// failure it releases the ones it took and returns the error. On a held
// MultiLock it takes one more hold of each.
func (ml *MultiLock) Lock(ctx context.Context) error {
	for i, l := range ml.locks {
		if err := l.Lock(ctx); err != nil {
			err = fmt.Errorf("recipe: multilock: lock %d of %d: %w", i+1, len(ml.locks), err)
			return errors.Join(err, unlockAll(ml.locks[:i]))
		}
	}
	ml.mu.Lock()
	defer ml.mu.Unlock()
	ml.count++
	if ml.count == 1 {
		ml.watch()
	}
	return nil
}

// watch closes ml.lost when any lock's hold is lost. Called with mu held.
func (ml *MultiLock) watch() {
	ml.lost = make(chan struct{})
	ml.stop = make(chan struct{})
	var once sync.Once
	for _, l := range ml.locks {
		ch := l.Lost()
		ml.wg.Add(1)
		go func() {
			defer ml.wg.Done()
			select {
			case <-ch:
				once.Do(func() { close(ml.lost) })
			case <-ml.stop:
			}
		}()
	}
}

// Unlock releases one hold of every lock, in reverse order, and returns
// their errors joined (ErrLockLost among them if a hold was lost).
func (ml *MultiLock) Unlock() error {
	ml.mu.Lock()
	if ml.count == 0 {
		ml.mu.Unlock()
		return fmt.Errorf("%w: multilock", ErrNotLocked)
	}
	ml.count--
	if ml.count == 0 {
		close(ml.stop)
		ml.wg.Wait()
	}
	ml.mu.Unlock()
	return unlockAll(ml.locks)
}

// Lost returns a channel closed when any of the locks' holds is lost, or
// already closed when the MultiLock is not held.
func (ml *MultiLock) Lost() <-chan struct{} {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if ml.count == 0 {
		return closedChan
	}
	return ml.lost
}

// unlockAll releases locks in reverse order and joins their errors.
func unlockAll(locks []Locker) error {
	var errs []error
	for i := len(locks) - 1; i >= 0; i-- {
		if err := locks[i].Unlock(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
