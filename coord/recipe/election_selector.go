package recipe

import (
	"context"
	"errors"
)

// RunSelector takes part in the election at path as candidate id, and
// each time it leads calls lead — Curator's LeaderSelector with
// autoRequeue. It returns when ctx ends (with ctx's error) or the Session
// closes (ErrClosed).
//
// lead's context is cancelled when leadership is interrupted, with a
// cause (context.Cause) saying why:
//
//   - ErrLeaderSuspended: the connection was lost. lead must stop acting
//     as the leader and return. If the session comes back and the
//     candidate is still the leader, lead is called again, in the same
//     term (same Token); otherwise the candidate queues again.
//   - ErrLeadershipLost: the session was lost or the leader's node
//     deleted. lead must return; the candidate queues again.
//
// When lead returns by itself — done, or failed with an error, which is
// logged — the candidate relinquishes leadership (its node is deleted, so
// the next candidate leads) and queues again at the back; after an error
// it first waits a backoff that grows with consecutive failures. lead
// must return promptly once its context is cancelled: until it does, the
// candidate keeps its node and no one else can lead.
//
// The Election passed to lead is the candidate's: lead may read its Token
// and Node for fencing.
func RunSelector(ctx context.Context, s *Session, path, id string, lead func(ctx context.Context, e *Election) error, opts ...ElectionOption) error {
	e := NewElection(s, path, id, opts...)
	defer func() {
		if err := e.Resign(); err != nil {
			s.log.Warn("selector: resign", "path", path, "err", err)
		}
	}()
	failures := 0
	for {
		if err := e.Campaign(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, ErrClosed) {
				return ErrClosed
			}
			// Campaign retries connection trouble itself; anything else
			// (no permission on path, say) may be fixed by an operator.
			failures++
			s.log.Warn("selector: campaign failed", "path", path, "id", id, "err", err)
			if err := s.pause(ctx, s.opts.Retry.delay(failures)); err != nil {
				return err
			}
			continue
		}
		err := e.serve(ctx, lead)
		if rerr := e.Resign(); rerr != nil {
			s.log.Warn("selector: relinquish", "path", path, "err", rerr)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			failures = 0
			continue
		}
		failures++
		s.log.Warn("selector: leader function failed", "path", path, "id", id, "err", err)
		if err := s.pause(ctx, s.opts.Retry.delay(failures)); err != nil {
			return err
		}
	}
}

// serve calls lead while the current term leads, again after each
// suspension the term survives. It returns lead's error when lead returned
// by itself, nil when the term was lost or ctx ended.
func (e *Election) serve(ctx context.Context, lead func(context.Context, *Election) error) error {
	for {
		t := e.current()
		if t == nil {
			return nil
		}
		if err := t.awaitLeading(ctx); err != nil {
			return nil
		}
		lctx, cancel := context.WithCancelCause(ctx)
		stop := make(chan struct{})
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			t.interrupt(lctx, cancel, stop)
		}()
		err := lead(lctx, e)
		close(stop)
		<-stopped
		cause := context.Cause(lctx)
		cancel(nil)
		switch {
		case ctx.Err() != nil, errors.Is(cause, ErrLeadershipLost):
			return nil
		case errors.Is(cause, ErrLeaderSuspended):
			continue // lead again if the term survives
		}
		return err
	}
}

// interrupt cancels a leader's context, with the reason as its cause,
// when the term stops leading; it returns then, or when stop is closed.
func (t *term) interrupt(ctx context.Context, cancel context.CancelCauseFunc, stop <-chan struct{}) {
	for {
		leading, changed := t.status()
		switch {
		case t.isLost():
			cancel(ErrLeadershipLost)
			return
		case !leading:
			cancel(ErrLeaderSuspended)
			return
		}
		select {
		case <-changed:
		case <-t.lost:
		case <-stop:
			return
		case <-ctx.Done():
			return
		}
	}
}
