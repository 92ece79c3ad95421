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

// Retrying is s with every read retried as Retry does: one call where a
// closure around the read would be, for the many places that read a node
// and must ride out a connection loss.
func (s *Session) Retrying() Retrying { return Retrying{s} }

// Retrying is the view of a Session that Session.Retrying returns. Its
// reads are the Session's, under Session.Retry.
type Retrying struct{ s *Session }

// Get is Session.Get under Retry.
func (r Retrying) Get(ctx context.Context, path string) (data []byte, st *zk.Stat, err error) {
	err = r.s.Retry(ctx, func() (err error) { data, st, err = r.s.Get(ctx, path); return err })
	return data, st, err
}

// GetW is Session.GetW under Retry.
func (r Retrying) GetW(ctx context.Context, path string) (data []byte, st *zk.Stat, ch <-chan zk.Event, err error) {
	err = r.s.Retry(ctx, func() (err error) { data, st, ch, err = r.s.GetW(ctx, path); return err })
	return data, st, ch, err
}

// Exists is Session.Exists under Retry.
func (r Retrying) Exists(ctx context.Context, path string) (ok bool, st *zk.Stat, err error) {
	err = r.s.Retry(ctx, func() (err error) { ok, st, err = r.s.Exists(ctx, path); return err })
	return ok, st, err
}

// ExistsW is Session.ExistsW under Retry.
func (r Retrying) ExistsW(ctx context.Context, path string) (ok bool, st *zk.Stat, ch <-chan zk.Event, err error) {
	err = r.s.Retry(ctx, func() (err error) { ok, st, ch, err = r.s.ExistsW(ctx, path); return err })
	return ok, st, ch, err
}

// Children is Session.Children under Retry.
func (r Retrying) Children(ctx context.Context, path string) (names []string, st *zk.Stat, err error) {
	err = r.s.Retry(ctx, func() (err error) { names, st, err = r.s.Children(ctx, path); return err })
	return names, st, err
}

// ChildrenW is Session.ChildrenW under Retry.
func (r Retrying) ChildrenW(ctx context.Context, path string) (names []string, st *zk.Stat, ch <-chan zk.Event, err error) {
	err = r.s.Retry(ctx, func() (err error) { names, st, ch, err = r.s.ChildrenW(ctx, path); return err })
	return names, st, ch, err
}

// GetACL is Session.GetACL under Retry.
func (r Retrying) GetACL(ctx context.Context, path string) (acl []zk.ACL, st *zk.Stat, err error) {
	err = r.s.Retry(ctx, func() (err error) { acl, st, err = r.s.GetACL(ctx, path); return err })
	return acl, st, err
}
