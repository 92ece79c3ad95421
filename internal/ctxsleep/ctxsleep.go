// Package ctxsleep is the one sleep Shepherd's loops use between
// attempts: it ends early when the context does, so that a stopping
// process never waits out a backoff. It only waits; it must never decide
// how long (each caller owns its backoff policy).
package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d, or returns ctx's error as soon as ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
