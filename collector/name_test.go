package collector

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDuplicateNameDetected starts two collectors with one name: the one
// that finds its status written by the other must stop with ErrNameInUse
// rather than both writing the same sources.
func TestDuplicateNameDetected(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		w := startWorkload(t, 2, 200, 10*time.Millisecond)
		s := dial(t, tg.addr)
		addSources(t, s, w.uris)
		errs := make(chan error, 2)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for i := 0; i < 2; i++ {
			cfg := testAgentConfig("twin", t.TempDir(), Local, testLogger())
			cfg.Assign = i == 0
			go func() { errs <- runAgent(ctx, tg.addr, cfg) }()
		}
		select {
		case err := <-errs:
			if !errors.Is(err, ErrNameInUse) {
				t.Fatalf("a twin stopped with %v, want ErrNameInUse", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("two collectors named twin ran side by side for 30s")
		}
		cancel()
		if err := <-errs; err != nil && !errors.Is(err, ErrNameInUse) {
			t.Fatalf("the other twin: %v", err)
		}
	})
}
