package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/shepherd-dev/shepherd/replication"
	"github.com/shepherd-dev/shepherd/replication/kafkasink"
	"github.com/shepherd-dev/shepherd/replication/natssink"
)

// MySQL is the Engine of `shepherd core`: package replication, copying
// row-based binlog events from MySQL or MariaDB into the task's target —
// MySQL or MariaDB, a NATS JetStream stream (package
// replication/natssink) or Kafka (package replication/kafkasink) —
// chosen by the spec's target.kind.
type MySQL struct{}

// DefaultEngine is the engine every process runs tasks with: `shepherd
// core`, the console (reset-position, the dry run) and ctl. It is built
// here and nowhere else.
func DefaultEngine() MySQL { return MySQL{} }

// Open opens the replicator of sp. A password file that cannot be read
// and a source not set up for row-based replication are non-retryable;
// an unreachable server is not.
func (MySQL) Open(ctx context.Context, sp *Spec, log *slog.Logger) (Replicator, error) {
	cfg, err := replicationConfig(ctx, sp, log)
	if err != nil {
		return nil, classify(err, ErrNonRetryable)
	}
	r, err := replication.Open(ctx, cfg)
	if err != nil {
		return nil, mapReplicationError(err)
	}
	return mysqlReplicator{r}, nil
}

// replicationConfig translates a spec into replication's terms.
func replicationConfig(ctx context.Context, sp *Spec, log *slog.Logger) (replication.Config, error) {
	cfg := replication.Config{
		Task:             sp.Name,
		ServerID:         sp.ServerID,
		Include:          sp.Filter.Include,
		Exclude:          sp.Filter.Exclude,
		CheckpointSchema: sp.CheckpointSchema,
		BatchRows:        sp.Apply.BatchRows,
		MaxTxnRows:       sp.Apply.MaxTxnRows,
		Snapshot: replication.SnapshotConfig{
			Enabled:          sp.Start == StartSnapshot,
			Threads:          sp.Snapshot.Threads,
			ChunkRows:        sp.Snapshot.ChunkRows,
			MaxRowsPerSecond: sp.Snapshot.MaxRowsPerSecond,
		},
		Logger: log,
	}
	eps := []struct {
		name string
		in   Endpoint
		out  *replication.Endpoint
	}{{"source", sp.Source.Endpoint, &cfg.Source}, {"target", sp.Target.Endpoint, &cfg.Target}}
	if !sp.Target.IsMySQL() {
		pw, err := sp.Target.ResolvePassword(ctx)
		if err != nil {
			return cfg, fmt.Errorf("task %q: target.%w", sp.Name, err)
		}
		if sp.Target.IsKafka() {
			cfg.Sink = kafkasink.New(sp.Target.kafkaConfig(pw))
		} else {
			cfg.Sink = natssink.New(sp.Target.natsConfig(pw))
		}
		eps = eps[:1]
	}
	for _, ep := range eps {
		var err error
		if *ep.out, err = replicationEndpoint(ctx, ep.in); err != nil {
			return cfg, fmt.Errorf("task %q: %s.%w", sp.Name, ep.name, err)
		}
	}
	for _, r := range sp.Routes {
		fromDB, fromTable, _ := strings.Cut(r.From, ".")
		toDB, toTable, _ := strings.Cut(r.To, ".")
		cfg.Routes = append(cfg.Routes, replication.Route{FromDB: fromDB, FromTable: fromTable, ToDB: toDB, ToTable: toTable})
	}
	return cfg, nil
}

// replicationEndpoint is e in replication's terms, its password read.
func replicationEndpoint(ctx context.Context, e Endpoint) (replication.Endpoint, error) {
	pw, err := e.ResolvePassword(ctx)
	if err != nil {
		return replication.Endpoint{}, err
	}
	return replication.Endpoint{Host: e.Host, Port: e.Port, User: e.User, Password: pw, Flavor: e.Flavor}, nil
}

// ProbeSource is Engine.ProbeSource: replication.ProbeSource.
func (MySQL) ProbeSource(ctx context.Context, e Endpoint, log *slog.Logger) SourceHealth {
	re, err := replicationEndpoint(ctx, e)
	if err != nil {
		return SourceHealth{Addr: e.Addr(), Err: fmt.Errorf("source %s: %w", e.Addr(), err)}
	}
	return replication.ProbeSource(ctx, re, log)
}

type mysqlReplicator struct{ r *replication.Replicator }

func (m mysqlReplicator) ResolveStart(ctx context.Context, start string) (Position, error) {
	p, err := m.r.ResolveStart(ctx, start)
	return Position(p), mapReplicationError(err)
}

func (m mysqlReplicator) Locate(ctx context.Context, p Position) (Position, error) {
	p, err := m.r.Locate(ctx, replication.Position(p))
	return Position(p), mapReplicationError(err)
}

func (m mysqlReplicator) TargetCheckpoint(ctx context.Context) (Checkpoint, bool, error) {
	cp, ok, err := m.r.TargetCheckpoint(ctx)
	return Checkpoint{Position: Position(cp.Position), Epoch: cp.Epoch, Owner: cp.Owner, Time: cp.Time, Followed: cp.Followed}, ok, mapReplicationError(err)
}

func (m mysqlReplicator) ResetEpoch(ctx context.Context) (int64, error) {
	prev, err := m.r.ResetEpoch(ctx)
	return prev, mapReplicationError(err)
}

func (m mysqlReplicator) Run(ctx context.Context, from Position, epoch int64, owner string, progress func(Progress)) error {
	err := m.r.Run(ctx, replication.Position(from), epoch, owner, func(p replication.Progress) {
		var retrying error
		if p.State == replication.StateRetrying {
			retrying = p.Err
		}
		progress(Progress{
			Committed: Position(p.Position),
			Followed:  p.Followed,
			Lag:       time.Duration(p.LagSeconds * float64(time.Second)),
			Rows:      p.AppliedRows,
			Retrying:  retrying,
			Snapshot:  p.Snapshot,
		})
	})
	return mapReplicationError(err)
}

func (m mysqlReplicator) Close() error { return m.r.Close() }

// mapReplicationError gives replication's errors core's classes: fenced,
// a position the source cannot serve (non-retryable too), non-retryable
// (replication's non-retryable errors and configuration errors), or
// retryable (everything else).
func mapReplicationError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, replication.ErrFenced):
		return classify(err, ErrFenced)
	case errors.Is(err, replication.ErrNotOnSource):
		return classify(err, ErrPositionNotOnSource)
	case errors.Is(err, replication.ErrNonRetryable), errors.Is(err, replication.ErrConfig):
		return classify(err, ErrNonRetryable)
	}
	return err
}

// classified is err, in class for errors.Is, with err's message alone:
// replication's messages already say what failed.
type classified struct{ err, class error }

func classify(err, class error) error { return &classified{err, class} }

func (c *classified) Error() string   { return c.err.Error() }
func (c *classified) Unwrap() []error { return []error{c.err, c.class} }
