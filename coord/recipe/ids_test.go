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

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

var type2JobID = regexp.MustCompile(`^type2-job-\d{10}$`)

func TestIDs(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		s := dial(t, tg.Addr, Options{})
		root := testPath(t)
		ids := NewIDs(s, root, "job")
		prev := ""
		for range 5 {
			id, err := ids.NextID(ctx, "type2")
			if err != nil {
				t.Fatal(err)
			}
			if !type2JobID.MatchString(id) {
				t.Fatalf("id %q does not look like type2-job-0000000003", id)
			}
			if id <= prev {
				t.Fatalf("id %q after %q, want increasing", id, prev)
			}
			prev = id
		}
		if id, err := ids.NextID(ctx, "type1"); err != nil || id != "type1-job-0000000000" {
			t.Errorf("first id of another type = %q, %v; want type1-job-0000000000", id, err)
		}
		// The nodes are deleted once their number is read.
		if kids, _, err := s.Children(ctx, root+"/type2"); err != nil || len(kids) != 0 {
			t.Errorf("type node children after NextID: %v, %v; want none", kids, err)
		}
		for _, typ := range []string{"", "a/b", "..", "x\x00"} {
			if _, err := ids.NextID(ctx, typ); !errors.Is(err, zk.ErrInvalidPath) {
				t.Errorf("NextID(%q): %v, want zk.ErrInvalidPath", typ, err)
			}
		}
	})
}

// TestIDsUniqueAcrossProcesses: concurrent issuers on separate sessions
// never issue the same ID, and each sees its own IDs increase.
func TestIDsUniqueAcrossProcesses(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		root := testPath(t)
		const issuers, each = 4, 20
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for i := range issuers {
			ids := NewIDs(dial(t, tg.Addr, Options{}), root, "job")
			wg.Add(1)
			go func() {
				defer wg.Done()
				prev := ""
				for range each {
					id, err := ids.NextID(ctx, "type2")
					if err != nil {
						t.Errorf("issuer %d: %v", i, err)
						return
					}
					if id <= prev {
						t.Errorf("issuer %d: %q after %q", i, id, prev)
					}
					prev = id
					mu.Lock()
					seen[id]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != issuers*each {
			t.Errorf("%d distinct ids of %d issued", len(seen), issuers*each)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s issued %d times", id, n)
			}
		}
	})
}

// TestIDsAfterLostReply: a NextID whose create's reply is lost returns an
// ID and leaves no node behind.
func TestIDsAfterLostReply(t *testing.T) {
	t.Parallel() // waits out a reconnection
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		root := testPath(t)
		proxy := newFaultProxy(t, tg.Addr)
		ids := NewIDs(dial(t, proxy.Addr(), Options{SessionTimeout: 4 * time.Second}), root, "job")
		observer := dial(t, tg.Addr, Options{})
		if _, err := ids.NextID(ctx, "type2"); err != nil { // the type node exists now
			t.Fatal(err)
		}
		proxy.StallReplies()
		type result struct {
			id  string
			err error
		}
		done := make(chan result, 1)
		go func() {
			id, err := ids.NextID(ctx, "type2")
			done <- result{id, err}
		}()
		coordtest.WaitFor(t, 5*time.Second, "the create to reach the server", func() error {
			if kids, _, err := observer.Children(ctx, root+"/type2"); err != nil || len(kids) != 1 {
				return fmt.Errorf("children %v, %v", kids, err)
			}
			return nil
		})
		proxy.Cut()
		proxy.Release()
		var r result
		select {
		case r = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("NextID did not return after the connection came back")
		}
		if r.err != nil || r.id != "type2-job-0000000001" {
			t.Fatalf("NextID = %q, %v; want type2-job-0000000001 (the node made before the cut)", r.id, r.err)
		}
		coordtest.WaitFor(t, 5*time.Second, "no node left", func() error {
			if kids, _, err := observer.Children(ctx, root+"/type2"); err != nil || len(kids) != 0 {
				return fmt.Errorf("children %v, %v", kids, err)
			}
			return nil
		})
	})
}

// BenchmarkNextID has n issuers, each with its own session, issue b.N IDs
// of one type in all, on each target server.
//
//	go test -run '^$' -bench BenchmarkNextID -benchtime 2000x ./coord/recipe/
func BenchmarkNextID(b *testing.B) {
	for _, tg := range targets {
		for _, n := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/%d", tg.Name, n), func(b *testing.B) {
				tg.Require(b)
				root := testPath(b)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				issuers := make([]*IDs, n)
				for i := range issuers {
					issuers[i] = NewIDs(dial(b, tg.Addr, Options{Logger: slog.New(slog.DiscardHandler)}), root, "job")
				}
				var tickets atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for _, ids := range issuers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for tickets.Add(1) <= int64(b.N) {
							if _, err := ids.NextID(ctx, "type2"); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ids/s")
			})
		}
	}
}
