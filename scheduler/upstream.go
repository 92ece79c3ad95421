package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// upstreamRecheck is how often a waiting master reads the upstream
// results even without a watch event. Watches are what wakes it; this
// only bounds the cost of one that a server restart lost.
const upstreamRecheck = time.Minute

// upstreamVerdict is what a waiting master does next (decideUpstream).
type upstreamVerdict int

const (
	upstreamWait  upstreamVerdict = iota // an upstream run that matters has no result yet
	upstreamRun                          // the condition holds: run
	upstreamBlock                        // the condition cannot hold: record the run Blocked
)

// decideUpstream is the decision part of awaitUpstream: given the
// results found so far of the upstream runs (by job; missing: no result
// yet), whether the run waits, runs or is blocked, and why, in words.
// With whenUpstream succeeded a run is blocked as soon as one upstream
// run ended otherwise; with failed and any it decides once all ended.
func decideUpstream(p *plan, got map[string]Result) (upstreamVerdict, string) {
	var waiting, notOK []string
	for _, u := range p.upstreamJobs() {
		r, ok := got[u]
		switch {
		case !ok:
			waiting = append(waiting, u)
		case r.Status != Succeeded:
			notOK = append(notOK, fmt.Sprintf("%s %s", u, r.Status))
		}
	}
	switch p.WhenUpstream {
	case UpstreamFailed:
		switch {
		case len(waiting) > 0:
			return upstreamWait, ""
		case len(notOK) == 0:
			return upstreamBlock, "every upstream run succeeded, and whenUpstream is failed"
		}
	case UpstreamAny:
		if len(waiting) > 0 {
			return upstreamWait, ""
		}
	default:
		switch {
		case len(notOK) > 0:
			return upstreamBlock, "upstream run did not succeed: " + strings.Join(notOK, ", ")
		case len(waiting) > 0:
			return upstreamWait, ""
		}
	}
	return upstreamRun, ""
}

// upstreamStatus is the status of each upstream result, for Result.Upstream.
func upstreamStatus(up map[string]Result) map[string]Status {
	if len(up) == 0 {
		return nil
	}
	out := make(map[string]Status, len(up))
	for j, r := range up {
		out[j] = r.Status
	}
	return out
}

// awaitUpstream is the wait of the master of a run of a job with After,
// before its first attempt: until the upstream runs of the same key
// have results that decide it (decideUpstream). It returns their
// results for a run to go ahead; else done, the run having been
// published Blocked, or Missed when its starting deadline (lateLimit,
// from the scheduled time) passed first. While it waits the run has an
// ephemeral waiting node (RunInfo.Waiting) saying for which jobs.
func (sc *Scheduler) awaitUpstream(ctx context.Context, req runReq, base Result, aver int32) (map[string]Result, Result, bool, error) {
	p, key := req.p, req.key
	if !req.waits() {
		return nil, Result{}, false, nil
	}
	until := req.scheduled.Add(p.lateLimit())
	var shown []string // the jobs the waiting node names
	defer func() {
		if shown != nil {
			sc.hideWaiting(context.WithoutCancel(ctx), p.Name, key)
		}
	}()
	marks := map[string]string{} // the goal of each freshness gate, once chosen
	var shownGates []GateWait
	for {
		wctx, cancel := context.WithCancel(ctx)
		wake := make(chan struct{}, 1)
		got, err := sc.readUpstream(wctx, p, key, wake)
		if err != nil {
			cancel()
			return nil, Result{}, false, err
		}
		gates, err := sc.readGates(wctx, p, req.gateBase(), marks, wake)
		if err != nil {
			cancel()
			return nil, Result{}, false, err
		}
		verdict, why := decideUpstream(p, got)
		base.Upstream = upstreamStatus(got)
		base.Gates = gates
		var missing []string
		for _, u := range p.upstreamJobs() {
			if _, ok := got[u]; !ok {
				missing = append(missing, u)
			}
		}
		open, closed := gatesOpen(gates)
		now := sc.now()
		switch {
		case verdict == upstreamRun && open:
			cancel()
			if len(gates) > 0 {
				sc.log.Info("freshness gates reached", "job", p.Name, "run", key, "gates", gatesText(gates))
			}
			return got, base, false, nil
		case verdict == upstreamBlock:
			cancel()
			base.Status, base.Error = Blocked, why
			sc.log.Info("run blocked by its upstream runs", "job", p.Name, "run", key, "why", why)
			r, err := sc.publish(ctx, p, runUnit(p.Name, key), base, aver)
			return nil, r, true, err
		case !now.Before(until):
			cancel()
			base.Status = Missed
			var what []string
			if len(missing) > 0 {
				what = append(what, "waited for the upstream runs of "+strings.Join(missing, ", ")+": not ended")
			}
			if !open {
				what = append(what, "waited for "+gatesText(gates))
			}
			base.Error = fmt.Sprintf("%s within %v of its scheduled time (startingDeadline)", strings.Join(what, "; "), p.lateLimit())
			sc.log.Info("run missed waiting for its upstream", "job", p.Name, "run", key, "waiting_for", missing, "gates", closed)
			r, err := sc.publish(ctx, p, runUnit(p.Name, key), base, aver)
			return nil, r, true, err
		}
		if shown == nil || !slices.Equal(missing, shown) || !slices.Equal(gates, shownGates) {
			sc.log.Info("waiting for upstream", "job", p.Name, "run", key, "waiting_for", missing, "gates", gatesText(gates), "until", until)
			sc.showWaiting(ctx, p.Name, key, Waiting{Version: 1, Upstream: missing, Gates: gates, Since: now, Until: until, Host: sc.host})
			shown, shownGates = append([]string{}, missing...), gates
		}
		t := time.NewTimer(min(until.Sub(now), upstreamRecheck))
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		cancel()
		if ctx.Err() != nil {
			return nil, Result{}, false, ctx.Err()
		}
	}
}

// readUpstream reads the results of the upstream runs of key that exist
// and leaves a watch on each of the others, which wakes the returned
// channel when one is created (until ctx ends).
func (sc *Scheduler) readUpstream(ctx context.Context, p *plan, key string, wake chan<- struct{}) (map[string]Result, error) {
	s := sc.sess
	got := map[string]Result{}
	for _, u := range p.upstreamJobs() {
		r, ok, err := readResult(ctx, s, u, key)
		if err != nil {
			return nil, err
		}
		if !ok {
			var ch <-chan zk.Event
			ok, _, ch, err = s.Retrying().ExistsW(ctx, ResultPath(u, key))
			if err != nil {
				return nil, err
			}
			if !ok {
				go forwardWake(ctx, ch, wake)
				continue
			}
			// Created between the two reads.
			if r, ok, err = readResult(ctx, s, u, key); err != nil {
				return nil, err
			}
		}
		if ok {
			got[u] = r
		}
	}
	return got, nil
}

// upstreamResults reads the upstream results of a run taken over, whose
// first master waited for them: those still there (history limits may
// have removed some).
func (sc *Scheduler) upstreamResults(ctx context.Context, p *plan, key string) (map[string]Result, error) {
	got := map[string]Result{}
	for _, u := range p.upstreamJobs() {
		r, ok, err := readResult(ctx, sc.sess, u, key)
		if err != nil {
			return nil, err
		}
		if ok {
			got[u] = r
		}
	}
	return got, nil
}

// showWaiting writes the run's waiting node (EPHEMERAL: it goes with
// this master). It only informs readers: a failure is logged.
func (sc *Scheduler) showWaiting(ctx context.Context, job, key string, w Waiting) {
	s := sc.sess
	data, _ := json.Marshal(w)
	err := s.Retry(ctx, func() error {
		_, err := s.Create(ctx, waitingPath(job, key), data, zk.FlagEphemeral, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = s.Set(ctx, waitingPath(job, key), data, -1)
		}
		return err
	})
	if err != nil && ctx.Err() == nil {
		sc.log.Warn("cannot show that the run is waiting (ctl job show will not say so)", "job", job, "run", key, "err", err)
	}
}

// hideWaiting deletes the run's waiting node.
func (sc *Scheduler) hideWaiting(ctx context.Context, job, key string) {
	s := sc.sess
	ctx, cancel := context.WithTimeout(ctx, leaveTimeout)
	defer cancel()
	err := s.Retry(ctx, func() error {
		err := s.Delete(ctx, waitingPath(job, key), -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	if err != nil {
		sc.log.Debug("cannot delete the waiting node; it goes with the session", "job", job, "run", key, "err", err)
	}
}
