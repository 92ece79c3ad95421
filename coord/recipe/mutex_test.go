package recipe

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// lockAsync starts m.Lock and returns the channel of its result.
func lockAsync(ctx context.Context, m *Mutex) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- m.Lock(ctx) }()
	return ch
}

// waitChildren waits until dir has n contender nodes and returns them in
// queue order.
func waitChildren(t testing.TB, s *Session, dir string, n int) []string {
	t.Helper()
	var names []string
	coordtest.WaitFor(t, 10*time.Second, fmt.Sprintf("%d contenders under %s", n, dir), func() error {
		kids, _, err := s.Children(context.Background(), dir)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		cs := contenders(kids)
		if len(cs) != n {
			return fmt.Errorf("%d contenders: %v", len(cs), kids)
		}
		names = names[:0]
		for _, c := range cs {
			names = append(names, c.name)
		}
		return nil
	})
	return names
}

// waitParked waits until n waiters of sessions are blocked on their
// watches: queued nodes alone do not mean the watches are set.
func waitParked(t testing.TB, sessions []*Session, n int64) {
	t.Helper()
	coordtest.WaitFor(t, 10*time.Second, fmt.Sprintf("%d parked waiters", n), func() error {
		var got int64
		for _, s := range sessions {
			got += s.parked.Load()
		}
		if got != n {
			return fmt.Errorf("%d parked", got)
		}
		return nil
	})
}

// notYet fails the test if ch delivers now; the caller has already
// waited for the state in which it must not (e.g. the waiter's node is
// queued), so only a short grace is needed to catch a wrong grant.
func notYet(t testing.TB, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned early: %v", what, err)
	case <-time.After(100 * time.Millisecond):
	}
}

func recv(t testing.TB, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return within 10s", what)
		return nil
	}
}

func TestMutexHandoff(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		sa, sb := dial(t, tg.Addr, Options{}), dial(t, tg.Addr, Options{})
		a, b := NewMutex(sa, p), NewMutex(sb, p)
		if err := a.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-a.Lost():
			t.Fatal("Lost() closed on a held lock")
		default:
		}
		bDone := lockAsync(ctx, b)
		waitChildren(t, sa, p, 2)
		notYet(t, bDone, "b.Lock while a holds the lock")
		if err := a.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, bDone, "b.Lock"); err != nil {
			t.Fatalf("b.Lock after a.Unlock: %v", err)
		}
		if got := waitChildren(t, sa, p, 1); p+"/"+got[0] != b.Node() {
			t.Errorf("remaining node %s, want b's %s", got[0], b.Node())
		}
		select {
		case <-a.Lost():
		default:
			t.Error("Lost() of an unlocked Mutex is not closed")
		}
		if err := a.Unlock(); !errors.Is(err, ErrNotLocked) {
			t.Errorf("Unlock of an unheld Mutex: %v, want ErrNotLocked", err)
		}
		if err := b.Unlock(); err != nil {
			t.Fatal(err)
		}
		waitChildren(t, sa, p, 0)
	})
}

func TestMutexReentrant(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		s, other := dial(t, tg.Addr, Options{}), dial(t, tg.Addr, Options{})
		m := NewMutex(s, p)
		for range 3 {
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		node := m.Node()
		if got := waitChildren(t, s, p, 1); p+"/"+got[0] != node {
			t.Fatalf("reentrant locks made nodes %v, want only %s", got, node)
		}
		o := NewMutex(other, p)
		for i := 3; i > 1; i-- {
			if err := m.Unlock(); err != nil {
				t.Fatal(err)
			}
			if ok, err := o.TryLock(ctx); err != nil || ok {
				t.Fatalf("TryLock by another holder with %d holds left: %v, %v; want false", i-1, ok, err)
			}
		}
		if err := m.Unlock(); err != nil {
			t.Fatal(err)
		}
		if ok, err := o.TryLock(ctx); err != nil || !ok {
			t.Fatalf("TryLock after the last Unlock: %v, %v; want true", ok, err)
		}
		if err := o.Unlock(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestMutexTryLockLeavesNoNode(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		sa, sb := dial(t, tg.Addr, Options{}), dial(t, tg.Addr, Options{})
		a, b := NewMutex(sa, p), NewMutex(sb, p)
		if ok, err := a.TryLock(ctx); err != nil || !ok {
			t.Fatalf("TryLock on a free lock: %v, %v", ok, err)
		}
		if ok, err := b.TryLock(ctx); err != nil || ok {
			t.Fatalf("TryLock on a held lock: %v, %v", ok, err)
		}
		waitChildren(t, sa, p, 1)
		if b.Node() != "" {
			t.Errorf("a failed TryLock left Node() = %q", b.Node())
		}
	})
}

// TestMutexTimeoutDeletesNode: a waiter that gives up must not stay in the
// queue, or the next holder would wait for a node nobody will delete.
func TestMutexTimeoutDeletesNode(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		sa, sb, sc := dial(t, tg.Addr, Options{}), dial(t, tg.Addr, Options{}), dial(t, tg.Addr, Options{})
		a, b, c := NewMutex(sa, p), NewMutex(sb, p), NewMutex(sc, p)
		if err := a.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := b.Lock(short)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("b.Lock with a 300ms deadline: %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("b.Lock returned %v after its deadline", d)
		}
		waitChildren(t, sa, p, 1)
		cDone := lockAsync(ctx, c)
		waitChildren(t, sa, p, 2)
		if err := a.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, cDone, "c.Lock"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMutexFIFO: the lock is granted in the order contenders queued.
func TestMutexFIFO(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		first := NewMutex(dial(t, tg.Addr, Options{}), p)
		if err := first.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		const n = 5
		granted := make(chan int, n)
		ms := make([]*Mutex, n)
		for i := range n {
			ms[i] = NewMutex(dial(t, tg.Addr, Options{}), p)
			go func() {
				if err := ms[i].Lock(ctx); err != nil {
					t.Errorf("contender %d: %v", i, err)
					return
				}
				granted <- i
			}()
			waitChildren(t, first.l.s, p, i+2) // queue them one by one
		}
		if err := first.Unlock(); err != nil {
			t.Fatal(err)
		}
		for want := range n {
			select {
			case got := <-granted:
				if got != want {
					t.Fatalf("grant %d went to contender %d, want %d", want, got, want)
				}
				if err := ms[got].Unlock(); err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("grant %d: nobody got the lock", want)
			}
		}
	})
}

// TestMutexHerdFree: each release wakes exactly one waiter.
func TestMutexHerdFree(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 60*time.Second)
		p := testPath(t)
		const n = 8
		var sessions []*Session
		var ms []*Mutex
		for range n {
			s := dial(t, tg.Addr, Options{})
			sessions = append(sessions, s)
			ms = append(ms, NewMutex(s, p))
		}
		if err := ms[0].Lock(ctx); err != nil {
			t.Fatal(err)
		}
		done := make([]<-chan error, n)
		for i := 1; i < n; i++ {
			done[i] = lockAsync(ctx, ms[i])
		}
		waitChildren(t, sessions[0], p, n)
		waitParked(t, sessions, n-1)
		wakeups := func() (w, all int64) {
			for _, s := range sessions {
				w += s.waiterWakeups.Load()
				all += s.nodeEvents.Load()
			}
			return w, all
		}
		holder := 0
		for release := 1; release < n; release++ {
			if err := ms[holder].Unlock(); err != nil {
				t.Fatal(err)
			}
			// Whoever is next gets it; find them.
			next := -1
			coordtest.WaitFor(t, 10*time.Second, "the next holder", func() error {
				for i := 1; i < n; i++ {
					select {
					case err := <-done[i]:
						if err != nil {
							return fmt.Errorf("contender %d: %v", i, err)
						}
						next = i
						done[i] = nil
						return nil
					default:
					}
				}
				return errors.New("no grant yet")
			})
			holder = next
			w, all := wakeups()
			if w != int64(release) {
				t.Fatalf("after %d releases waiters were woken %d times, want exactly %d (one per release)", release, w, release)
			}
			// The successor's watch, and the releasing holder's own watch
			// on its node; nobody else's.
			if all > 2*int64(release) {
				t.Fatalf("after %d releases %d node events, want at most %d", release, all, 2*release)
			}
		}
		if err := ms[holder].Unlock(); err != nil {
			t.Fatal(err)
		}
	})
}

var (
	curatorLockNode = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-\d{10}$`)
	kazooLockNode   = regexp.MustCompile(`^[0-9a-f]{32}__lock__\d{10}$`)
)

func TestMutexNaming(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		s := dial(t, tg.Addr, Options{})
		curator := NewMutex(s, p, WithNodeData([]byte("host-a")))
		kazoo := NewMutex(dial(t, tg.Addr, Options{}), p, WithNaming(KazooNaming))
		if err := curator.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		kDone := lockAsync(ctx, kazoo)
		names := waitChildren(t, s, p, 2)
		if !curatorLockNode.MatchString(names[0]) {
			t.Errorf("Curator-named node %q does not match %v", names[0], curatorLockNode)
		}
		if !kazooLockNode.MatchString(names[1]) {
			t.Errorf("kazoo-named node %q does not match %v", names[1], kazooLockNode)
		}
		if data, _, err := s.Get(ctx, curator.Node()); err != nil || string(data) != "host-a" {
			t.Errorf("node data %q, %v; want host-a", data, err)
		}
		notYet(t, kDone, "a kazoo-named contender while a Curator-named one holds")
		if err := curator.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, kDone, "kazoo-named Lock"); err != nil {
			t.Fatal(err)
		}
		if err := kazoo.Unlock(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMutexLostOnExpiry: when the holder's session expires, Lost closes,
// the next waiter gets the lock, and fenced writes of the old holder fail.
func TestMutexLostOnExpiry(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		sa, sb := dial(t, tg.Addr, Options{}), dial(t, tg.Addr, Options{})
		a, b := NewMutex(sa, p), NewMutex(sb, p)
		if err := a.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		resource := p + "-resource"
		if _, err := sa.Create(ctx, resource, nil, zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		fenced := func(m *Mutex, s *Session, data string) error {
			_, err := s.Multi(ctx,
				&zk.CheckVersionRequest{Path: m.Node(), Version: 0},
				&zk.SetDataRequest{Path: resource, Data: []byte(data), Version: -1})
			return err
		}
		node := a.Node()
		if err := fenced(a, sa, "a"); err != nil {
			t.Fatalf("fenced write while holding: %v", err)
		}
		bDone := lockAsync(ctx, b)
		waitChildren(t, sb, p, 2)
		expireSession(t, sa, tg.Addr)
		select {
		case <-a.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("Lost() not closed after the holder's session expired")
		}
		if err := recv(t, bDone, "b.Lock"); err != nil {
			t.Fatal(err)
		}
		if _, err := sa.Multi(ctx,
			&zk.CheckVersionRequest{Path: node, Version: 0},
			&zk.SetDataRequest{Path: resource, Data: []byte("stale"), Version: -1}); !errors.Is(err, zk.ErrNoNode) {
			t.Errorf("fenced write of the old holder: %v, want zk.ErrNoNode", err)
		}
		if err := fenced(b, sb, "b"); err != nil {
			t.Errorf("fenced write of the new holder: %v", err)
		}
		if err := a.Lock(ctx); !errors.Is(err, ErrLockLost) {
			t.Errorf("Lock on a lost hold: %v, want ErrLockLost", err)
		}
		if err := a.Unlock(); !errors.Is(err, ErrLockLost) {
			t.Errorf("Unlock of a lost hold: %v, want ErrLockLost", err)
		}
		// a can queue again, on its new session.
		aDone := lockAsync(ctx, a)
		waitChildren(t, sb, p, 2)
		if err := b.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, aDone, "a.Lock on the new session"); err != nil {
			t.Fatal(err)
		}
		if err := a.Unlock(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestMutexLostOnNodeDeleted(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		s, admin := dial(t, tg.Addr, Options{}), dial(t, tg.Addr, Options{})
		m := NewMutex(s, p)
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := admin.Delete(ctx, m.Node(), -1); err != nil {
			t.Fatal(err)
		}
		select {
		case <-m.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("Lost() not closed after the lock node was deleted")
		}
		if err := m.Unlock(); !errors.Is(err, ErrLockLost) {
			t.Errorf("Unlock: %v, want ErrLockLost", err)
		}
	})
}

// TestMutexWaiterRequeuesAfterLoss: a waiter whose session expires queues
// again on its new session and leaves nothing of the old one behind.
func TestMutexWaiterRequeuesAfterLoss(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		sa, sb := dial(t, tg.Addr, Options{}), dial(t, tg.Addr, Options{})
		a, b := NewMutex(sa, p), NewMutex(sb, p)
		if err := a.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		bDone := lockAsync(ctx, b)
		before := waitChildren(t, sa, p, 2)
		expireSession(t, sb, tg.Addr)
		coordtest.WaitFor(t, 10*time.Second, "b to queue again", func() error {
			kids, _, err := sa.Children(ctx, p)
			if err != nil {
				return err
			}
			if cs := contenders(kids); len(cs) != 2 || cs[1].name == before[1] {
				return fmt.Errorf("contenders %v", kids)
			}
			return nil
		})
		if err := a.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, bDone, "b.Lock"); err != nil {
			t.Fatal(err)
		}
		if err := b.Unlock(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMutexChroot: a Session with a chroot and one without contend for
// the same lock.
func TestMutexChroot(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		root := testPath(t)
		inside := NewMutex(dial(t, tg.Addr+root, Options{}), "/locks/job")
		plain := dial(t, tg.Addr, Options{})
		outside := NewMutex(plain, root+"/locks/job")
		if err := inside.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, err := outside.TryLock(ctx); err != nil || ok {
			t.Fatalf("TryLock outside the chroot while held inside: %v, %v", ok, err)
		}
		if _, name := zpath.Split(inside.Node()); !curatorLockNode.MatchString(name) || !regexp.MustCompile(`^/locks/job/`).MatchString(inside.Node()) {
			t.Errorf("Node() = %q, want a path relative to the chroot", inside.Node())
		}
		if err := inside.Unlock(); err != nil {
			t.Fatal(err)
		}
		if ok, err := outside.TryLock(ctx); err != nil || !ok {
			t.Fatalf("TryLock outside after release inside: %v, %v", ok, err)
		}
	})
}
