package recipe

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
)

// RetryPolicy is an exponential backoff for operations that failed because
// the connection failed, not because of what they asked. The zero value
// means DefaultRetryPolicy.
type RetryPolicy struct {
	// BaseDelay is the sleep after the first failure; each further failure
	// doubles it, up to MaxDelay. Every sleep is jittered down by up to half,
	// so that clients cut off together do not come back together.
	BaseDelay time.Duration
	// MaxDelay caps one sleep.
	MaxDelay time.Duration
	// MaxElapsed is how long Retry keeps trying before it returns the last
	// error; zero means until the context ends.
	MaxElapsed time.Duration
}

// DefaultRetryPolicy retries for up to a minute, starting at 50ms and
// backing off to 2s between attempts: long enough to ride out a
// coordination server restart.
var DefaultRetryPolicy = RetryPolicy{
	BaseDelay:  50 * time.Millisecond,
	MaxDelay:   2 * time.Second,
	MaxElapsed: time.Minute,
}

func (p RetryPolicy) orDefault() RetryPolicy {
	if p == (RetryPolicy{}) {
		return DefaultRetryPolicy
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultRetryPolicy.BaseDelay
	}
	if p.MaxDelay < p.BaseDelay {
		p.MaxDelay = p.BaseDelay
	}
	return p
}

// delay is the jittered sleep before attempt n+1, n ≥ 1 failures so far.
func (p RetryPolicy) delay(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	return d/2 + rand.N(d/2+1)
}

// IsRetryable reports whether err means the outcome of an operation is
// unknown or it never reached the server, so that trying again (on the same
// or a new session) is the right thing to do: connection loss, no server
// reachable, session moved, session expired (the client opens a new
// session). Answers about the data — no node, node exists, bad version, not
// empty, no auth — are never retryable: asking again gets the same answer.
//
// A retried create may have succeeded the first time; use CreateProtected
// for creates whose success must not be repeated.
func IsRetryable(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, zk.ErrConnectionClosed),
		errors.Is(err, zk.ErrNoServer),
		errors.Is(err, zk.ErrSessionMoved),
		errors.Is(err, zk.ErrSessionExpired),
		// The client is replacing a connection whose session the Session
		// declared lost: the operation was cut off, not refused.
		errors.Is(err, zk.ErrClosing):
		return true
	}
	// go-zookeeper hands a request the raw error of a failed socket write
	// (broken pipe, reset, write deadline) instead of ErrConnectionClosed:
	// the connection is gone and the request may or may not have reached
	// the server, which is connection loss by another name.
	var opErr *net.OpError
	return errors.As(err, &opErr)
}

// Retry calls fn until it succeeds, fails with an error that is not
// retryable (IsRetryable), the policy's MaxElapsed passes, ctx ends or the
// session is closed. It returns fn's last error, or the context's or
// ErrClosed when those stopped it.
func (s *Session) Retry(ctx context.Context, fn func() error) error {
	return retry(ctx, s, s.opts.Retry, fn)
}

func retry(ctx context.Context, s *Session, p RetryPolicy, fn func() error) error {
	start := time.Now()
	for n := 1; ; n++ {
		err := fn()
		if err == nil || !IsRetryable(err) {
			return err
		}
		if s.isClosed() {
			return ErrClosed
		}
		d := p.delay(n)
		if p.MaxElapsed > 0 && time.Since(start)+d > p.MaxElapsed {
			return fmt.Errorf("recipe: gave up after %d attempts in %v: %w", n, time.Since(start).Round(time.Millisecond), err)
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-s.done:
			t.Stop()
			return ErrClosed
		}
	}
}
