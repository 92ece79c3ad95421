package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/replication"
)

// Errors of the console's actions.
var (
	// ErrVersionConflict: a conditional update found the spec changed
	// since the version the caller read.
	ErrVersionConflict = errors.New("core: task spec changed since it was read")
	// ErrNoStandby: a handover found no instance in line to take over.
	ErrNoStandby = errors.New("core: no standby instance to hand over to")
	// ErrPositionUnordered: a reset to a position that cannot be ordered
	// against the target's checkpoint: another server's binlog (another
	// base name) with no GTID state that decides.
	ErrPositionUnordered = errors.New("core: position cannot be ordered against the target's checkpoint")
	// ErrPositionBehind: a reset to a position the target's checkpoint
	// has passed; the replicator resumes from the later of the two, so
	// it would not take effect.
	ErrPositionBehind = errors.New("core: position is behind the target's checkpoint")
	// ErrPositionNotOnSource: a position the source server now behind the
	// source address cannot serve — a binlog file or offset it does not
	// have, another server's file position, a GTID state beyond its own
	// (Replicator.Locate). The replicator fails on such a position for
	// good, so it wraps ErrNonRetryable.
	ErrPositionNotOnSource = fmt.Errorf("core: the source cannot serve the position (%w)", ErrNonRetryable)
	// ErrNoFailure: a skip found no recorded failure naming the source
	// transaction to skip.
	ErrNoFailure = errors.New("core: no failed transaction to skip")
)

// AnyVersion is the version of an unconditional UpdateTask.
const AnyVersion int32 = -1

// TaskVersion returns a task's stored spec and the version of its node,
// for conditional updates (the console's ETag).
func (a *Admin) TaskVersion(ctx context.Context, name string) (*Spec, int32, error) {
	if err := checkName(name); err != nil {
		return nil, 0, fmt.Errorf("%w: task name: %v", ErrNoTask, err)
	}
	var data []byte
	var st *zk.Stat
	err := a.retry(ctx, func() (err error) {
		data, st, err = a.s.Get(ctx, a.layout.Task(name))
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, 0, fmt.Errorf("%w: %s", ErrNoTask, name)
	case err != nil:
		return nil, 0, fmt.Errorf("core: task %q: %w", name, err)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, 0, fmt.Errorf("%w: %s", ErrNoTask, name)
	}
	sp, err := decodeStoredSpec(name, data)
	if err != nil {
		return nil, st.Version, err
	}
	return sp, st.Version, nil
}

// UpdateTask replaces an existing task's spec if its node is still at
// version (AnyVersion: whatever it is), else ErrVersionConflict. Like
// AddTask with replace, the owner restarts with the new spec.
func (a *Admin) UpdateTask(ctx context.Context, sp *Spec, version int32) error {
	if err := sp.Validate(); err != nil {
		return err
	}
	old, cur, err := a.TaskVersion(ctx, sp.Name)
	if err != nil && !errors.Is(err, ErrInvalidSpec) {
		return err
	}
	if version != AnyVersion && cur != version {
		return fmt.Errorf("%w: %s is at version %d, not %d: read it again", ErrVersionConflict, sp.Name, cur, version)
	}
	acl := a.s.NodeACL()
	if sp.HasInlinePassword() {
		acl = a.s.SecretACL()
	}
	p := a.layout.Task(sp.Name)
	err = a.retry(ctx, func() error {
		if _, err := a.s.SetACL(ctx, p, acl, -1); err != nil {
			return err
		}
		_, err := a.s.Set(ctx, p, sp.Marshal(), cur)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrBadVersion):
		return fmt.Errorf("%w: %s changed while being updated: read it again", ErrVersionConflict, sp.Name)
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%w: %s", ErrNoTask, sp.Name)
	case err != nil:
		return fmt.Errorf("core: update task %q: %w", sp.Name, err)
	}
	if old != nil && old.Standby.Mode == ModeCold && (sp.Standby.Mode != ModeCold || sp.Standby.Group != old.Standby.Group) {
		a.dropGroupMembership(ctx, old.Standby.Group, sp.Name)
	}
	if sp.Standby.Mode == ModeCold {
		if err := a.retry(ctx, func() error { return a.s.EnsurePath(ctx, a.layout.GroupTask(sp.Standby.Group, sp.Name)) }); err != nil {
			return fmt.Errorf("core: update task %q: add to group %q: %w", sp.Name, sp.Standby.Group, err)
		}
	}
	return nil
}

// Handover is what Admin.Handover did.
type Handover struct {
	Task string `json:"task"`
	From string `json:"from"` // the instance that owned the task
	To   string `json:"to"`   // the next in line, which takes over
}

// Handover makes the owner of a hot-standby task give it to the next
// instance in line, e.g. before maintenance of the owner's machine: it
// deletes the owner's instance node (if it is still the owner's), which
// ends its term as a lost session would. The new owner is fenced from the
// old one by its larger epoch; the old owner's core enters the line again
// at its end. It refuses (ErrNoStandby) when no instance stands by.
func (a *Admin) Handover(ctx context.Context, name string) (Handover, error) {
	h := Handover{Task: name}
	ts, err := a.Task(ctx, name)
	if err != nil {
		return h, err
	}
	if ts.Spec != nil && ts.Spec.Standby.Mode == ModeCold {
		return h, fmt.Errorf("%w: %s is a cold-standby task: its group's cores balance it (docs/replication.md)", ErrNoStandby, name)
	}
	if len(ts.Instances) < 2 {
		return h, fmt.Errorf("%w: %s has %d instance(s): start another core with --task %s first", ErrNoStandby, name, len(ts.Instances), name)
	}
	h.From, h.To = ts.Instances[0].Name, ts.Instances[1].Name
	p := a.layout.Instances(name) + "/" + h.From
	err = a.retry(ctx, func() error { return a.s.Delete(ctx, p, -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return h, fmt.Errorf("core: hand over %q: %s is gone already (another handover or the owner's end): look again", name, h.From)
	}
	if err != nil {
		return h, fmt.Errorf("core: hand over %q: delete %s: %w", name, p, err)
	}
	return h, nil
}

// PositionReset is what Admin.ResetPosition did.
type PositionReset struct {
	Task   string   `json:"task"`
	Before Position `json:"before"`
	After  Position `json:"after"`
}

// ParsePosition parses a position an operator gives a task (ctl task
// reset-position --to, the console): a binlog position "file:pos"
// (mysql-bin.000003:4), taken to be of the server behind the source
// address; "file:pos@server", a position in the binlog of the source
// server named as Position.Server records it (mariadb:<server_id> or
// mysql:<server_uuid>); or a GTID set, MariaDB (0-1-57,1-2-9) or MySQL
// (uuid:1-57), which is of no one server.
func ParsePosition(s string) (Position, error) {
	s = strings.TrimSpace(s)
	p, isFile, err := replication.ParseServerFilePos(s)
	switch {
	case err != nil:
		return Position{}, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	case isFile:
		return p, nil
	}
	g, _, err := replication.ParseGTIDSet(s)
	if err != nil {
		return Position{}, fmt.Errorf("%w: position %q: want file:pos (mysql-bin.000003:4), file:pos@server (mysql-bin.000003:4@mariadb:2) or a GTID set (0-1-57 on MariaDB, uuid:1-57 on MySQL): %w",
			ErrInvalidSpec, s, err)
	}
	return Position{GTID: g}, nil
}

// checkResetTarget refuses a reset to pos unless pos is at or after the
// target's checkpoint cp: the replicator resumes from the later of the
// two, and one it cannot order against cp it leaves for cp (see
// replication.ComparePositions), so such a reset would change nothing.
func checkResetTarget(flavor string, pos, cp Position) error {
	c, ok := replication.ComparePositions(flavor, pos, cp)
	switch {
	case !ok:
		return fmt.Errorf("%w: %s and the target's checkpoint %s are not of one binlog (another server, or another base name), and no GTID state orders them; "+
			"give a position in the checkpoint's binlog (%s) or a GTID set that contains the checkpoint's, or, for a task whose source moved to another server, see docs/replication.md#source-failover",
			ErrPositionUnordered, pos, cp, cp.File)
	case c < 0:
		return fmt.Errorf("%w: %s is before %s, which the target has committed; going back needs the target's data and checkpoint row restored first",
			ErrPositionBehind, pos, cp)
	}
	return nil
}

// ResetPosition moves a stopped task's lastCommit to pos, clearing a
// recorded failure: the task resumes there when started, e.g. after the
// event at the old position was applied by hand, or to skip past it.
//
// pos is first completed on the source (Replicator.Locate, through e): a
// file position of no server is of the server behind the source address,
// and gets its GTID state on MariaDB; one the source cannot serve —
// another server's file position, a GTID set it has not written — is
// refused (ErrPositionNotOnSource). A GTID set alone is stored as it is,
// and the replicator resumes from it by GTID. The target's checkpoint then
// bounds it: the replicator resumes from the later of lastCommit and that
// checkpoint, so a position behind it is refused (ErrPositionBehind), and
// one that cannot be ordered against it (ErrPositionUnordered), rather
// than silently ignored.
//
// It refuses (ErrTaskBusy) unless the task is stopped and none of its
// instances is RUNNING, as ResetEpoch does.
func (a *Admin) ResetPosition(ctx context.Context, name string, pos Position, e Engine, log *slog.Logger) (PositionReset, error) {
	res := PositionReset{Task: name, After: pos}
	ts, err := a.stoppedTask(ctx, name)
	if err != nil {
		return res, err
	}
	if ts.LastCommit == nil {
		return res, fmt.Errorf("core: reset position of task %q: it has no lastCommit yet (never ran): set its spec's start instead", name)
	}
	if err := a.s.CheckTrusted(ctx, a.layout.Root, a.layout.Task(name)); err != nil {
		return res, fmt.Errorf("core: reset position of task %q: %w", name, err)
	}
	r, err := e.Open(ctx, ts.Spec, log)
	if err != nil {
		return res, fmt.Errorf("core: reset position of task %q: %w", name, err)
	}
	defer r.Close()
	if pos, err = r.Locate(ctx, pos); err != nil {
		return res, fmt.Errorf("core: reset position of task %q: %w", name, err)
	}
	res.After = pos
	cp, ok, err := r.TargetCheckpoint(ctx)
	if err != nil {
		return res, fmt.Errorf("core: reset position of task %q: read the target's checkpoint: %w", name, err)
	}
	if ok && !cp.Position.IsZero() {
		if err := checkResetTarget(ts.Spec.Source.Flavor, pos, cp.Position); err != nil {
			return res, fmt.Errorf("core: reset position of task %q: %w", name, err)
		}
	}
	err = a.editLastCommit(ctx, name, func(lc *LastCommit, err error) (bool, error) {
		if err != nil {
			return false, fmt.Errorf("%s: %w", a.layout.LastCommit(name), err)
		}
		res.Before = lc.Position()
		lc.setPosition(pos)
		lc.Failure = nil
		return true, nil
	})
	if err != nil {
		return res, fmt.Errorf("core: reset position of task %q: %w", name, err)
	}
	return res, nil
}

// failedAtRe finds, in a recorded failure, the end of the source
// transaction the target refused (replication.ApplyError's wording).
var failedAtRe = regexp.MustCompile(`source transaction ending at ([A-Za-z0-9_.-]+\.[0-9]+):([0-9]+)(?: \(gtid ([^)]*)\))?`)

// SkipEvent skips the source transaction a stopped task failed on for
// good: it resets the task's position (ResetPosition, with its checks) to
// the end of that transaction, as the recorded failure names it, so the
// task resumes with the next one when started. The transaction's changes
// are lost on the target: for a row the target already had, or a change
// an operator applied by hand. It refuses (ErrNoFailure) a task without a
// recorded failure that names the transaction.
func (a *Admin) SkipEvent(ctx context.Context, name string, e Engine, log *slog.Logger) (PositionReset, error) {
	ts, err := a.stoppedTask(ctx, name)
	if err != nil {
		return PositionReset{Task: name}, err
	}
	if ts.LastCommit == nil || ts.LastCommit.Failure == nil {
		return PositionReset{Task: name}, fmt.Errorf("%w: %s has no recorded failure: nothing to skip", ErrNoFailure, name)
	}
	m := failedAtRe.FindStringSubmatch(ts.LastCommit.Failure.Error)
	if m == nil {
		return PositionReset{Task: name}, fmt.Errorf("%w: %s failed with %q, which names no source transaction: reset its position by hand", ErrNoFailure, name, ts.LastCommit.Failure.Error)
	}
	n, err := strconv.ParseUint(m[2], 10, 32)
	if err != nil {
		return PositionReset{Task: name}, fmt.Errorf("%w: %s: position %s:%s out of range", ErrNoFailure, name, m[1], m[2])
	}
	return a.ResetPosition(ctx, name, Position{File: m[1], Pos: uint32(n), GTID: m[3]}, e, log)
}

// stoppedTask returns a task that is stopped with no instance RUNNING.
func (a *Admin) stoppedTask(ctx context.Context, name string) (TaskStatus, error) {
	ts, err := a.Task(ctx, name)
	if err != nil {
		return ts, err
	}
	if ts.Spec == nil {
		return ts, fmt.Errorf("%w: %s: %s", ErrNoTask, name, ts.SpecError)
	}
	if ts.Spec.State != DesiredStopped {
		return ts, fmt.Errorf("%w: %s is %s: stop it first", ErrTaskBusy, name, ts.Spec.State)
	}
	for _, in := range ts.Instances {
		if in.State.State == StateRunning {
			return ts, fmt.Errorf("%w: %s is still RUNNING on %s: wait for it to pause", ErrTaskBusy, name, in.Name)
		}
	}
	return ts, nil
}
