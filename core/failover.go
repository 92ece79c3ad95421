package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Source failover: a RUNNING task leaves the source candidate it reads
// (Spec.ActiveSource) for another one when the operator asks
// (Admin.SwitchSource), when the source has been unreachable for
// FailoverAfter, or when it turned read-only while another candidate is
// writable — a primary demoted and a replica promoted. The switch only
// changes which server the next Run reads; whether that server may
// continue from the target's checkpoint is the replicator's resume rule
// (by GTID, only if the server holds every transaction the checkpoint
// applied), so a switch never replays or skips a transaction: it resumes
// exactly, or the task goes FAILED naming both servers.

// sourceSwitch ends a run that must read from another candidate.
type sourceSwitch struct {
	SourceSwitch
	request *zk.Stat // the switchSource request served, if asked for
}

func (s *sourceSwitch) Error() string {
	return fmt.Sprintf("core: switching source from %s to %s: %s", s.From, s.To, s.Reason)
}

// SwitchRequest is the data of a task's switchSource node.
type SwitchRequest struct {
	To   string    `json:"to"`
	By   string    `json:"by,omitempty"`
	Time time.Time `json:"time"`
}

// probeEvery is how often a run with candidates probes its source: a
// few probes fit in FailoverAfter, and no more than one every 5 s.
func probeEvery(failoverAfter time.Duration) time.Duration {
	return max(min(failoverAfter/4, 5*time.Second), 100*time.Millisecond)
}

// TakeoverProblem says why the source server h cannot take over a task
// whose target has applied everything up to cp, "" if it can
// (replication's SourceHealth.TakeoverProblem, the rule Run applies).
// Core's automatic failover and the monitor's SourceFailoverUnsafe rule
// both ask this. followed is the target checkpoint's history
// (Checkpoint.Followed), "" when unknown.
func TakeoverProblem(h SourceHealth, flavor string, cp Position, followed string) string {
	if err := h.TakeoverProblem(flavor, cp, followed); err != nil {
		return err.Error()
	}
	return ""
}

// decideSwitch is the automatic failover rule, given the probe of the
// active source, how long it has been unreachable, the probes of the
// other candidates in order of preference, and the task's checkpoint:
// leave a source unreachable for failoverAfter for the first candidate
// that can take over (writable ones first); leave a read-only source for
// the first writable candidate that can. It returns the candidate and
// why, or "" to stay (reason then says why no candidate would do, if
// one was needed).
func decideSwitch(active SourceHealth, downFor, failoverAfter time.Duration, others []SourceHealth, flavor string, cp Checkpoint) (to, reason string) {
	var problems []string
	pick := func(ok func(SourceHealth) bool) string {
		problems = problems[:0]
		for _, h := range others {
			if p := TakeoverProblem(h, flavor, cp.Position, cp.Followed); p != "" {
				problems = append(problems, p)
			} else if ok(h) {
				return h.Addr
			}
		}
		return ""
	}
	switch {
	case !active.Reachable() && downFor >= failoverAfter:
		if to = pick(SourceHealth.Writable); to == "" {
			to = pick(SourceHealth.Reachable)
		}
		reason = fmt.Sprintf("source %s unreachable for %v (%v)", active.Addr, downFor.Round(time.Millisecond), active.Err)
	case active.Reachable() && active.ReadOnly:
		to = pick(SourceHealth.Writable)
		reason = fmt.Sprintf("source %s is read-only and %s is writable", active.Addr, to)
	default:
		return "", ""
	}
	if to == "" {
		reason += "; no candidate can take over: " + strings.Join(problems, "; ")
	}
	return to, reason
}

// watchSource probes the run's source, active, until ctx ends, and ends
// the run (cancel with a *sourceSwitch) when it must read from another
// candidate: on an operator's request, or by decideSwitch. The probes of
// the other candidates are made only when the source is down or
// read-only.
func (tm *term) watchSource(ctx context.Context, cancel context.CancelCauseFunc, sp *Spec, active Endpoint, rep Replicator) {
	t := tm.t
	failoverAfter := sp.Source.failoverAfter()
	tick := time.NewTicker(probeEvery(failoverAfter))
	defer tick.Stop()
	var downSince, warned time.Time
	warn := func(msg string, args ...any) { // once per failoverAfter
		if time.Since(warned) >= failoverAfter {
			t.log.Warn(msg, args...)
			warned = time.Now()
		}
	}
	for {
		if sw := tm.requestedSwitch(ctx, sp, active); sw != nil {
			cancel(sw)
			return
		}
		if len(sp.Source.Hosts) > 0 {
			h := t.c.cfg.Engine.ProbeSource(ctx, active, t.log)
			if ctx.Err() != nil {
				return
			}
			now := time.Now()
			switch {
			case h.Reachable():
				downSince = time.Time{}
				tm.setStuck("")
			case downSince.IsZero():
				downSince = now
			}
			if !h.Reachable() && now.Sub(downSince) < failoverAfter {
				warn("source unreachable", "source", active.Addr(), "for", now.Sub(downSince).Round(time.Millisecond), "failover_after", failoverAfter, "err", h.Err)
			} else if !h.Reachable() || h.ReadOnly {
				var others []SourceHealth
				for _, e := range sp.Source.Candidates() {
					if e.Addr() != active.Addr() {
						others = append(others, t.c.cfg.Engine.ProbeSource(ctx, e, t.log))
					}
				}
				to, reason := decideSwitch(h, now.Sub(downSince), failoverAfter, others, sp.Source.Flavor, tm.checkpoint(ctx, rep))
				if to != "" {
					cancel(&sourceSwitch{SourceSwitch: SourceSwitch{From: active.Addr(), To: to, Reason: reason}})
					return
				}
				if !h.Reachable() {
					warn("source unreachable; not switching", "reason", reason)
					tm.setStuck(reason)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case _, ok := <-t.switchReq.Changes():
			if !ok {
				return // the core is stopping
			}
		}
	}
}

// checkpoint is what the candidates must hold: the target's checkpoint,
// with the history it followed, or, when the target cannot be read,
// the last position this term knows committed.
func (tm *term) checkpoint(ctx context.Context, rep Replicator) Checkpoint {
	if cp, ok, err := rep.TargetCheckpoint(ctx); err == nil && ok {
		return cp
	}
	return Checkpoint{Position: tm.position()}
}

// setStuck records why the run's source is down with no candidate to
// take over ("" once it is up): the instance state shows it.
func (tm *term) setStuck(why string) {
	tm.mu.Lock()
	tm.stuck = why
	tm.mu.Unlock()
}

// requestedSwitch returns the switch an operator asked for, if one is
// pending and moves the run elsewhere. A request that needs nothing done
// (the run reads there already) or cannot be done (no such candidate, an
// untrusted or unreadable request) is deleted, with a log line saying why.
func (tm *term) requestedSwitch(ctx context.Context, sp *Spec, active Endpoint) *sourceSwitch {
	t := tm.t
	data, st, exists := t.switchReq.Get()
	if !exists {
		return nil
	}
	var req SwitchRequest
	done := func(msg string, args ...any) *sourceSwitch {
		t.log.Warn(msg, args...)
		tm.deleteRequest(ctx, &st)
		return nil
	}
	if err := t.c.checkTrusted(ctx, t.switchReq.Path()); err != nil {
		t.log.Error("ignoring a switchSource request", "err", err)
		return nil // kept for the operator to see and remove
	}
	if err := json.Unmarshal(data, &req); err != nil {
		return done("dropping an unreadable switchSource request", "err", err)
	}
	if _, ok := sp.Source.Candidate(req.To); !ok {
		return done("dropping a switchSource request: not a source candidate of the task", "to", req.To)
	}
	if req.To == active.Addr() {
		tm.deleteRequest(ctx, &st)
		return nil
	}
	reason := "asked for"
	if req.By != "" {
		reason += " by " + req.By
	}
	return &sourceSwitch{SourceSwitch: SourceSwitch{From: active.Addr(), To: req.To, Reason: reason}, request: &st}
}

// deleteRequest deletes the switchSource request of version st, served;
// one written since is a new request and stays.
func (tm *term) deleteRequest(ctx context.Context, st *zk.Stat) {
	err := tm.t.c.s.Delete(ctx, tm.t.switchReq.Path(), st.Version)
	if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
		tm.t.log.Warn("switchSource request not deleted; it is served again", "err", err)
	}
}

// switchSource makes the term read from sw.To from its next run, and
// records it in lastCommit before that run starts: a core that takes the
// task over reads the same server.
func (tm *term) switchSource(ctx context.Context, sw *sourceSwitch) error {
	sw.Owner, sw.Time = tm.owner, time.Now().UTC()
	tm.mu.Lock()
	tm.source, tm.lastSwitch, tm.stuck = sw.To, &sw.SourceSwitch, ""
	tm.mu.Unlock()
	tm.t.log.Warn("switching source", "from", sw.From, "to", sw.To, "reason", sw.Reason)
	tm.t.c.metrics.sourceSwitches.WithLabelValues(tm.t.name).Inc()
	if err := tm.flush(ctx); err != nil {
		return fmt.Errorf("record the switch to %s in lastCommit: %w", sw.To, err)
	}
	if sw.request != nil {
		tm.deleteRequest(ctx, sw.request)
	}
	return nil
}
