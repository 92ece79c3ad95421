package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/ctxsleep"
)

// replaceWait bounds how long a replace-policy run waits for the run it
// stopped to publish its result before starting anyway.
const replaceWait = 30 * time.Second

// runReq is a run to settle: the job, the run key, its scheduled time
// and how it was asked for.
type runReq struct {
	p         *plan
	key       string
	scheduled time.Time
	// missedOnly records the run as missed, if nobody has settled it
	// yet, instead of running it.
	missedOnly bool
	// manual: asked for by a trigger (run-now), so never late.
	manual bool
	// params are the run's parameters (run-now --param).
	params map[string]string
}

// waits reports whether the run waits for upstream runs: a run of a job
// with After, unless it is a manual run of a key of its own
// (manual-…), which no upstream job has.
func (r runReq) waits() bool {
	return len(r.p.After) > 0 && !strings.HasPrefix(r.key, ManualPrefix)
}

// settle runs one run to its end on this scheduler: it either wins the
// election and executes the run, or watches the master until the run has
// a result — electing again when the master dies first. It returns the
// result, which every scheduler thus learns. For a sharded job it works
// on the run's items meanwhile (work).
func (sc *Scheduler) settle(ctx context.Context, req runReq) (Result, error) {
	s, p, key, scheduled := sc.sess, req.p, req.key, req.scheduled
	u := runUnit(p.Name, key)
	if err := s.Retry(ctx, func() error { return s.EnsurePath(ctx, RunPath(p.Name, key)) }); err != nil {
		return Result{}, fmt.Errorf("scheduler: job %s run %s: %w", p.Name, key, err)
	}
	if p.Shards > 1 {
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc.work(wctx, req)
		}()
		defer func() { cancel(); <-done }()
	}
	var me string // this scheduler among the run's workers (routing spread)
	defer func() {
		if me != "" {
			sc.leaveWorkers(context.WithoutCancel(ctx), p.Name, key, me)
		}
	}()
	for {
		if r, ok, err := readResult(ctx, s, p.Name, key); err != nil || ok {
			return r, err
		}
		if p.Routing == RouteSpread {
			if err := sc.awaitTurn(ctx, req, &me); err != nil {
				return Result{}, err
			}
		}
		won, err := sc.elect(ctx, u, scheduled)
		if err != nil {
			return Result{}, err
		}
		if won {
			r, err := sc.master(ctx, req)
			if err != nil && !errors.Is(err, ErrNotMaster) && ctx.Err() == nil {
				// The server kept failing us: let another scheduler try
				// rather than hold the run until this session ends.
				sc.resign(ctx, u)
			}
			if err == nil || !errors.Is(err, ErrNotMaster) {
				return r, err
			}
			sc.log.Warn("lost the run while master; another scheduler takes over", "job", p.Name, "run", key, "err", err)
			// Wait for a new session before standing again.
			if err := sc.awaitConnected(ctx); err != nil {
				return Result{}, err
			}
			continue
		}
		if err := sc.watchMaster(ctx, u); err != nil {
			return Result{}, err
		}
	}
}

// elect tries to create the unit's binding. A create whose reply was lost
// may have succeeded: a binding owned by our session is ours.
func (sc *Scheduler) elect(ctx context.Context, u unit, scheduled time.Time) (bool, error) {
	s := sc.sess
	data, _ := json.Marshal(binding{Version: 1, Host: sc.host, PID: sc.pid, Scheduled: scheduled})
	err := s.Retry(ctx, func() error {
		_, err := s.Create(ctx, u.bindingPath(), data, zk.FlagEphemeral, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			_, st, gerr := s.Get(ctx, u.bindingPath())
			switch {
			case errors.Is(gerr, zk.ErrNoNode):
				return errRetryElect
			case gerr != nil:
				return gerr
			case st.EphemeralOwner == s.ID():
				return nil
			}
		}
		return err
	})
	switch {
	case err == nil:
		sc.metrics.elections.WithLabelValues(u.job, "won").Inc()
		return true, nil
	case errors.Is(err, zk.ErrNodeExists), errors.Is(err, errRetryElect):
		sc.metrics.elections.WithLabelValues(u.job, "lost").Inc()
		return false, nil
	}
	return false, fmt.Errorf("scheduler: %s: elect: %w", u, err)
}

var errRetryElect = errors.New("binding vanished")

// binding is the data of a run's binding: who is master, and of which
// scheduled time (concurrency policies compare runs by it).
type binding struct {
	Version   int       `json:"version"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Scheduled time.Time `json:"scheduled"`
}

// watchMaster waits until the unit's binding is gone (its master
// finished or died) or its result exists.
func (sc *Scheduler) watchMaster(ctx context.Context, u unit) error {
	s := sc.sess
	for {
		var rch <-chan zk.Event
		ok, _, bch, err := s.Retrying().ExistsW(ctx, u.bindingPath())
		if err != nil {
			return fmt.Errorf("scheduler: %s: watch master: %w", u, err)
		}
		if !ok {
			return nil
		}
		ok, _, rch, err = s.Retrying().ExistsW(ctx, u.resultPath())
		if err != nil {
			return fmt.Errorf("scheduler: %s: watch result: %w", u, err)
		}
		if ok {
			return nil
		}
		select {
		case <-bch:
		case <-rch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// mastership returns a context of the unit's mastership, which ends
// (cause ErrNotMaster) when the session is lost: what it runs belongs
// to this session.
func (sc *Scheduler) mastership(ctx context.Context) (context.Context, context.CancelCauseFunc, func()) {
	runCtx, cancel := context.WithCancelCause(ctx)
	stopListen := sc.sess.Listen(func(st recipe.State) {
		if st == recipe.StateLost || st == recipe.StateClosed {
			cancel(ErrNotMaster)
		}
	})
	return runCtx, cancel, func() { stopListen(); cancel(nil) }
}

// master executes the run as its elected master and publishes the result.
// It returns ErrNotMaster if the session ended before the result was
// published.
func (sc *Scheduler) master(ctx context.Context, req runReq) (Result, error) {
	s, p, key, scheduled := sc.sess, req.p, req.key, req.scheduled
	job := p.Name
	u := runUnit(job, key)
	// A master that lost its session may have published just before its
	// binding went away.
	if r, ok, err := readResult(ctx, s, job, key); err != nil || ok {
		sc.resign(ctx, u)
		return r, err
	}
	runCtx, cancel, end := sc.mastership(ctx)
	defer end()

	a, aver, err := sc.readAttempts(runCtx, u)
	if err != nil {
		return Result{}, sc.masterErr(runCtx, err)
	}
	base := Result{Version: 1, Job: job, RunKey: key, Scheduled: scheduled, Host: sc.host, Attempt: a.Attempts, Params: req.params}
	v := decideStart(p, req.manual, scheduled, sc.now(), req.missedOnly, a)
	if v.takeover {
		sc.metrics.takeovers.WithLabelValues(job).Inc()
	}
	var upstream map[string]Result
	switch {
	case v.status != "":
		base.Status, base.Error = v.status, v.err
		return sc.publish(runCtx, p, u, base, aver)
	case v.policy:
		var r Result
		var done bool
		upstream, r, done, err = sc.awaitUpstream(runCtx, req, base, aver)
		if err != nil || done {
			return r, sc.stopErr(ctx, runCtx, u, err)
		}
		base.Gates = r.Gates
		if r, done, err := sc.applyPolicy(runCtx, p, key, base, aver); done || err != nil {
			return r, err
		}
	case req.waits():
		// Taken over: the first master waited for the upstream runs
		// before its attempt; their results are kept.
		if upstream, err = sc.upstreamResults(runCtx, p, key); err != nil {
			return Result{}, sc.masterErr(runCtx, err)
		}
	}
	base.Upstream = upstreamStatus(upstream)
	if p.Shards > 1 {
		return sc.coordinate(ctx, runCtx, req, base, a, aver)
	}
	stopWatch := sc.watchCancel(runCtx, cancel, job, key)
	defer stopWatch()
	run := Run{Job: job, RunKey: key, Scheduled: scheduled, Upstream: upstream, Params: req.params}
	return sc.runAttempts(ctx, runCtx, p, u, base, run, a, aver)
}

// runAttempts executes the attempts of u, whose master this scheduler
// is, until one ends it — the job's retries, with backoff — and
// publishes its result. a and aver are the attempts read when the
// mastership began.
func (sc *Scheduler) runAttempts(ctx, runCtx context.Context, p *plan, u unit, base Result, run Run, a attempts, aver int32) (Result, error) {
	s := sc.sess
	log := sc.log.With("job", u.job, "run", u.key)
	if u.item >= 0 {
		log = log.With("item", u.item)
	}
	var err error
	for {
		a.Attempts++
		a.Host = sc.host
		if aver, err = sc.writeAttempts(runCtx, u, a, aver); err != nil {
			return Result{}, sc.masterErr(runCtx, err)
		}
		// A master that lost its session just before this one won may have
		// published since the first check.
		if r, ok, err := readUnitResult(runCtx, s, u); err != nil || ok {
			sc.resign(ctx, u)
			return r, sc.masterErr(runCtx, err)
		}
		run.Attempt = a.Attempts
		log.Info("running", "attempt", a.Attempts)
		o := sc.execute(runCtx, p, run, u.logPath(sc.logDir))
		sc.metrics.duration.WithLabelValues(u.job).Observe(o.end.Sub(o.start).Seconds())
		if errors.Is(context.Cause(runCtx), ErrNotMaster) {
			return Result{}, ErrNotMaster
		}
		if ctx.Err() != nil {
			// Shutting down: hand the run to another scheduler (it counts
			// this attempt) rather than record a failure it did not have.
			sc.resign(context.WithoutCancel(ctx), u)
			return Result{}, ctx.Err()
		}
		r := base
		r.Attempt, r.Status, r.ExitCode, r.Start, r.End, r.Output, r.Data = a.Attempts, o.status, o.exitCode, o.start, o.end, o.output, o.data
		r.LogFile = u.logPath(sc.logDir)
		if o.err != nil {
			r.Error = o.err.Error()
		}
		publish, wait := decideAfterAttempt(p, o.status, a.Failures)
		if publish || o.final {
			log.Info("ended", "status", r.Status, "attempt", r.Attempt)
			return sc.publish(runCtx, p, u, r, aver)
		}
		// Recorded now, so that a master taking over during the backoff
		// counts this failure against the retries.
		a.Failures++
		if aver, err = sc.writeAttempts(runCtx, u, a, aver); err != nil {
			return Result{}, sc.masterErr(runCtx, err)
		}
		log.Warn("attempt failed; retrying", "attempt", a.Attempts, "status", o.status, "err", o.err, "backoff", wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-runCtx.Done():
			t.Stop()
			switch {
			case errors.Is(context.Cause(runCtx), ErrNotMaster):
				return Result{}, ErrNotMaster
			case ctx.Err() != nil:
				sc.resign(context.WithoutCancel(ctx), u)
				return Result{}, ctx.Err()
			}
			r.Status, r.Error = Replaced, "stopped by a later run (concurrencyPolicy replace) while waiting to retry"
			return sc.publish(runCtx, p, u, r, aver)
		}
	}
}

// startVerdict is what the master of a run does before its first attempt
// of this mastership (decideStart).
type startVerdict struct {
	// status, when set (Missed, Abandoned), is published at once with err.
	status Status
	err    string
	// policy: the run was never attempted; apply the job's concurrency
	// policy before running it.
	policy bool
	// takeover: an attempt was started and never ended, its master died.
	takeover bool
}

// decideStart is the decision part of master's start: from the attempts
// stored for the run (a), whether it is missed (first attempt later than
// the job allows, or a missed run started only to be recorded), abandoned
// (its masters died MaxTakeovers times past the first), or to be run.
// A manual run (run-now) is never late. It reads nothing and writes
// nothing.
func decideStart(p *plan, manual bool, scheduled, now time.Time, missedOnly bool, a attempts) startVerdict {
	if a.Attempts > 0 {
		if died := a.Attempts - a.Failures; died >= 1+MaxTakeovers {
			return startVerdict{status: Abandoned, err: fmt.Sprintf("its master died %d times", died), takeover: true}
		}
		return startVerdict{takeover: true}
	}
	switch late := now.Sub(scheduled); {
	case missedOnly:
		return startVerdict{status: Missed, err: "missed while no scheduler was up; only the latest missed run is started"}
	case !manual && late > p.lateLimit():
		return startVerdict{status: Missed, err: fmt.Sprintf("not started within %v of its scheduled time (%v late)", p.lateLimit(), late.Round(time.Second))}
	}
	return startVerdict{policy: true}
}

// decideAfterAttempt is the decision part of master's loop: after an
// attempt that ended with status, failures being the attempts that failed
// before it, whether the run ends (publish its result) or is retried
// after backoff, which doubles from the job's retryBackoff.
func decideAfterAttempt(p *plan, status Status, failures int) (publish bool, backoff time.Duration) {
	if status == Succeeded || status == Replaced || failures >= p.Retries {
		return true, 0
	}
	return false, p.RetryBackoff.D() << min(failures, 16)
}

// masterErr maps a failure during mastership: after a lost session it is
// ErrNotMaster.
func (sc *Scheduler) masterErr(runCtx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(runCtx), ErrNotMaster) {
		return ErrNotMaster
	}
	return err
}

// stopErr maps a failure of a master that has not started an attempt:
// after a lost session it is ErrNotMaster; on shutdown (ctx ended) the
// unit is handed to another scheduler, as after an attempt.
func (sc *Scheduler) stopErr(ctx, runCtx context.Context, u unit, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(context.Cause(runCtx), ErrNotMaster):
		return ErrNotMaster
	case ctx.Err() != nil:
		sc.resign(context.WithoutCancel(ctx), u)
		return ctx.Err()
	}
	return err
}

func (sc *Scheduler) readAttempts(ctx context.Context, u unit) (attempts, int32, error) {
	return loadAttempts(ctx, sc.sess, u)
}

// loadAttempts reads a unit's attempts and the version of their node (-1:
// none yet).
func loadAttempts(ctx context.Context, s *recipe.Session, u unit) (attempts, int32, error) {
	data, st, err := s.Retrying().Get(ctx, u.attemptsPath())
	if errors.Is(err, zk.ErrNoNode) {
		return attempts{Version: 1}, -1, nil
	}
	if err != nil {
		return attempts{}, 0, err
	}
	var a attempts
	if err := json.Unmarshal(data, &a); err != nil {
		return attempts{}, 0, fmt.Errorf("scheduler: attempts of %s: %w", u, err)
	}
	return a, st.Version, nil
}

// writeAttempts stores a at version ver (-1: create) and returns the new
// version. A conflict means another master took over: ErrNotMaster.
func (sc *Scheduler) writeAttempts(ctx context.Context, u unit, a attempts, ver int32) (int32, error) {
	s := sc.sess
	a.Version = 1
	data, _ := json.Marshal(a)
	var nv int32
	err := s.Retry(ctx, func() error {
		if ver < 0 {
			_, err := s.Create(ctx, u.attemptsPath(), data, zk.FlagPersistent, nil)
			if errors.Is(err, zk.ErrNodeExists) {
				// Ours, if a lost reply hid our own create.
				got, st, gerr := s.Get(ctx, u.attemptsPath())
				if gerr == nil && string(got) == string(data) && st.Version == 0 {
					return nil
				}
				return ErrNotMaster
			}
			return err
		}
		st, err := s.Set(ctx, u.attemptsPath(), data, ver)
		if errors.Is(err, zk.ErrBadVersion) {
			got, st2, gerr := s.Get(ctx, u.attemptsPath())
			if gerr == nil && string(got) == string(data) && st2.Version == ver+1 {
				nv = st2.Version
				return nil
			}
			return ErrNotMaster
		}
		if err == nil {
			nv = st.Version
		}
		return err
	})
	if ver < 0 && err == nil {
		nv = 0
	}
	return nv, err
}

// publish writes the unit's result — only if its attempts node is still
// at the version this master set, so that a master whose run was taken
// over cannot — and gives up the binding. For a run it then counts the
// result and trims the job's history.
func (sc *Scheduler) publish(ctx context.Context, p *plan, u unit, r Result, aver int32) (Result, error) {
	s := sc.sess
	r.Version = 1
	data, _ := json.Marshal(r)
	ops := []any{&zk.CreateRequest{Path: u.resultPath(), Data: data, Flags: zk.FlagPersistent}}
	if aver >= 0 {
		ops = append([]any{&zk.CheckVersionRequest{Path: u.attemptsPath(), Version: aver}}, ops...)
	} else {
		// No attempt started: the binding must still be this session's.
		ops = append([]any{&zk.CheckVersionRequest{Path: u.bindingPath(), Version: 0}}, ops...)
	}
	// Published even when ctx ended (shutdown after the command ended):
	// the run happened and must not run again.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	err := s.Retry(pctx, func() error {
		_, err := s.Multi(pctx, ops...)
		if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			// Our own earlier try may have gone through.
			got, ok, rerr := readUnitResult(pctx, s, u)
			if rerr == nil && ok && got.Host == r.Host && got.Attempt == r.Attempt && got.Start.Equal(r.Start) {
				return nil
			}
			return ErrNotMaster
		}
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotMaster) {
			return Result{}, ErrNotMaster
		}
		return Result{}, fmt.Errorf("scheduler: %s: publish result: %w", u, err)
	}
	sc.resign(pctx, u)
	if u.item < 0 {
		sc.metrics.runs.WithLabelValues(r.Job, string(r.Status)).Inc()
		sc.cleanup(pctx, p)
	}
	return r, nil
}

// resign deletes the binding, so that watchers look at the result now
// rather than when the session ends.
func (sc *Scheduler) resign(ctx context.Context, u unit) {
	err := sc.sess.Retry(ctx, func() error {
		err := sc.sess.Delete(ctx, u.bindingPath(), 0)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	if err != nil {
		sc.log.Warn("cannot delete binding; it goes with the session", "job", u.job, "run", u.key, "item", u.item, "err", err)
	}
}

// watchCancel ends the run (as Replaced) when a later run of a replace
// job creates its cancel node.
func (sc *Scheduler) watchCancel(ctx context.Context, cancel context.CancelCauseFunc, job, key string) (stop func()) {
	wctx, wcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := sc.sess
		for wctx.Err() == nil {
			ok, _, ch, err := s.ExistsW(wctx, cancelPath(job, key))
			if ok {
				sc.log.Info("replaced by a later run", "job", job, "run", key)
				cancel(stopCause{Replaced})
				return
			}
			if err != nil {
				if ctxsleep.Sleep(wctx, time.Second) != nil {
					return
				}
				continue
			}
			select {
			case <-ch:
			case <-wctx.Done():
			}
		}
	}()
	return func() { wcancel(); <-done }
}

// applyPolicy enforces the concurrency policy before a run's first
// attempt. done reports that the run ended here (skipped).
func (sc *Scheduler) applyPolicy(ctx context.Context, p *plan, key string, base Result, aver int32) (Result, bool, error) {
	if p.ConcurrencyPolicy == Allow {
		return Result{}, false, nil
	}
	active, err := sc.activeRuns(ctx, p.Name, key, base.Scheduled)
	if err != nil || len(active) == 0 {
		return Result{}, false, err
	}
	if p.ConcurrencyPolicy == Forbid {
		base.Status = Skipped
		base.Error = fmt.Sprintf("run %s was still running (concurrencyPolicy forbid)", active[0])
		r, err := sc.publish(ctx, p, runUnit(p.Name, key), base, aver)
		return r, true, err
	}
	s := sc.sess
	for _, k := range active {
		err := s.Retry(ctx, func() error {
			_, err := s.Create(ctx, cancelPath(p.Name, k), nil, zk.FlagPersistent, nil)
			if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			return err
		})
		if err != nil {
			return Result{}, false, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, replaceWait)
	defer cancel()
	for _, k := range active {
		if err := sc.watchMaster(wctx, runUnit(p.Name, k)); err != nil && ctx.Err() == nil {
			sc.log.Warn("replaced run did not stop in time; starting anyway", "job", p.Name, "run", k, "after", replaceWait)
		}
	}
	return Result{}, false, ctx.Err()
}

// activeRuns lists the job's runs scheduled before (key, scheduled) that
// have a master and no result. Only earlier runs count, as in
// Kubernetes: two runs starting together cannot both skip each other.
func (sc *Scheduler) activeRuns(ctx context.Context, job, key string, scheduled time.Time) ([]string, error) {
	runs, err := listRuns(ctx, sc.sess, job)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range runs {
		if r.RunKey == key || !r.Running || r.Result != nil {
			continue
		}
		data, _, err := sc.sess.Retrying().Get(ctx, BindingPath(job, r.RunKey))
		if errors.Is(err, zk.ErrNoNode) {
			continue // it just ended
		}
		if err != nil {
			return nil, err
		}
		var b binding
		if err := json.Unmarshal(data, &b); err != nil {
			return nil, fmt.Errorf("scheduler: binding of %s/%s: %w", job, r.RunKey, err)
		}
		if b.Scheduled.Before(scheduled) || (b.Scheduled.Equal(scheduled) && r.RunKey < key) {
			out = append(out, r.RunKey)
		}
	}
	return out, nil
}

func (sc *Scheduler) awaitConnected(ctx context.Context) error {
	for !sc.sess.State().Connected() {
		if err := ctxsleep.Sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}
