package recipe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// asyncErr runs fn and returns the channel of its result.
func asyncErr(fn func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	return ch
}

// waitNodes waits until dir has exactly the children want, in any order.
func waitNodes(t testing.TB, s *Session, dir string, want ...string) {
	t.Helper()
	slices.Sort(want)
	coordtest.WaitFor(t, 10*time.Second, fmt.Sprintf("children %v of %s", want, dir), func() error {
		kids, _, err := s.Children(context.Background(), dir)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		slices.Sort(kids)
		if !slices.Equal(kids, want) {
			return fmt.Errorf("children %v", kids)
		}
		return nil
	})
}

func TestBarrier(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t) + "/queue_barrier"
		admin := dial(t, tg.Addr, Options{})
		if err := CreateBarrier(ctx, admin, p, 3); err != nil {
			t.Fatal(err)
		}
		if data, _, err := admin.Get(ctx, p); err != nil || string(data) != "3" {
			t.Fatalf("barrier node data %q, %v; want 3", data, err)
		}
		var bs []*Barrier
		for _, host := range []string{"192.168.0.1", "192.168.0.2", "192.168.0.3", "192.168.0.4"} {
			bs = append(bs, NewBarrier(dial(t, tg.Addr, Options{}), p, host))
		}
		if n, err := bs[0].Size(ctx); err != nil || n != 3 {
			t.Fatalf("Size = %d, %v; want 3", n, err)
		}
		first := asyncErr(func() error { return bs[0].Wait(ctx) })
		second := asyncErr(func() error { return bs[1].Wait(ctx) })
		waitNodes(t, admin, p, "192.168.0.1", "192.168.0.2")
		notYet(t, first, "Wait with 2 of 3 participants")
		notYet(t, second, "Wait with 2 of 3 participants")
		if err := bs[2].Wait(ctx); err != nil {
			t.Fatalf("the last participant's Wait: %v", err)
		}
		for i, ch := range []<-chan error{first, second} {
			if err := recv(t, ch, fmt.Sprint("participant ", i)); err != nil {
				t.Fatal(err)
			}
		}
		// A latecomer finds the barrier open.
		if err := bs[3].Wait(ctx); err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if err := b.Leave(ctx); err != nil {
				t.Fatal(err)
			}
		}
		waitNodes(t, admin, p)
	})
}

func TestBarrierErrors(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		s := dial(t, tg.Addr, Options{})
		if err := CreateBarrier(ctx, s, p, 0); !errors.Is(err, ErrBadBarrier) {
			t.Errorf("CreateBarrier of size 0: %v, want ErrBadBarrier", err)
		}
		if err := s.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		for _, data := range []string{"", "ten", "-1", "0"} {
			if _, err := s.Set(ctx, p, []byte(data), -1); err != nil {
				t.Fatal(err)
			}
			if err := NewBarrier(s, p, "m").Wait(ctx); !errors.Is(err, ErrBadBarrier) {
				t.Errorf("Wait on a barrier with data %q: %v, want ErrBadBarrier", data, err)
			}
		}
		if err := NewBarrier(s, p+"-missing", "m").Wait(ctx); !errors.Is(err, zk.ErrNoNode) {
			t.Errorf("Wait on a missing barrier: %v, want zk.ErrNoNode", err)
		}
		if err := CreateBarrier(ctx, s, p, 2); err != nil {
			t.Fatal(err)
		}
		if err := NewBarrier(s, p, "a/b").Wait(ctx); !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("Wait with member a/b: %v, want zk.ErrInvalidPath", err)
		}
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if err := NewBarrier(s, p, "alone").Wait(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait with 1 of 2 and a deadline: %v, want DeadlineExceeded", err)
		}
		waitNodes(t, s, p) // the participant that gave up left
	})
}

// TestBarrierRejoinsAfterExpiry: a participant whose session expires while
// it waits registers again, and the barrier opens with it counted.
func TestBarrierRejoinsAfterExpiry(t *testing.T) {
	t.Parallel() // waits out session expiries
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		admin := dial(t, tg.Addr, Options{})
		if err := CreateBarrier(ctx, admin, p, 2); err != nil {
			t.Fatal(err)
		}
		sa := dial(t, tg.Addr, Options{})
		a := asyncErr(func() error { return NewBarrier(sa, p, "a").Wait(ctx) })
		waitNodes(t, admin, p, "a")
		_, st, err := admin.Get(ctx, p+"/a")
		if err != nil {
			t.Fatal(err)
		}
		expireSession(t, sa, tg.Addr)
		coordtest.WaitFor(t, 10*time.Second, "a to register again", func() error {
			_, st2, err := admin.Get(ctx, p+"/a")
			if err != nil {
				return err
			}
			if st2.EphemeralOwner == st.EphemeralOwner {
				return errors.New("still the old session's node")
			}
			return nil
		})
		if err := NewBarrier(dial(t, tg.Addr, Options{}), p, "b").Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, a, "a's Wait"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDoubleBarrier(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		admin := dial(t, tg.Addr, Options{})
		const n = 3
		var bs []*DoubleBarrier
		for i := range n {
			bs = append(bs, NewDoubleBarrier(dial(t, tg.Addr, Options{}), p, n, fmt.Sprint("worker-", i)))
		}
		for round := range 2 {
			// Enter: nobody passes until the last has come.
			var entered []<-chan error
			for i := range n - 1 {
				entered = append(entered, asyncErr(func() error { return bs[i].Enter(ctx) }))
			}
			waitNodes(t, admin, p, "worker-0", "worker-1")
			for _, ch := range entered {
				notYet(t, ch, fmt.Sprintf("round %d: Enter with %d of %d", round, n-1, n))
			}
			if err := bs[n-1].Enter(ctx); err != nil {
				t.Fatal(err)
			}
			for _, ch := range entered {
				if err := recv(t, ch, "Enter"); err != nil {
					t.Fatal(err)
				}
			}
			// Leave: nobody passes until the last has gone.
			var left []<-chan error
			for i := range n - 1 {
				left = append(left, asyncErr(func() error { return bs[i].Leave(ctx) }))
			}
			coordtest.WaitFor(t, 10*time.Second, "the first participants to be leaving", func() error {
				kids, _, err := admin.Children(ctx, p)
				if err != nil {
					return err
				}
				if slices.Contains(kids, "worker-1") {
					return fmt.Errorf("children %v", kids)
				}
				return nil
			})
			for _, ch := range left {
				notYet(t, ch, fmt.Sprintf("round %d: Leave while worker-%d is in", round, n-1))
			}
			if err := bs[n-1].Leave(ctx); err != nil {
				t.Fatal(err)
			}
			for _, ch := range left {
				if err := recv(t, ch, "Leave"); err != nil {
					t.Fatal(err)
				}
			}
			waitNodes(t, admin, p) // ready deleted: the next round can start
		}
	})
}

// TestDoubleBarrierMany: many participants enter and leave at once.
func TestDoubleBarrierMany(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		const n = 6
		var mu sync.Mutex
		var events []string
		var wg sync.WaitGroup
		for i := range n {
			b := NewDoubleBarrier(dial(t, tg.Addr, Options{}), p, n, fmt.Sprint("w", i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				log := func(ev string) { mu.Lock(); events = append(events, ev); mu.Unlock() }
				log("enter")
				if err := b.Enter(ctx); err != nil {
					t.Error(err)
					return
				}
				log("entered")
				log("leave")
				if err := b.Leave(ctx); err != nil {
					t.Error(err)
					return
				}
				log("left")
			}()
		}
		wg.Wait()
		// Every "entered" after every "enter", every "left" after every
		// "leave".
		lastEnter, lastLeave := -1, -1
		for i, ev := range events {
			switch ev {
			case "enter":
				lastEnter = i
			case "leave":
				lastLeave = i
			}
		}
		for i, ev := range events {
			if ev == "entered" && i < lastEnter || ev == "left" && i < lastLeave {
				t.Fatalf("event %d %q before all had arrived: %v", i, ev, events)
			}
		}
		waitNodes(t, dial(t, tg.Addr, Options{}), p)
	})
}

func TestDoubleBarrierErrors(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 10*time.Second)
		s := dial(t, tg.Addr, Options{})
		p := testPath(t)
		for _, b := range []*DoubleBarrier{
			NewDoubleBarrier(s, p, 0, "w"),
			NewDoubleBarrier(s, p, 2, "ready"),
		} {
			if err := b.Enter(ctx); !errors.Is(err, ErrBadBarrier) {
				t.Errorf("Enter of %+v: %v, want ErrBadBarrier", b, err)
			}
		}
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if err := NewDoubleBarrier(s, p, 2, "alone").Enter(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Enter with 1 of 2 and a deadline: %v, want DeadlineExceeded", err)
		}
		waitNodes(t, s, p)
	})
}

// TestDoubleBarrierReentersAfterExpiry: a participant whose session
// expires while it waits to enter enters again on its new session.
func TestDoubleBarrierReentersAfterExpiry(t *testing.T) {
	t.Parallel() // waits out session expiries
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		admin := dial(t, tg.Addr, Options{})
		sa := dial(t, tg.Addr, Options{})
		a := NewDoubleBarrier(sa, p, 2, "a")
		b := NewDoubleBarrier(dial(t, tg.Addr, Options{}), p, 2, "b")
		entered := asyncErr(func() error { return a.Enter(ctx) })
		waitNodes(t, admin, p, "a")
		_, st, err := admin.Get(ctx, p+"/a")
		if err != nil {
			t.Fatal(err)
		}
		expireSession(t, sa, tg.Addr)
		coordtest.WaitFor(t, 10*time.Second, "a to enter again", func() error {
			_, st2, err := admin.Get(ctx, p+"/a")
			if err != nil {
				return err
			}
			if st2.EphemeralOwner == st.EphemeralOwner {
				return errors.New("still the old session's node")
			}
			return nil
		})
		if err := b.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, entered, "a's Enter"); err != nil {
			t.Fatal(err)
		}
		left := asyncErr(func() error { return a.Leave(ctx) })
		if err := b.Leave(ctx); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, left, "a's Leave"); err != nil {
			t.Fatal(err)
		}
		waitNodes(t, admin, p)
	})
}
