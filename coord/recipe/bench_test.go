package recipe

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// BenchmarkMutexHandoff has n contenders, each with its own session,
// take and release one Mutex in a loop, b.N times in all, on each target
// server. It reports hand-offs per second and the watch notifications
// each release caused: waiter wake-ups (1 for a herd-free lock, whatever
// n) and all node events (also counting the releasing holder's own watch
// on its node).
//
//	go test -run '^$' -bench BenchmarkMutexHandoff -benchtime 2000x ./coord/recipe/
func BenchmarkMutexHandoff(b *testing.B) {
	for _, tg := range targets {
		for _, n := range []int{2, 16, 128} {
			b.Run(fmt.Sprintf("%s/%d", tg.Name, n), func(b *testing.B) {
				tg.Require(b)
				benchHandoff(b, tg, n)
			})
		}
	}
}

func benchHandoff(b *testing.B, tg *coordtest.Target, n int) {
	p := testPath(b)
	sessions := make([]*Session, n)
	var dials sync.WaitGroup
	for i := range n {
		dials.Add(1)
		go func() {
			defer dials.Done()
			sessions[i] = dial(b, tg.Addr, Options{Logger: slog.New(slog.DiscardHandler)})
		}()
	}
	dials.Wait()
	if b.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	events := func() (wakeups, all int64) {
		for _, s := range sessions {
			wakeups += s.waiterWakeups.Load()
			all += s.nodeEvents.Load()
		}
		return wakeups, all
	}
	w0, a0 := events()
	var tickets, releases atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := NewMutex(s, p)
			for tickets.Add(1) <= int64(b.N) {
				if err := m.Lock(ctx); err != nil {
					b.Error(err)
					return
				}
				if err := m.Unlock(); err != nil {
					b.Error(err)
					return
				}
				releases.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	w1, a1 := events()
	r := float64(releases.Load())
	b.ReportMetric(r/elapsed.Seconds(), "handoffs/s")
	b.ReportMetric(float64(w1-w0)/r, "wakeups/release")
	b.ReportMetric(float64(a1-a0)/r, "events/release")
}

// BenchmarkMutexTakeover measures how long a waiter takes to get a Mutex
// after its holder, another process, is killed with SIGKILL: the server
// must expire the dead holder's session (faultTimeout), then notify the
// waiter. It reports the mean takeover and its excess over the session
// timeout, on each target server — the figure the kill tests only log.
//
//	SHEPHERD_IT=1 go test -run '^$' -bench BenchmarkMutexTakeover -benchtime 5x ./coord/recipe/
func BenchmarkMutexTakeover(b *testing.B) {
	for _, tg := range targets {
		b.Run(tg.Name, func(b *testing.B) {
			tg.Require(b)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			s := dial(b, tg.Addr, Options{Logger: slog.New(slog.DiscardHandler)})
			var total time.Duration
			for range b.N {
				p := testPath(b)
				cmd, l := startProcess(b, "mutex", tg.Addr, p, "")
				if l == "" {
					b.Fatalf("holder process said nothing")
				}
				m := NewMutex(s, p)
				done := lockAsync(ctx, m)
				waitChildren(b, s, p, 2)
				killed := time.Now()
				if err := cmd.Process.Kill(); err != nil {
					b.Fatal(err)
				}
				if err := recv(b, done, "Lock after the holder was killed"); err != nil {
					b.Fatal(err)
				}
				total += time.Since(killed)
				if err := m.Unlock(); err != nil {
					b.Fatal(err)
				}
			}
			mean := total / time.Duration(b.N)
			b.ReportMetric(float64(mean.Milliseconds()), "takeover-ms")
			b.ReportMetric(float64((mean - faultTimeout).Milliseconds()), "over-timeout-ms")
		})
	}
}
