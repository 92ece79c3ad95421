package core

import (
	"context"
	"log/slog"
	"time"

	"github.com/shepherd-dev/shepherd/replication"
)

// Engine opens the replicator of a task. The production engine copies
// MySQL binlog events (package replication); tests use an in-memory one.
// Core owns everything around the replicator — who runs it, from where,
// and what happens on failure — and the replicator only copies.
type Engine interface {
	Open(ctx context.Context, sp *Spec, log *slog.Logger) (Replicator, error)
	// ProbeSource looks at one source candidate, within a few seconds:
	// the reading automatic source failover decides from.
	ProbeSource(ctx context.Context, e Endpoint, log *slog.Logger) SourceHealth
}

// SourceHealth is what a probe of a source server found
// (replication.ProbeSource).
type SourceHealth = replication.SourceHealth

// Replicator copies one task's changes from its source to its target.
//
// Errors: ErrFenced (wrapped) when the target refuses a commit because a
// newer epoch has committed there; ErrNonRetryable (wrapped) for failures
// that will recur; anything else is taken as retryable (a server down).
type Replicator interface {
	// ResolveStart turns a spec's start point (current, earliest,
	// file:pos, GTID set) into a position.
	ResolveStart(ctx context.Context, start string) (Position, error)
	// Locate completes a position an operator gave (Admin.ResetPosition)
	// on the source server now behind the source address: a file position
	// of no server is taken to be of that server, and Server set; a file
	// position gets its GTID state where the source can tell (MariaDB).
	// It fails with ErrPositionNotOnSource (wrapped) for a position that
	// server cannot serve: a file or offset it does not have, another
	// server's file position without a GTID state, a GTID state beyond
	// its own.
	Locate(ctx context.Context, p Position) (Position, error)
	// TargetCheckpoint returns the checkpoint stored in the target, if
	// any.
	TargetCheckpoint(ctx context.Context) (Checkpoint, bool, error)
	// Run applies changes from the later of from and the target's
	// checkpoint until ctx ends (returning ctx's error) or it fails. Every
	// commit carries the checkpoint, conditioned on the stored epoch being
	// at most epoch. progress is called after commits, from one goroutine.
	Run(ctx context.Context, from Position, epoch int64, owner string, progress func(Progress)) error
	// ResetEpoch sets the target checkpoint's epoch to 0, keeping its
	// position, and returns the epoch it had (Admin.ResetEpoch).
	ResetEpoch(ctx context.Context) (int64, error)
	// Close releases the connections.
	Close() error
}

// Checkpoint is the position stored in the target with the data.
type Checkpoint struct {
	Position Position
	Epoch    int64
	Owner    string
	Time     time.Time
	// Followed is the source history the target followed up to Position
	// (replication.Checkpoint.Followed), "" when unknown.
	Followed string
}

// Progress is what a replicator reports after commits.
type Progress struct {
	// Committed is the last position committed to the target, with the
	// data: a checkpoint that may be mirrored to lastCommit.
	Committed Position
	// Followed is the source history the target followed up to
	// Committed (Checkpoint.Followed), "" when unknown.
	Followed string
	// Lag is how far behind the source the last applied event was.
	Lag time.Duration
	// Rows counts the rows applied since Run began.
	Rows int64
	// Retrying is the failure the replicator is retrying by itself (a
	// server restarting, a deadlock), nil while it applies normally.
	Retrying error
	// Snapshot is the table copy's progress (start: snapshot), nil when
	// the task has none.
	Snapshot *replication.SnapshotProgress
}
