package coordtest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// WaitFor polls cond until it returns nil, failing the test with what and
// cond's last error if d passes first (NATS's checkFor). d is a liveness
// bound, never a timing assertion. The first polls are 10ms apart, then
// the gap doubles up to 50ms, so that a long wait on a costly condition
// (reading every output file) does not starve the processes under test.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	gap := 10 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %v: %v", what, d, err)
		}
		time.Sleep(gap)
		gap = min(2*gap, 50*time.Millisecond)
	}
}

// Context returns a context that ends with the test or after d.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Logger sends slog output at info and above to t.Log, so that logs show
// only for a failing test, next to its failure. Lines logged after the
// test ended (a goroutine still stopping) are dropped, not a panic.
func Logger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = true
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}
