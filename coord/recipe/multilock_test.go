package recipe

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestMultiLockAllOrNone: when one lock of the set cannot be had, the
// MultiLock gives back those it took.
func TestMultiLockAllOrNone(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		a, b := testPath(t), testPath(t)
		s := dial(t, tg.Addr, Options{})
		other := dial(t, tg.Addr, Options{})
		blocker := NewMutex(other, b)
		if err := blocker.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		ml := NewMultiMutex(s, b, a, a) // sorted and deduplicated: a, b
		if len(ml.locks) != 2 || ml.locks[0].(*Mutex).Path() != a || ml.locks[1].(*Mutex).Path() != b {
			t.Fatalf("NewMultiMutex locks %v, want [%s %s]", ml.locks, a, b)
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if err := ml.Lock(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("MultiLock with one lock held elsewhere: %v, want context.DeadlineExceeded", err)
		}
		if ok, err := NewMutex(other, a).TryLock(ctx); err != nil || !ok {
			t.Fatalf("the first lock after a failed MultiLock: TryLock %v, %v; want it released", ok, err)
		}
		select {
		case <-ml.Lost():
		default:
			t.Error("Lost() of an unheld MultiLock is not closed")
		}
		if err := ml.Unlock(); !errors.Is(err, ErrNotLocked) {
			t.Errorf("Unlock of an unheld MultiLock: %v, want ErrNotLocked", err)
		}
	})
}

func TestMultiLockHoldsAll(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		a, b, c := testPath(t), testPath(t), testPath(t)
		s := dial(t, tg.Addr, Options{})
		other := dial(t, tg.Addr, Options{})
		rw := NewRWMutex(s, c)
		ml := NewMultiLock(NewMutex(s, a), NewMutex(s, b), rw.RLocker())
		if err := ml.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{a, b} {
			if ok, err := NewMutex(other, p).TryLock(ctx); err != nil || ok {
				t.Errorf("TryLock %s while the MultiLock holds it: %v, %v", p, ok, err)
			}
		}
		if ok, err := NewRWMutex(other, c).TryLock(ctx); err != nil || ok {
			t.Errorf("write TryLock while the MultiLock reads: %v, %v", ok, err)
		}
		if ok, err := NewRWMutex(other, c).TryRLock(ctx); err != nil || !ok {
			t.Errorf("read TryLock while the MultiLock reads: %v, %v; readers share", ok, err)
		}
		select {
		case <-ml.Lost():
			t.Fatal("Lost() closed on a held MultiLock")
		default:
		}
		if err := ml.Unlock(); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{a, b} {
			m := NewMutex(other, p)
			if ok, err := m.TryLock(ctx); err != nil || !ok {
				t.Errorf("TryLock %s after the MultiLock released: %v, %v", p, ok, err)
			}
		}
	})
}

// TestMultiMutexNoDeadlock: two processes asking for the same locks in
// opposite orders take them in one order and both get through.
func TestMultiMutexNoDeadlock(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		a, b := testPath(t), testPath(t)
		x := NewMultiMutex(dial(t, tg.Addr, Options{}), a, b)
		y := NewMultiMutex(dial(t, tg.Addr, Options{}), b, a)
		errs := make(chan error, 2)
		for _, ml := range []*MultiLock{x, y} {
			go func() {
				for range 5 {
					if err := ml.Lock(ctx); err != nil {
						errs <- err
						return
					}
					if err := ml.Unlock(); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range 2 {
			if err := recv(t, errs, "five MultiLock rounds"); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestMultiLockLost(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		a, b := testPath(t), testPath(t)
		s := dial(t, tg.Addr, Options{})
		ml := NewMultiMutex(s, a, b)
		if err := ml.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		expireSession(t, s, tg.Addr)
		select {
		case <-ml.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("Lost() not closed after the session expired")
		}
		if err := ml.Unlock(); !errors.Is(err, ErrLockLost) {
			t.Errorf("Unlock of a lost MultiLock: %v, want ErrLockLost", err)
		}
	})
}
