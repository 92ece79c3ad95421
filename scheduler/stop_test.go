package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// countdownCtx cancels itself at its own n-th Done or Err call: a stop
// that lands at a chosen step of whatever uses it, without timing.
// Contexts derived from it are cancelled with it.
type countdownCtx struct {
	context.Context
	cancel context.CancelFunc
	left   atomic.Int64
}

func newCountdownCtx(n int64) *countdownCtx {
	ctx, cancel := context.WithCancel(context.Background())
	c := &countdownCtx{Context: ctx, cancel: cancel}
	c.left.Store(n)
	return c
}

func (c *countdownCtx) tick() {
	if c.left.Add(-1) == 0 {
		c.cancel()
	}
}

func (c *countdownCtx) Done() <-chan struct{} { c.tick(); return c.Context.Done() }
func (c *countdownCtx) Err() error            { c.tick(); return c.Context.Err() }

// TestRunStopsCleanlyAtAnyPoint: a Run whose context ends at any point
// of its start-up (creating its paths, publishing its file jobs, the
// first read of the stored jobs, the first job loops) or later returns
// nil, promptly (issue 10: "scheduler: create /scheduler/jobs: …:
// context canceled").
func TestRunStopsCleanlyAtAnyPoint(t *testing.T) {
	jobs, err := ParseJobs([]byte("jobs:\n- {name: j, schedule: '@yearly', command: 'true'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	onEachTarget(t, func(t *testing.T, connect string) {
		s := dial(t, connect)
		var points []int64
		for n := int64(1); n <= 60; n++ {
			points = append(points, n)
		}
		points = append(points, 80, 120, 200, 400)
		for _, n := range points {
			sc, err := New(s, Options{Jobs: jobs, Host: "stop", LogDir: t.TempDir(), Logger: coordtest.Logger(t), Resync: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx := newCountdownCtx(n)
			done := make(chan error, 1)
			go func() { done <- sc.Run(ctx) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run stopped at its context's check %d: %v, want nil", n, err)
				}
			case <-time.After(30 * time.Second): // liveness bound only
				ctx.cancel()
				t.Fatalf("Run whose context ends at check %d has not returned after 30s", n)
			}
		}
	})
}
