package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"

	"github.com/shepherd-dev/shepherd/replication"
)

// VerifyOptions and VerifyReport are replication's: what a verify
// compares, and what it found (see docs/replication.md#verify).
type (
	VerifyOptions = replication.VerifyOptions
	VerifyReport  = replication.VerifyReport
	TableVerify   = replication.TableVerify
	ChunkDiff     = replication.ChunkDiff
)

// ErrVerifyUnsupported: the task's engine or sink cannot verify.
var ErrVerifyUnsupported = errors.New("core: verify is not supported for this task")

// Verifier is a Replicator that can compare its source and target while
// the task runs (replication.Replicator.Verify). The MySQL engine's
// replicators are Verifiers.
type Verifier interface {
	Verify(ctx context.Context, opts VerifyOptions) (VerifyReport, error)
}

func (m mysqlReplicator) Verify(ctx context.Context, opts VerifyOptions) (VerifyReport, error) {
	rep, err := m.r.Verify(ctx, opts)
	if errors.Is(err, replication.ErrVerifyUnsupported) {
		err = fmt.Errorf("%w: %w", ErrVerifyUnsupported, err)
	}
	return rep, mapReplicationError(err)
}

// Verify compares task name's source and target, chunk by chunk, while
// the task runs (its owner must be applying: the verify waits for the
// target to reach each position it compares at), and with opts.Repair
// rewrites the rows that differ, fenced by the task's epoch. The report
// is stored in the task's verify node (Layout.Verify), where task show
// and the monitor read it, also when the verify fails part way (its
// Error says why). The returned error is the verify's, or the store's.
func (a *Admin) Verify(ctx context.Context, name string, opts VerifyOptions, e Engine, log *slog.Logger) (VerifyReport, error) {
	rep := VerifyReport{Task: name}
	ts, err := a.Task(ctx, name)
	if err != nil {
		return rep, err
	}
	if ts.Spec == nil {
		return rep, fmt.Errorf("%w: %s: %s", ErrNoTask, name, ts.SpecError)
	}
	if err := a.s.CheckTrusted(ctx, a.layout.Root, a.layout.Task(name)); err != nil {
		return rep, fmt.Errorf("core: verify task %q: %w", name, err)
	}
	r, err := e.Open(ctx, ts.Spec, log)
	if err != nil {
		return rep, fmt.Errorf("core: verify task %q: %w", name, err)
	}
	defer r.Close()
	v, ok := r.(Verifier)
	if !ok {
		return rep, fmt.Errorf("%w: task %q: its engine cannot compare rows", ErrVerifyUnsupported, name)
	}
	rep, verr := v.Verify(ctx, opts)
	rep.Task = name
	if err := a.storeVerify(context.WithoutCancel(ctx), name, &rep); err != nil {
		return rep, errors.Join(verr, err)
	}
	return rep, verr
}

// storeVerify writes rep as task name's last verify report.
func (a *Admin) storeVerify(ctx context.Context, name string, rep *VerifyReport) error {
	return writeVerify(ctx, a.s, a.layout, name, rep)
}

// writeVerify writes rep as task name's last verify report: for
// Admin.Verify, and for an owner's periodic verify (Spec.Verify).
func writeVerify(ctx context.Context, s *recipe.Session, l Layout, name string, rep *VerifyReport) error {
	data, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("core: task %q: encode verify report: %w", name, err)
	}
	p := l.Verify(name)
	err = s.Retry(ctx, func() error {
		_, err := s.Create(ctx, p, data, zk.FlagPersistent, s.NodeACL())
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = s.Set(ctx, p, data, -1) // the latest report wins
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("core: task %q: write %s: %w", name, p, err)
	}
	return nil
}

// verifyEvery verifies the task with spec sp every sp.Verify.Every
// until ctx ends (the term's run ends), through a replicator of its own,
// and stores each report. A verify cut short by ctx stores nothing;
// one that fails stores its report with the error.
func (tm *term) verifyEvery(ctx context.Context, sp *Spec) {
	t := tm.t
	timer := time.NewTimer(sp.Verify.Every.D())
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		timer.Reset(sp.Verify.Every.D())
		rep, err := tm.verifyOnce(ctx, sp)
		if ctx.Err() != nil {
			return
		}
		if err != nil && rep == nil {
			t.log.Warn("periodic verify", "err", err)
			continue
		}
		if err != nil {
			t.log.Warn("periodic verify failed", "err", err)
		} else {
			t.log.Info("periodic verify", "chunks", rep.Chunks, "differences", rep.Differences)
		}
		if err := writeVerify(ctx, t.c.s, t.c.layout, t.name, rep); err != nil {
			t.log.Warn("periodic verify: store the report", "err", err)
		}
	}
}

// verifyOnce runs one periodic verify; the report is nil when none
// could start.
func (tm *term) verifyOnce(ctx context.Context, sp *Spec) (*VerifyReport, error) {
	rep, err := tm.t.c.cfg.Engine.Open(ctx, sp, tm.t.log)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	defer rep.Close()
	v, ok := rep.(Verifier)
	if !ok {
		return nil, fmt.Errorf("%w: the engine cannot compare rows", ErrVerifyUnsupported)
	}
	r, err := v.Verify(ctx, VerifyOptions{ChunkRows: sp.Verify.ChunkRows, Epoch: tm.epoch})
	r.Task = tm.t.name
	return &r, err
}

// readVerify reads a task's last verify report; nil when it has none.
func (a *Admin) readVerify(ctx context.Context, name string) (*VerifyReport, error) {
	data, _, err := a.s.Retrying().Get(ctx, a.layout.Verify(name))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rep VerifyReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", a.layout.Verify(name), err)
	}
	return &rep, nil
}
