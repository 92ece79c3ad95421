package replication

import (
	"github.com/shepherd-dev/shepherd/internal/ctxsleep"

	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// State is what a running Run is doing, as Progress reports it.
type State string

// States of a Run.
const (
	// StateRunning: connected to both ends, applying or waiting for events.
	StateRunning State = "running"
	// StateRetrying: the source or the target failed; Run waits (with
	// backoff) and reconnects from the target's checkpoint. Progress.Err
	// says what failed.
	StateRetrying State = "retrying"
)

// Progress is what Run reports, after commits (at most every
// progressEvery) and every second while idle.
type Progress struct {
	// Position is the last source position committed to the target, in
	// the same transaction as the data: a checkpoint the caller may
	// mirror elsewhere (core writes it to lastCommit).
	Position Position
	// Followed is the source history the target followed up to Position
	// (Checkpoint.Followed, committed with it), "" when unknown.
	Followed string
	// Epoch is the fencing epoch Run was given.
	Epoch int64
	// LagSeconds is how long ago the source committed the last
	// transaction applied; 0 when the source has nothing newer.
	LagSeconds float64
	// RowsPerSec is the apply rate over roughly the last second.
	RowsPerSec float64
	// AppliedTxns and AppliedRows count source transactions and row
	// changes committed since Run began.
	AppliedTxns, AppliedRows int64
	State                    State
	// Err is the failure being retried when State is StateRetrying.
	Err error
	// Retries counts consecutive failed attempts; 0 once one commits.
	Retries int
	// Snapshot is the snapshot copy's progress, nil when the task has
	// none (see SnapshotConfig); it stays set, Done, once the copy is.
	Snapshot *SnapshotProgress
}

const (
	progressEvery = 100 * time.Millisecond
	idleReport    = time.Second // report period while nothing commits
	minBackoff    = 100 * time.Millisecond
	segmentQueue  = 16
)

// Run applies the source's changes to the target from `from` until ctx
// is cancelled (it then returns ctx's error) or a failure that retrying
// cannot fix (an error wrapping ErrNonRetryable, ErrSourceConfig or
// ErrFenced), or the Replicator is closed (ErrClosed).
//
// Every target transaction carries the task's checkpoint row — source
// position, GTID state, epoch, owner, time — updated in the same
// transaction, on condition that the stored epoch is at most epoch.
// Before applying anything Run claims the row by raising its epoch, so
// once a Run with a larger epoch has started, a Run with a smaller one
// fails its next commit with ErrFenced and stops. Epochs must be unique
// per owner term; two Runs with the same epoch do not fence each other.
//
// Run starts at the later of from and the target's checkpoint. Because
// the checkpoint commits with the data it is exactly what the target has
// applied, so a resumed Run neither skips nor repeats a transaction; and
// rows of keyed tables are written idempotently, so even a replay from an
// earlier position converges.
//
// Lost connections to either end, deadlocks and server restarts are
// retried with backoff (capped by Config.MaxBackoff), each attempt
// resuming from the target's checkpoint; progress reports StateRetrying
// with the error meanwhile. progress may be nil; it is called from Run's
// goroutine and must not block for long.
func (r *Replicator) Run(ctx context.Context, from Position, epoch int64, owner string, progress func(Progress)) error {
	if !r.running.CompareAndSwap(false, true) {
		return fmt.Errorf("task %q: %w", r.cfg.Task, ErrBusy)
	}
	defer r.running.Store(false)
	if progress == nil {
		progress = func(Progress) {}
	}
	st := &runStats{epoch: epoch, report: progress, rateAt: time.Now()}
	backoff := minBackoff
	for {
		committedBefore := st.txns
		if r.isClosed() {
			return fmt.Errorf("task %q: %w", r.cfg.Task, ErrClosed)
		}
		err := r.runOnce(ctx, from, epoch, owner, st)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if r.isClosed() {
			return fmt.Errorf("task %q: %w", r.cfg.Task, ErrClosed)
		}
		if !st.committed.IsZero() {
			from = resumePoint(r.flavor, from, st.committed)
		}
		if !retryable(err) {
			r.log.Error("replication stopped", "error", err, "position", st.committed.String())
			return fmt.Errorf("task %q: %w", r.cfg.Task, classify(err))
		}
		if st.txns > committedBefore {
			backoff, st.retries = minBackoff, 0
		}
		st.retries++
		r.log.Warn("replication interrupted; retrying", "error", err, "in", backoff, "attempt", st.retries, "position", st.committed.String())
		st.send(StateRetrying, err, 0)
		if err := ctxsleep.Sleep(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, r.cfg.MaxBackoff)
	}
}

// runOnce connects both ends and applies until something fails, in
// three phases: claim the sink's checkpoint (which says where to start),
// start reading the source there, hand what it reads to the sink.
func (r *Replicator) runOnce(ctx context.Context, from Position, epoch int64, owner string, st *runStats) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	run, cp, err := r.sink.Claim(ctx, epoch, owner)
	if err != nil {
		return err
	}
	defer run.Close()
	start, known, err := r.startAt(ctx, from, cp)
	if err != nil {
		return err
	}
	id, err := sourceIdentity(ctx, r.source, r.cfg.Source, r.flavor)
	if err != nil {
		return err
	}
	if start, err = r.placeOn(ctx, start, known, id); err != nil {
		return err
	}
	followed, err := r.followedUpTo(ctx, start, known, id)
	if err != nil {
		return err
	}
	if st.committed.IsZero() {
		st.committed = start
	}
	copyState, err := parseCopyState(cp.Snapshot)
	if err != nil {
		return err
	}
	copying := copyState != nil && !copyState.Done || copyState == nil && r.cfg.Snapshot.Enabled && cp.Position.IsZero()
	if copyState != nil {
		st.snapshot = copyState.progress()
	}
	src, err := r.startReading(ctx, start, id)
	if err != nil {
		return err
	}
	defer src.stop()

	run.Begin(start, History{followed}, func(pos Position, followed string, ts uint32, rows, txns int) {
		st.commit(pos, followed, ts, rows, txns)
		if time.Since(st.lastReport) >= progressEvery {
			st.send(StateRunning, nil, r.lag(src.rd, src.segments, run, st))
		}
	})
	r.log.Info("replicating", "from", start.String(), "epoch", epoch, "owner", owner, "snapshot", copying)
	var first *Segment
	if copying {
		if first, err = r.copyTables(ctx, src, run, st, copyState, id); err != nil {
			return err
		}
	}
	err = r.apply(ctx, src, run, st, first)
	run.Close()
	return err
}

// startAt returns where to start: the later of from and the claimed
// checkpoint cp, with the GTID state of a file position learnt from the
// source, and the history the target followed up to it — cp's when the
// start is the checkpoint, else unknown (""): cp's history is the history
// up to the checkpoint only.
func (r *Replicator) startAt(ctx context.Context, from Position, cp Checkpoint) (Position, string, error) {
	start := resumePoint(r.flavor, from, cp.Position)
	known := cp.Followed
	if start != cp.Position {
		known = ""
	}
	if start.IsZero() {
		return Position{}, "", nonRetryable(errNoStart)
	}
	if start.File != "" && start.GTID == "" && r.flavor == FlavorMariaDB {
		// A file position from the caller: learn its GTID state so that
		// checkpoints carry one.
		var err error
		if start.GTID, err = binlogGTIDPos(ctx, r.source, start.File, start.Pos); err != nil {
			return Position{}, "", err
		}
	}
	return start, known, nil
}

// placeOn returns where to read start on the server id now behind the
// source address, which a VIP or DNS name may have moved to another
// server since start was committed — one whose binlog can even have the
// same file names. A file position is resumed only on the server that
// wrote it; on another one only the GTID state carries over, and only
// when that server can take over (checkTakeover): its binlog holds every
// transaction the state names, so that nothing is applied twice or
// skipped, and no errant transaction the target would never get.
// Anything else is refused (ErrOtherSource): replaying from a wrong
// offset would be silent.
//
// followed is the history the target followed up to start, as the
// checkpoint row keeps it ("" when unknown): on MariaDB the errant check
// asks it whether a transaction of another server is one the target has.
//
// A position of unknown server (a checkpoint from before servers were
// recorded, or a file:pos a user gave) is taken to be of this one.
func (r *Replicator) placeOn(ctx context.Context, start Position, followed string, id sourceID) (Position, error) {
	if err := checkTakeover(ctx, r.source, r.cfg.Source, r.flavor, start, followed, id, r.sink.CheckpointPlace()); err != nil {
		return Position{}, err
	}
	if start.Server == "" || start.Server == id.Name {
		start.Server = id.Name
		return start, nil
	}
	r.log.Warn("source server changed: resuming by GTID", "from_server", start.Server, "to_server", id.Name, "gtid", start.GTID)
	return Position{GTID: start.GTID, Server: id.Name}, nil
}

// followedUpTo returns the MariaDB history the target followed up to
// start, a position on server id (see followedState): known, the
// checkpoint row's; else learnt from the source, whose binlog before
// start is what the target holds — for a start a user gave ("current",
// a file or GTID position) or the checkpoint of an older table. That is
// start's GTID position, and the entries of the source's
// @@gtid_binlog_state that precede it: all of them when start is the
// source's current position (@@gtid_binlog_pos); those numbered at most
// start's sequence number in their domain when the source runs in
// gtid_strict_mode, where numbers only grow along its binlog; none
// otherwise, as a lower number may follow a higher one there. What is
// missed makes the errant check stricter, never laxer. Nil on MySQL,
// whose GTID sets are complete.
func (r *Replicator) followedUpTo(ctx context.Context, start Position, known string, id sourceID) (followedState, error) {
	if r.flavor != FlavorMariaDB {
		return nil, nil
	}
	if known != "" {
		f, err := parseFollowedState(known)
		if err == nil {
			return f, nil
		}
		r.log.Warn("the checkpoint's history is unreadable: learning it anew", "gtid_state", known, "error", err)
	}
	var serverID uint32
	var pos, state string
	var strict bool
	const q = "SELECT @@server_id, @@gtid_binlog_pos, @@gtid_binlog_state, @@gtid_strict_mode"
	if err := r.source.QueryRowContext(ctx, q).Scan(&serverID, &pos, &state, &strict); err != nil {
		return nil, connectError("source", r.cfg.Source, fmt.Errorf("read the source's GTID state: %w", err))
	}
	if serverID != id.ServerID {
		return nil, fmt.Errorf("the source address now reaches server_id %d, not %s, which was asked a moment before: the address moved to another server", serverID, id.Name)
	}
	pos, state = strings.ReplaceAll(pos, "\n", ""), strings.ReplaceAll(state, "\n", "")
	f, err := parseFollowedState(start.GTID)
	if err != nil {
		return nil, nonRetryable(fmt.Errorf("the history the target followed up to %s: %w", start, err))
	}
	current := pos == start.GTID
	if c, ok := ComparePositions(FlavorMariaDB, Position{GTID: pos}, Position{GTID: start.GTID}); ok && c == 0 {
		current = true
	}
	if !current && !strict {
		return f, nil
	}
	binlog, err := parseFollowedState(state)
	if err != nil {
		return nil, fmt.Errorf("source %s: @@gtid_binlog_state: %w", r.cfg.Source, err)
	}
	at := slices.Clone(f) // start's last GTID of each domain
	for i := range binlog {
		g := &binlog[i]
		if current || slices.ContainsFunc(at, func(s gomysql.MariadbGTID) bool {
			return s.DomainID == g.DomainID && s.SequenceNumber >= g.SequenceNumber
		}) {
			f.add(g)
		}
	}
	return f, nil
}

// sourceFeed is the source's binlog from a start position, decoded into
// segments by a reader goroutine that stop ends and waits for.
type sourceFeed struct {
	rd       *reader
	segments chan Segment
	readErr  chan error // the reader's failure; written once
	stop     func()
}

// startReading opens the source's binlog at start, a position of server
// id, and starts the reader.
func (r *Replicator) startReading(ctx context.Context, start Position, id sourceID) (*sourceFeed, error) {
	segments := make(chan Segment, segmentQueue)
	rd, err := newReader(r.log, r.flavor, r.filter, r.cfg.MaxTxnRows, start, id, segments)
	if err != nil {
		return nil, err
	}
	syncer := r.newSyncer()
	stream, err := r.startStream(syncer, start)
	if err != nil {
		syncer.Close()
		return nil, r.sourceError(start, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &sourceFeed{rd: rd, segments: segments, readErr: make(chan error, 1)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.readErr <- rd.run(ctx, stream)
	}()
	f.stop = func() {
		cancel()
		syncer.Close()
		wg.Wait()
	}
	return f, nil
}

// apply hands the source's segments to the sink, first (when not nil)
// and then src's, and commits, until something fails; the caller closes
// the run.
func (r *Replicator) apply(ctx context.Context, src *sourceFeed, run SinkRun, st *runStats, first *Segment) error {
	report := func() { st.send(StateRunning, nil, r.lag(src.rd, src.segments, run, st)) }
	st.send(StateRunning, nil, 0)
	if first != nil {
		if err := run.Write(ctx, *first); err != nil {
			return err
		}
		if err := run.Flush(ctx, len(src.segments) > 0); err != nil {
			return err
		}
	}

	// The ticker delivers commits the throttle held back, and a report
	// every idleReport while nothing commits (lag keeps moving).
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case seg := <-src.segments:
			if err := run.Write(ctx, seg); err != nil {
				return err
			}
			if err := run.Flush(ctx, len(src.segments) > 0); err != nil {
				return err
			}
		case err := <-run.InFlight():
			// Work landed while no segment came: a commit is reported now
			// rather than with the next segment, and what accumulated
			// meanwhile can go.
			if err := run.Landed(ctx, err); err != nil {
				return err
			}
			if err := run.Flush(ctx, len(src.segments) > 0); err != nil {
				return err
			}
		case err := <-src.readErr:
			return r.sourceError(src.rd.pos, err)
		case <-tick.C:
			if st.unreported || time.Since(st.lastReport) >= idleReport {
				report()
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// checkStrict verifies that the apply session is in strict mode, which
// the commit fence depends on (see targetSession): without it a stale
// owner's checkpoint UPDATE would store 0 instead of failing.
func checkStrict(ctx context.Context, conn *sql.Conn) error {
	var mode string
	if err := conn.QueryRowContext(ctx, "SELECT @@SESSION.sql_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read the target session's sql_mode: %w", err)
	}
	if !strings.Contains(mode, "STRICT_ALL_TABLES") {
		return nonRetryable(fmt.Errorf("the target session's sql_mode is %q, not strict: the commit fence needs STRICT_ALL_TABLES (is a proxy rewriting session variables?)", mode))
	}
	return nil
}

// sourceError classifies a failure to read the source's binlog.
func (r *Replicator) sourceError(at Position, err error) error {
	switch {
	case isPurged(err):
		return nonRetryable(fmt.Errorf("source %s cannot serve the binlog from %s (purged, or not a position it wrote): %w", r.cfg.Source, at, err))
	case accessDenied(err):
		// Open logged in with the same account, so the password is right:
		// MariaDB answers a replica registration without the privilege
		// with "access denied" too.
		return nonRetryable(fmt.Errorf("source %s refused to stream its binlog: %w: the account needs the REPLICATION SLAVE privilege (GRANT REPLICATION SLAVE ON *.* TO %s)",
			r.cfg.Source, err, r.cfg.Source.User))
	}
	return fmt.Errorf("source %s: %w", r.cfg.Source, err)
}

// lag estimates how far the target is behind the source.
func (r *Replicator) lag(rd *reader, queue chan Segment, run SinkRun, st *runStats) float64 {
	if rd.caughtUp() && len(queue) == 0 && run.Idle() {
		return 0
	}
	if st.lastTS == 0 {
		return 0
	}
	return max(0, time.Since(time.Unix(int64(st.lastTS), 0)).Seconds())
}

// runStats accumulates what Progress reports. It is used by Run's
// goroutine only.
type runStats struct {
	epoch      int64
	report     func(Progress)
	committed  Position
	followed   string // up to committed
	lastTS     uint32
	txns, rows int64
	retries    int
	lastReport time.Time
	unreported bool // a commit happened since the last report

	rate     float64
	rateAt   time.Time
	rateRows int64

	snapshot *SnapshotProgress // the copy's, nil without one
}

func (s *runStats) commit(pos Position, followed string, ts uint32, rows, txns int) {
	s.committed, s.followed = pos, followed
	if ts != 0 {
		s.lastTS = ts
	}
	s.rows += int64(rows)
	s.txns += int64(txns)
	s.retries = 0
	s.unreported = true
}

func (s *runStats) send(state State, err error, lag float64) {
	now := time.Now()
	if d := now.Sub(s.rateAt); d >= time.Second {
		s.rate = float64(s.rows-s.rateRows) / d.Seconds()
		s.rateAt, s.rateRows = now, s.rows
	}
	s.lastReport, s.unreported = now, false
	s.report(Progress{
		Position: s.committed, Followed: s.followed, Epoch: s.epoch, LagSeconds: lag, RowsPerSec: s.rate,
		AppliedTxns: s.txns, AppliedRows: s.rows, State: state, Err: err, Retries: s.retries, Snapshot: s.snapshot,
	})
}
