package recipe

import (
	"context"
	"errors"
)

// TryCampaign is a Campaign that does not wait: it enters the election,
// and if another candidate is ahead it withdraws at once (deleting its
// node) and returns false — the cold-standby scan of the source
// documents, where a process takes a task only when nobody runs it. It
// returns true if this candidate leads, at once if it led already. ctx
// bounds the round trips.
func (e *Election) TryCampaign(ctx context.Context) (bool, error) {
	cctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	leave, err := e.enter(ctx, stop, false)
	if err != nil {
		return false, e.campaignError(cctx, err)
	}
	defer leave()
	if t := e.current(); t != nil {
		return t.leading(), nil
	}
	ok, err := e.m.TryLock(cctx)
	if err != nil {
		return false, e.campaignError(cctx, err)
	}
	if !ok {
		return false, nil
	}
	t, err := e.startTerm(cctx)
	if err != nil {
		_ = e.m.Unlock()
		if errors.Is(err, errTermLost) {
			return false, nil
		}
		return false, e.campaignError(cctx, err)
	}
	e.mu.Lock()
	e.term = t
	e.mu.Unlock()
	e.s.log.Info("elected leader", "path", e.path, "id", e.id, "node", t.node, "token", t.token)
	if err := t.awaitLeading(cctx); err != nil {
		if rerr := e.endTerm(); rerr != nil {
			e.s.log.Warn("withdrawing from the election", "path", e.path, "err", rerr)
		}
		if errors.Is(err, errTermLost) {
			return false, nil
		}
		return false, e.campaignError(cctx, err)
	}
	return true, nil
}

// Serve calls lead while this candidate leads — what RunSelector does for
// one term, for callers that campaign themselves (Campaign, TryCampaign)
// and decide themselves what follows the term. lead's context is
// cancelled as RunSelector's is: with cause ErrLeaderSuspended when the
// connection is lost, after which lead is called again if the term
// survives, and ErrLeadershipLost when the term is lost.
//
// Serve returns lead's error when lead returns by itself, and nil when
// the term is lost, ctx ends or this candidate does not lead (check Lost
// to tell these apart). It does not resign: call Resign to hand over.
func (e *Election) Serve(ctx context.Context, lead func(ctx context.Context, e *Election) error) error {
	return e.serve(ctx, lead)
}
