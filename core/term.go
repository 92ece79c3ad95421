package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/replication"
)

// term is one spell of an instance owning a task: from winning the
// election (or getting the connection back in the same term) to losing
// it, stopping or handing over. Its epoch is the election's fencing
// token, the creation zxid of the instance node, which grows with every
// takeover; lastCommit and the target's checkpoint refuse writes of a
// smaller epoch than they hold.
type term struct {
	t     *taskRun
	epoch int64
	node  string // the instance node
	owner string // its name, host-seq
	cw    *commitWriter
	pub   *publisher

	// Written by the replicator's progress callback and the term's own
	// goroutine; read by the reporter.
	mu          sync.Mutex
	committed   Position // last position known committed to the target
	committedAt time.Time
	followed    string // the source history followed up to committed (Progress.Followed)
	lag         time.Duration
	retrying    error // what the replicator is retrying by itself
	snapshot    *replication.SnapshotProgress
	rowsBefore  int64 // rows applied by earlier Runs of this term
	rows        int64
	failure     *Failure // the recorded failure, until progress clears it
	source      string   // host:port of the source candidate read (Spec.ActiveSource)
	stuck       string   // why the source is down and no candidate can take over, if so
	lastSwitch  *SourceSwitch

	// The reporter's rate window.
	rateRows int64
	rateAt   time.Time
}

func (t *taskRun) newTerm(e *recipe.Election) *term {
	node := e.Node()
	tm := &term{t: t, epoch: e.Token(), node: node, owner: path.Base(node)}
	log := t.log.With("node", tm.owner, "epoch", tm.epoch)
	tm.cw = newCommitWriter(t.c.s, log, t.c.layout.LastCommit(t.name), node, tm.epoch, tm.owner)
	tm.pub = newPublisher(t.c.s, log, node, InstanceState{
		Version: docVersion, Host: t.c.cfg.Host, PID: os.Getpid(), Epoch: tm.epoch,
	}, func(state string) { t.c.metrics.setState(t.name, state) })
	t.c.metrics.terms.WithLabelValues(t.name).Inc()
	return tm
}

// Causes of a run's end besides its context's.
var (
	// errSpecChanged stops a run whose spec changed: it starts again
	// with the new spec.
	errSpecChanged = errors.New("core: task spec changed")
	// errRelease makes a cold-standby lead give its task up.
	errRelease = errors.New("core: task released")
	// errTrustUnknown: the ACLs of a spec could not be read, so whether
	// to trust it is unknown; the check is tried again.
	errTrustUnknown = errors.New("core: cannot check the spec's ACL")
)

// run runs the task with spec sp (whose version is key) until ctx ends,
// the spec changes (errSpecChanged), the term is fenced (ErrFenced) or the
// task fails for good (ErrNonRetryable). Retryable failures are retried
// with backoff, showing in the instance state.
func (tm *term) run(ctx context.Context, sp *Spec, key specKey) error {
	cfg := tm.t.c.cfg
	var lc LastCommit
	var existed bool
	for failures := 1; ; failures++ {
		var err error
		lc, existed, err = tm.cw.claim(ctx)
		if err == nil {
			break
		}
		if errors.Is(err, ErrFenced) || ctx.Err() != nil {
			return err
		}
		if err := tm.retryLater(ctx, key, failures, fmt.Errorf("claim lastCommit: %w", err)); err != nil {
			return err
		}
	}
	tm.mu.Lock()
	tm.failure = lc.Failure
	tm.source, tm.lastSwitch = sp.ActiveSource(lc).Addr(), lc.Switch
	if existed && !lc.Position().IsZero() {
		tm.committed, tm.committedAt, tm.followed = lc.Position(), lc.Time, lc.Followed
	}
	tm.mu.Unlock()
	if f := lc.Failure; f != nil && f.Attempts >= cfg.MaxFailures {
		return fmt.Errorf("%w: %s (failed %d times in a row, last on %s; fix the cause, then: shepherd ctl task start %s)",
			ErrNonRetryable, f.Error, f.Attempts, f.Owner, tm.t.name)
	}
	failures := 0
	for {
		before := tm.position()
		err := tm.runOnce(ctx, sp, key)
		var sw *sourceSwitch
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errSpecChanged), errors.Is(err, ErrFenced):
			return err
		case errors.Is(err, ErrNonRetryable):
			return tm.recordFailure(ctx, err)
		case errors.As(err, &sw):
			err = tm.switchSource(ctx, sw)
			if err == nil {
				failures = 0
				continue
			}
			if errors.Is(err, ErrFenced) {
				return err
			}
		}
		if tm.position() != before {
			failures = 0 // it got somewhere: start the backoff over
		}
		failures++
		if err := tm.retryLater(ctx, key, failures, err); err != nil {
			return err
		}
	}
}

// runOnce opens the replicator and runs it once.
func (tm *term) runOnce(ctx context.Context, sp *Spec, key specKey) error {
	t := tm.t
	tm.mu.Lock()
	source := tm.source
	tm.mu.Unlock()
	active, ok := sp.Source.Candidate(source)
	if !ok {
		active = sp.Source.Endpoint
	}
	if err := t.c.checkDuplicateWindow(sp); err != nil {
		return err
	}
	onActive := *sp
	onActive.Source.Endpoint = active
	rep, err := t.c.cfg.Engine.Open(ctx, &onActive, t.log)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer func() {
		if err := rep.Close(); err != nil {
			t.log.Warn("closing the replicator", "err", err)
		}
	}()
	from := tm.position()
	if from.IsZero() {
		if from, err = tm.startPosition(ctx, rep, sp); err != nil {
			return err
		}
		// Pin the start in lastCommit before applying anything: a start
		// of "current" resolved again after a failover would skip what
		// the source wrote in between.
		tm.mu.Lock()
		tm.committed, tm.committedAt, tm.followed = from, time.Now().UTC(), ""
		tm.mu.Unlock()
		if err := tm.flush(ctx); err != nil {
			return fmt.Errorf("pin start position: %w", err)
		}
	}
	t.log.Info("replicating", "from", from.String(), "source", active.Addr())
	if err := tm.pub.set(ctx, func(st *InstanceState) {
		st.State, st.Error, st.RetryAt, st.Position = StateRunning, "", nil, from
	}); errors.Is(err, ErrFenced) {
		return err
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		tm.report(runCtx, cancel, key)
	}()
	go func() {
		defer wg.Done()
		tm.watchSource(runCtx, cancel, sp, active, rep)
	}()
	if sp.Verify.Every > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tm.verifyEvery(runCtx, &onActive)
		}()
	}
	err = rep.Run(runCtx, from, tm.epoch, tm.owner, tm.onProgress)
	cause := context.Cause(runCtx)
	cancel(nil)
	wg.Wait()
	tm.mu.Lock()
	tm.rowsBefore, tm.retrying = tm.rows, nil
	tm.mu.Unlock()
	tm.finalFlush(ctx)
	var sw *sourceSwitch
	if err != nil && runCtx.Err() != nil && ctx.Err() == nil &&
		(errors.Is(cause, errSpecChanged) || errors.Is(cause, ErrFenced) || errors.As(cause, &sw)) {
		return cause
	}
	if err == nil {
		err = errors.New("replicator stopped without an error")
	}
	return err
}

// startPosition is where a task without lastCommit starts: the target's
// checkpoint if it has one, else the spec's start point.
func (tm *term) startPosition(ctx context.Context, rep Replicator, sp *Spec) (Position, error) {
	cp, ok, err := rep.TargetCheckpoint(ctx)
	if err != nil {
		return Position{}, fmt.Errorf("read the target's checkpoint: %w", err)
	}
	if ok && !cp.Position.IsZero() {
		tm.t.log.Info("no lastCommit: starting from the target's checkpoint", "position", cp.Position.String(), "owner", cp.Owner)
		return cp.Position, nil
	}
	pos, err := rep.ResolveStart(ctx, sp.Start)
	if err != nil {
		return Position{}, fmt.Errorf("resolve start %q: %w", sp.Start, err)
	}
	tm.t.log.Info("first run: starting from the spec's start point", "start", sp.Start, "position", pos.String())
	return pos, nil
}

// onProgress is the replicator's progress callback.
func (tm *term) onProgress(p Progress) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if !p.Committed.IsZero() && p.Committed != tm.committed {
		tm.committed, tm.committedAt, tm.followed = p.Committed, time.Now().UTC(), p.Followed
		tm.failure = nil // past the failure: it was not permanent after all
	}
	if p.Retrying != nil && tm.retrying == nil {
		tm.t.c.metrics.failures.WithLabelValues(tm.t.name, "retryable").Inc()
	}
	tm.lag, tm.retrying = p.Lag, p.Retrying
	if p.Snapshot != nil {
		tm.snapshot = p.Snapshot
		tm.t.c.metrics.snapshotRows.WithLabelValues(tm.t.name, "copied").Set(float64(p.Snapshot.Rows))
		tm.t.c.metrics.snapshotRows.WithLabelValues(tm.t.name, "estimated").Set(float64(p.Snapshot.Estimated))
	}
	if rows := tm.rowsBefore + p.Rows; rows > tm.rows {
		tm.t.c.metrics.rows.WithLabelValues(tm.t.name).Add(float64(rows - tm.rows))
		tm.rows = rows
	}
	tm.t.c.metrics.lag.WithLabelValues(tm.t.name).Set(p.Lag.Seconds())
}

func (tm *term) position() Position {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.committed
}

// report mirrors progress to lastCommit and the instance node every
// checkpoint interval, and stops the run (cancel) when the spec changes
// or a write finds the term fenced.
func (tm *term) report(ctx context.Context, cancel context.CancelCauseFunc, key specKey) {
	tick := time.NewTicker(tm.t.c.cfg.CheckpointInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-tm.t.spec.Changes():
			if !ok {
				return // the core is stopping
			}
			if tm.t.specKey() != key {
				cancel(errSpecChanged)
				return
			}
		case <-tick.C:
			err := tm.flush(ctx)
			if err == nil {
				err = tm.publishProgress(ctx)
			}
			if errors.Is(err, ErrFenced) {
				tm.t.log.Error("stopping: another instance has taken the task over", "err", err)
				cancel(err)
				return
			}
			if err != nil && ctx.Err() == nil {
				tm.t.log.Warn("checkpoint not mirrored; will retry", "err", err)
			}
		}
	}
}

// flush writes lastCommit if it is behind.
func (tm *term) flush(ctx context.Context) error {
	tm.mu.Lock()
	lc := LastCommit{Time: tm.committedAt, Failure: tm.failure, Source: tm.source, Switch: tm.lastSwitch, Followed: tm.followed}
	pos := tm.committed
	tm.mu.Unlock()
	lc.setPosition(pos)
	last := tm.cw.last
	if tm.cw.known && last.Position() == pos && last.Failure == lc.Failure && last.Epoch == tm.epoch &&
		last.Source == lc.Source && last.Switch == lc.Switch {
		return nil
	}
	return tm.cw.write(ctx, lc)
}

// finalFlushTimeout bounds the lastCommit write of a stopping run.
const finalFlushTimeout = 3 * time.Second

// finalFlush writes lastCommit as a run stops — unless it stops because
// the connection or the session is lost, when no write can get through.
func (tm *term) finalFlush(ctx context.Context) {
	cause := context.Cause(ctx)
	if errors.Is(cause, recipe.ErrLeaderSuspended) || errors.Is(cause, recipe.ErrLeadershipLost) {
		return
	}
	// ctx may be over (shutdown): the last checkpoint still goes out.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
	defer cancel()
	if err := tm.flush(fctx); err != nil {
		tm.t.log.Warn("final lastCommit not written; the target's checkpoint still has it", "err", err)
	}
}

// publishProgress writes the RUNNING state with position, lag and rate.
func (tm *term) publishProgress(ctx context.Context) error {
	now := time.Now()
	tm.mu.Lock()
	pos, lag, rows, retrying, stuck, snapshot := tm.committed, tm.lag, tm.rows, tm.retrying, tm.stuck, tm.snapshot
	tm.mu.Unlock()
	msg := ""
	if retrying != nil {
		msg = "retrying: " + retrying.Error()
	}
	if stuck != "" {
		msg = strings.TrimPrefix(msg+"; "+stuck, "; ")
	}
	rate := 0.0
	if !tm.rateAt.IsZero() && rows >= tm.rateRows {
		if dt := now.Sub(tm.rateAt).Seconds(); dt > 0 {
			rate = float64(rows-tm.rateRows) / dt
		}
	}
	tm.rateRows, tm.rateAt = rows, now
	return tm.pub.set(ctx, func(st *InstanceState) {
		st.State, st.Error, st.RetryAt = StateRunning, msg, nil
		st.Position, st.LagSeconds, st.RowsPerSecond, st.Rows = pos, lag.Seconds(), rate, rows
		st.Snapshot = snapshot
	})
}

// retryLater shows a retryable failure in the instance state and waits
// the backoff of the failures-th failure in a row. It returns early with
// errSpecChanged if the spec changes, or ctx's error.
func (tm *term) retryLater(ctx context.Context, key specKey, failures int, cause error) error {
	d := tm.t.c.backoff(failures)
	at := time.Now().Add(d).UTC()
	tm.t.c.metrics.failures.WithLabelValues(tm.t.name, "retryable").Inc()
	tm.t.log.Warn("replication failed; retrying", "err", cause, "in", d)
	if err := tm.pub.set(ctx, func(st *InstanceState) {
		st.State, st.Error, st.RetryAt = StateRunning, cause.Error(), &at
	}); errors.Is(err, ErrFenced) {
		return err
	}
	return tm.t.sleep(ctx, d, key)
}

// recordFailure records a non-retryable failure in lastCommit, so that
// instances taking over know how often it happened, and returns err.
func (tm *term) recordFailure(ctx context.Context, err error) error {
	tm.mu.Lock()
	n := 1
	if tm.failure != nil {
		n = tm.failure.Attempts + 1
	}
	tm.failure = &Failure{Error: err.Error(), Attempts: n, Owner: tm.owner, Time: time.Now().UTC()}
	tm.mu.Unlock()
	tm.t.c.metrics.failures.WithLabelValues(tm.t.name, "non_retryable").Inc()
	tm.t.log.Error("task failed; not retrying", "err", err, "attempts", n)
	if ferr := tm.flush(ctx); ferr != nil {
		tm.t.log.Warn("failure not recorded in lastCommit", "err", ferr)
		if errors.Is(ferr, ErrFenced) {
			return ferr
		}
	}
	return err
}
