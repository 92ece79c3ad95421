package recipe

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

func rlockAsync(ctx context.Context, rw *RWMutex) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- rw.RLock(ctx) }()
	return ch
}

func wlockAsync(ctx context.Context, rw *RWMutex) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- rw.Lock(ctx) }()
	return ch
}

var (
	curatorReadNode  = regexp.MustCompile(`^_c_[0-9a-f-]{36}-__READ__\d{10}$`)
	curatorWriteNode = regexp.MustCompile(`^_c_[0-9a-f-]{36}-__WRIT__\d{10}$`)
)

func TestRWMutexReadersShareWritersExclude(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		s := dial(t, tg.Addr, Options{})
		r1, r2 := NewRWMutex(s, p), NewRWMutex(dial(t, tg.Addr, Options{}), p)
		w := NewRWMutex(dial(t, tg.Addr, Options{}), p)
		if err := r1.RLock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r2.RLock(ctx); err != nil {
			t.Fatalf("second reader: %v", err)
		}
		if ok, err := w.TryLock(ctx); err != nil || ok {
			t.Fatalf("TryLock of the write lock while read-locked: %v, %v", ok, err)
		}
		wDone := wlockAsync(ctx, w)
		names := waitChildren(t, s, p, 3)
		for i, re := range []*regexp.Regexp{curatorReadNode, curatorReadNode, curatorWriteNode} {
			if !re.MatchString(names[i]) {
				t.Errorf("node %d %q does not match %v", i, names[i], re)
			}
		}
		// A reader arriving after a queued writer waits for it.
		r3 := NewRWMutex(dial(t, tg.Addr, Options{}), p)
		if ok, err := r3.TryRLock(ctx); err != nil || ok {
			t.Fatalf("TryRLock behind a queued writer: %v, %v; want false", ok, err)
		}
		if err := r1.RUnlock(); err != nil {
			t.Fatal(err)
		}
		notYet(t, wDone, "writer while one reader still holds")
		if err := r2.RUnlock(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, wDone, "writer"); err != nil {
			t.Fatal(err)
		}
		r1Done := rlockAsync(ctx, r1)
		waitChildren(t, s, p, 2)
		notYet(t, r1Done, "reader while the writer holds")
		if err := w.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, r1Done, "reader"); err != nil {
			t.Fatal(err)
		}
		if err := r1.RUnlock(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRWMutexWakesOnlyWhomItUnblocks queues W1 (holding), R1, W2, R2, R3.
// R1 waits for W1, W2 for R1, R2 and R3 for W2 — the last writer before
// them. Each release must wake exactly those it unblocks: 1, 1, then 2.
func TestRWMutexWakesOnlyWhomItUnblocks(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		var sessions []*Session
		mk := func() *RWMutex {
			s := dial(t, tg.Addr, Options{})
			sessions = append(sessions, s)
			return NewRWMutex(s, p)
		}
		wakeups := func() (n int64) {
			for _, s := range sessions {
				n += s.waiterWakeups.Load()
			}
			return n
		}
		w1, r1, w2, r2, r3 := mk(), mk(), mk(), mk(), mk()
		if err := w1.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		r1Done := rlockAsync(ctx, r1)
		waitChildren(t, sessions[0], p, 2)
		w2Done := wlockAsync(ctx, w2)
		waitChildren(t, sessions[0], p, 3)
		r2Done := rlockAsync(ctx, r2)
		waitChildren(t, sessions[0], p, 4)
		r3Done := rlockAsync(ctx, r3)
		waitChildren(t, sessions[0], p, 5)
		waitParked(t, sessions, 4)

		if err := w1.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, r1Done, "r1"); err != nil {
			t.Fatal(err)
		}
		notYet(t, w2Done, "w2 while r1 reads")
		if n := wakeups(); n != 1 {
			t.Fatalf("w1's release woke %d waiters, want 1 (r1)", n)
		}
		if err := r1.RUnlock(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, w2Done, "w2"); err != nil {
			t.Fatal(err)
		}
		notYet(t, r2Done, "r2 while w2 writes")
		if n := wakeups(); n != 2 {
			t.Fatalf("r1's release: %d wakeups in all, want 2", n)
		}
		if err := w2.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, r2Done, "r2"); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, r3Done, "r3"); err != nil {
			t.Fatal(err)
		}
		if n := wakeups(); n != 4 {
			t.Fatalf("w2's release: %d wakeups in all, want 4 (r2 and r3 woken once each)", n)
		}
		for _, rw := range []*RWMutex{r2, r3} {
			if err := rw.RUnlock(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestRWMutexDowngradeAndUpgrade(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		s := dial(t, tg.Addr, Options{})
		rw := NewRWMutex(s, p)
		other := NewRWMutex(dial(t, tg.Addr, Options{}), p)
		reader := NewRWMutex(dial(t, tg.Addr, Options{}), p)
		if err := rw.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		oDone := wlockAsync(ctx, other)
		waitChildren(t, s, p, 2)
		// The writer may read, even with a writer queued behind it, and
		// keeps reading after releasing the write lock.
		if err := rw.RLock(ctx); err != nil {
			t.Fatalf("RLock by the write holder: %v", err)
		}
		if err := rw.Unlock(); err != nil {
			t.Fatal(err)
		}
		notYet(t, oDone, "the queued writer while the downgraded holder reads")
		select {
		case <-rw.RLost():
			t.Fatal("RLost() closed while reading on the write node")
		default:
		}
		if err := rw.Lock(ctx); err != nil { // nobody came in between
			t.Fatalf("re-taking the write lock while reading on it: %v", err)
		}
		if err := rw.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := rw.RUnlock(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, oDone, "the queued writer"); err != nil {
			t.Fatal(err)
		}
		if err := other.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := reader.RLock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := reader.Lock(ctx); !errors.Is(err, ErrLockUpgrade) {
			t.Fatalf("Lock by a reader: %v, want ErrLockUpgrade", err)
		}
		if _, err := reader.TryLock(ctx); !errors.Is(err, ErrLockUpgrade) {
			t.Fatalf("TryLock by a reader: %v, want ErrLockUpgrade", err)
		}
		if err := reader.RUnlock(); err != nil {
			t.Fatal(err)
		}
		if err := other.RUnlock(); !errors.Is(err, ErrNotLocked) {
			t.Errorf("RUnlock without RLock: %v, want ErrNotLocked", err)
		}
		waitChildren(t, s, p, 0)
	})
}

func TestRWMutexLost(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		s := dial(t, tg.Addr, Options{})
		rw := NewRWMutex(s, p)
		if err := rw.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rw.RLock(ctx); err != nil {
			t.Fatal(err)
		}
		expireSession(t, s, tg.Addr)
		for name, ch := range map[string]<-chan struct{}{"Lost": rw.Lost(), "RLost": rw.RLost()} {
			select {
			case <-ch:
			case <-time.After(10 * time.Second):
				t.Errorf("%s() not closed after the session expired", name)
			}
		}
		if err := rw.RUnlock(); !errors.Is(err, ErrLockLost) {
			t.Errorf("RUnlock: %v, want ErrLockLost", err)
		}
		if err := rw.Unlock(); !errors.Is(err, ErrLockLost) {
			t.Errorf("Unlock: %v, want ErrLockLost", err)
		}
	})
}
