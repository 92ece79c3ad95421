package recipe

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

var curatorLeaseNode = regexp.MustCompile(`^_c_[0-9a-f-]{36}-lease-\d{10}$`)

func acquireAsync(ctx context.Context, sem *Semaphore) (<-chan *Lease, <-chan error) {
	leases, errs := make(chan *Lease, 1), make(chan error, 1)
	go func() {
		l, err := sem.Acquire(ctx)
		if err != nil {
			errs <- err
			return
		}
		leases <- l
	}()
	return leases, errs
}

func TestSemaphoreLeases(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		s := dial(t, tg.Addr, Options{})
		sems := make([]*Semaphore, 3)
		for i := range sems {
			sems[i] = NewSemaphore(dial(t, tg.Addr, Options{}), p, 2)
		}
		l0, err := sems[0].Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		l1, err := sems[1].Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leases := waitChildren(t, s, p+"/leases", 2)
		for _, n := range leases {
			if !curatorLeaseNode.MatchString(n) {
				t.Errorf("lease node %q does not match %v", n, curatorLeaseNode)
			}
		}
		got, errs := acquireAsync(ctx, sems[2])
		waitChildren(t, s, p+"/leases", 3) // queued: its node is there
		select {
		case <-got:
			t.Fatal("a third lease granted while two of two are out")
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(100 * time.Millisecond):
		}
		if err := l0.Release(); err != nil {
			t.Fatal(err)
		}
		var l2 *Lease
		select {
		case l2 = <-got:
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(10 * time.Second):
			t.Fatal("no lease after one was released")
		}
		waitChildren(t, s, p+"/locks", 0) // the acquisition lock is free
		for _, l := range []*Lease{l1, l2} {
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
		}
		if err := l1.Release(); err != nil {
			t.Errorf("second Release: %v, want the first's nil", err)
		}
		waitChildren(t, s, p+"/leases", 0)
		if _, err := NewSemaphore(s, p, 0).Acquire(ctx); err == nil {
			t.Error("Acquire on a semaphore of 0 leases succeeded")
		}
	})
}

// TestSemaphoreTimeout: a contender that gives up leaves neither a lease
// node nor an acquisition-lock node behind.
func TestSemaphoreTimeout(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		s := dial(t, tg.Addr, Options{})
		l, err := NewSemaphore(s, p, 1).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, err := NewSemaphore(dial(t, tg.Addr, Options{}), p, 1).Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire past its deadline: %v, want context.DeadlineExceeded", err)
		}
		waitChildren(t, s, p+"/leases", 1)
		waitChildren(t, s, p+"/locks", 0)
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		l, err = NewSemaphore(dial(t, tg.Addr, Options{}), p, 1).Acquire(ctx)
		if err != nil {
			t.Fatalf("Acquire after the timed-out contender left: %v", err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSemaphoreLeaseLost(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		s := dial(t, tg.Addr, Options{})
		l, err := NewSemaphore(s, p, 1).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, errs := acquireAsync(ctx, NewSemaphore(dial(t, tg.Addr, Options{}), p, 1))
		waitChildren(t, s, p+"/leases", 2)
		expireSession(t, s, tg.Addr)
		select {
		case <-l.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("Lost() not closed after the session expired")
		}
		select {
		case l2 := <-got:
			if err := l2.Release(); err != nil {
				t.Fatal(err)
			}
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter got no lease after the holder's session expired")
		}
		if err := l.Release(); !errors.Is(err, ErrLockLost) {
			t.Errorf("Release of a lost lease: %v, want ErrLockLost", err)
		}
	})
}
