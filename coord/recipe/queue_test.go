package recipe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

var queueItemNode = regexp.MustCompile(`^qn-[0-9a-f]{32}-\d{10}$`)

func TestQueueFIFO(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		s := dial(t, tg.Addr, Options{})
		q := NewQueue(s, testPath(t))
		if _, ok, err := q.TryTake(ctx); err != nil || ok {
			t.Fatalf("TryTake on a queue never used: %v, %v; want false", ok, err)
		}
		for i := range 5 {
			p, err := q.Put(ctx, []byte(fmt.Sprint("item-", i)))
			if err != nil {
				t.Fatal(err)
			}
			if _, name := zpath.Split(p); !queueItemNode.MatchString(name) {
				t.Errorf("item node %q does not match %v", name, queueItemNode)
			}
		}
		if n, err := q.Len(ctx); err != nil || n != 5 {
			t.Fatalf("Len = %d, %v; want 5", n, err)
		}
		for i := range 5 {
			data, err := q.Take(ctx)
			if want := fmt.Sprint("item-", i); err != nil || string(data) != want {
				t.Fatalf("Take %d = %q, %v; want %q", i, data, err, want)
			}
		}
		if _, ok, err := q.TryTake(ctx); err != nil || ok {
			t.Fatalf("TryTake on an emptied queue: %v, %v; want false", ok, err)
		}
	})
}

// TestQueueOrderBySequence: items are taken by sequence number, whatever
// their names, and children without one are not items.
func TestQueueOrderBySequence(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		s := dial(t, tg.Addr, Options{})
		p := testPath(t)
		q := NewQueue(s, p)
		if err := s.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, p+"/config", []byte("not an item"), zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		// Names whose order is the reverse of their sequence order: the
		// source documents' <host>-<seq>, the Java recipe's qn-<seq>.
		for i, prefix := range []string{"192.168.0.9-", "192.168.0.1-", "qn-"} {
			if _, err := s.Create(ctx, p+"/"+prefix, []byte(fmt.Sprint(i)), zk.FlagSequence, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := q.Put(ctx, []byte("3")); err != nil {
			t.Fatal(err)
		}
		for want := range 4 {
			data, err := q.Take(ctx)
			if err != nil || string(data) != fmt.Sprint(want) {
				t.Fatalf("Take = %q, %v; want %d", data, err, want)
			}
		}
		if n, err := q.Len(ctx); err != nil || n != 0 {
			t.Errorf("Len = %d, %v; want 0 (config is no item)", n, err)
		}
		if ok, _, err := s.Exists(ctx, p+"/config"); err != nil || !ok {
			t.Errorf("the non-item child was touched: exists %v, %v", ok, err)
		}
	})
}

func TestQueueTakeWaits(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		consumer := NewQueue(dial(t, tg.Addr, Options{}), p)
		producer := NewQueue(dial(t, tg.Addr, Options{}), p)
		got := make(chan error, 1)
		var data []byte
		go func() {
			var err error
			data, err = consumer.Take(ctx)
			got <- err
		}()
		waitParked(t, []*Session{consumer.s}, 1)
		notYet(t, got, "Take on an empty queue")
		if _, err := producer.Put(ctx, []byte("job")); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, got, "Take"); err != nil || string(data) != "job" {
			t.Fatalf("Take = %q, %v; want job", data, err)
		}

		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if _, err := consumer.Take(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Take on an empty queue with a deadline: %v, want DeadlineExceeded", err)
		}
	})
}

// TestQueueExactlyOnce: concurrent producers and consumers; every item
// is taken once, none is lost.
func TestQueueExactlyOnce(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 60*time.Second)
		p := testPath(t)
		const producers, consumers, perProducer = 2, 4, 40
		var mu sync.Mutex
		taken := map[string]int{}
		var wg sync.WaitGroup
		cctx, stop := context.WithCancel(ctx)
		defer stop()
		for c := range consumers {
			q := NewQueue(dial(t, tg.Addr, Options{}), p)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					data, err := q.Take(cctx)
					if err != nil {
						if cctx.Err() == nil {
							t.Errorf("consumer %d: %v", c, err)
						}
						return
					}
					mu.Lock()
					taken[string(data)]++
					mu.Unlock()
				}
			}()
		}
		var pwg sync.WaitGroup
		for pr := range producers {
			q := NewQueue(dial(t, tg.Addr, Options{}), p)
			pwg.Add(1)
			go func() {
				defer pwg.Done()
				for i := range perProducer {
					if _, err := q.Put(ctx, []byte(fmt.Sprintf("p%d-%d", pr, i))); err != nil {
						t.Errorf("producer %d: %v", pr, err)
						return
					}
				}
			}()
		}
		pwg.Wait()
		coordtest.WaitFor(t, 20*time.Second, "every item taken", func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(taken) != producers*perProducer {
				return fmt.Errorf("%d distinct items taken of %d", len(taken), producers*perProducer)
			}
			return nil
		})
		stop()
		wg.Wait()
		for item, n := range taken {
			if n != 1 {
				t.Errorf("item %s taken %d times", item, n)
			}
		}
	})
}

// TestQueuePutAfterLostReply: a Put whose reply is lost finds the item it
// made rather than adding it twice.
func TestQueuePutAfterLostReply(t *testing.T) {
	t.Parallel() // waits out a reconnection
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		proxy := newFaultProxy(t, tg.Addr)
		q := NewQueue(dial(t, proxy.Addr(), Options{SessionTimeout: 4 * time.Second}), p)
		observer := dial(t, tg.Addr, Options{})
		if err := observer.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Put(ctx, []byte("warm-up")); err != nil { // the next Put is one create
			t.Fatal(err)
		}
		proxy.StallReplies()
		done := make(chan error, 1)
		go func() {
			_, err := q.Put(ctx, []byte("once"))
			done <- err
		}()
		coordtest.WaitFor(t, 5*time.Second, "the put to reach the server", func() error {
			if n, err := NewQueue(observer, p).Len(ctx); err != nil || n != 2 {
				return fmt.Errorf("%d items, %v", n, err)
			}
			return nil
		})
		proxy.Cut()
		proxy.Release()
		if err := recv(t, done, "Put"); err != nil {
			t.Fatal(err)
		}
		if n, err := NewQueue(observer, p).Len(ctx); err != nil || n != 2 {
			t.Fatalf("%d items after a retried Put, %v; want 2", n, err)
		}
	})
}

// TestQueueTakeLostReply: a Take whose delete's outcome is unknown tries
// again if the item is still there, and reports ErrTakeUncertain, with the
// data, if it is gone.
func TestQueueTakeLostReply(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		s := dial(t, tg.Addr, Options{})
		q := NewQueue(s, testPath(t))
		for _, item := range []string{"first", "second"} {
			if _, err := q.Put(ctx, []byte(item)); err != nil {
				t.Fatal(err)
			}
		}
		// The request is lost before it reaches the server.
		lost := 0
		q.remove = func(ctx context.Context, path string, version int32) error {
			if lost++; lost == 1 {
				return fmt.Errorf("recipe: delete %s: %w", path, zk.ErrConnectionClosed)
			}
			return s.Delete(ctx, path, version)
		}
		if data, err := q.Take(ctx); err != nil || string(data) != "first" {
			t.Fatalf("Take after a delete lost on the way = %q, %v; want first, nil", data, err)
		}
		// The delete is done, its reply lost.
		q.remove = func(ctx context.Context, path string, version int32) error {
			if err := s.Delete(ctx, path, version); err != nil {
				return err
			}
			return fmt.Errorf("recipe: delete %s: %w", path, zk.ErrConnectionClosed)
		}
		data, err := q.Take(ctx)
		if !errors.Is(err, ErrTakeUncertain) || string(data) != "second" {
			t.Fatalf("Take after a delete whose reply was lost = %q, %v; want second, ErrTakeUncertain", data, err)
		}
		if n, err := q.Len(ctx); err != nil || n != 0 {
			t.Errorf("Len = %d, %v; want 0", n, err)
		}
	})
}

// TestQueueTakeAcrossExpiry: a consumer whose session expires while it
// waits sets its watch again on the new session and gets the next item.
func TestQueueTakeAcrossExpiry(t *testing.T) {
	t.Parallel() // waits out session expiries
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		s := dial(t, tg.Addr, Options{})
		consumer := NewQueue(s, p)
		got := asyncErr(func() error {
			data, err := consumer.Take(ctx)
			if err == nil && string(data) != "after expiry" {
				err = fmt.Errorf("took %q", data)
			}
			return err
		})
		waitParked(t, []*Session{s}, 1)
		rec := recordStates(s)
		expireSession(t, s, tg.Addr)
		rec.expect(t, 10*time.Second, StateSuspended, StateLost, StateConnected)
		waitParked(t, []*Session{s}, 1)
		if _, err := NewQueue(dial(t, tg.Addr, Options{}), p).Put(ctx, []byte("after expiry")); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, got, "Take across the expiry"); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkQueue has one producer put b.N items as fast as it can while
// c consumers, each with its own session, take them, on each target
// server. It reports items taken per second and the node events each item
// caused across the consumers' sessions: waiting consumers all watch the
// queue, so an item put while c consumers wait wakes up to c; while a
// backlog keeps them busy, none wait.
//
//	go test -run '^$' -bench BenchmarkQueue -benchtime 2000x ./coord/recipe/
func BenchmarkQueue(b *testing.B) {
	for _, tg := range targets {
		for _, c := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/%d", tg.Name, c), func(b *testing.B) {
				tg.Require(b)
				benchQueue(b, tg, c)
			})
		}
	}
}

func benchQueue(b *testing.B, tg *coordtest.Target, consumers int) {
	p := testPath(b)
	quiet := Options{Logger: slog.New(slog.DiscardHandler)}
	producer := NewQueue(dial(b, tg.Addr, quiet), p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sessions := make([]*Session, consumers)
	for i := range sessions {
		sessions[i] = dial(b, tg.Addr, quiet)
	}
	events := func() (n int64) {
		for _, s := range sessions {
			n += s.nodeEvents.Load()
		}
		return n
	}
	e0 := events()
	var taken atomic.Int64
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := NewQueue(s, p)
			for {
				if _, err := q.Take(cctx); err != nil {
					if cctx.Err() == nil {
						b.Error(err)
					}
					return
				}
				if taken.Add(1) == int64(b.N) {
					stop()
				}
			}
		}()
	}
	for i := range b.N {
		if _, err := producer.Put(ctx, []byte(fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "items/s")
	b.ReportMetric(float64(events()-e0)/float64(b.N), "events/item")
}
