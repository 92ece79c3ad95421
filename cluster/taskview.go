package cluster

import (
	"fmt"
	"time"

	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/replication"
)

// What a replication task is doing, as every view shows it (ViewTask).
const (
	// TaskRunning: an instance applies, with no failure.
	TaskRunning = "RUNNING"
	// TaskRetrying: the RUNNING instance is retrying a failure that may
	// pass (a server unreachable); TaskView.Error says which.
	TaskRetrying = "RETRYING"
	// TaskFailed: the owner stopped on a failure retrying would not fix,
	// or lastCommit records one.
	TaskFailed = "FAILED"
	// TaskStopped: the desired state is stopped.
	TaskStopped = "STOPPED"
	// TaskNotRunning: the desired state is running, but no instance
	// applies: no core serves the task, or only standbys.
	TaskNotRunning = "NOT RUNNING"
	// TaskInvalid: the spec cannot be read.
	TaskInvalid = "INVALID"
)

// TaskView is a task's state, position, lag and throughput, derived one
// way (ViewTask) for ctl, the console and the monitor, so that they never
// disagree in front of a user.
type TaskView struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Owner is the instance that owns the task, if any.
	Owner string `json:"owner,omitempty"`
	// Error is why the task is FAILED, RETRYING or INVALID.
	Error string `json:"error,omitempty"`
	// Position is the furthest position the task is known to have
	// committed: lastCommit, or its running owner's report if further.
	Position core.Position `json:"position"`
	// Lag is how far the target is behind the source's binlog end; it is
	// only meaningful when LagKnown.
	Lag      time.Duration `json:"lag"`
	LagKnown bool          `json:"lagKnown"`
	// RowsPerSecond is the owner's apply rate; 0 unless RUNNING.
	RowsPerSecond float64 `json:"rowsPerSecond"`
	// Snapshot is the table copy of a task with start: snapshot, as its
	// running owner reports it; nil when there is none to show.
	Snapshot *SnapshotView `json:"snapshot,omitempty"`
}

// SnapshotView is a task's table copy: rows copied against the
// estimate, per table and in total, with the rate and the time left.
type SnapshotView struct {
	replication.SnapshotProgress
	// RowsPerSecond is the owner's rate while it copies (the copy's
	// rows are its commits then); 0 once done.
	RowsPerSecond float64 `json:"rowsPerSecond"`
	// ETA is the time left at that rate for the estimated rows not yet
	// copied; 0 when unknown or done.
	ETA time.Duration `json:"eta"`
}

// snapshotView derives the copy's view from the owner's report.
func snapshotView(p *replication.SnapshotProgress, rate float64) *SnapshotView {
	v := &SnapshotView{SnapshotProgress: *p}
	if p.Done {
		return v
	}
	v.RowsPerSecond = rate
	if left := p.Estimated - p.Rows; left > 0 && rate > 0 {
		v.ETA = time.Duration(float64(left) / rate * float64(time.Second)).Round(time.Second)
	}
	return v
}

// Percent is how much of the estimated rows is copied, 0 to 100 (100
// once done); -1 when there is no estimate.
func (v *SnapshotView) Percent() float64 {
	switch {
	case v.Done:
		return 100
	case v.Estimated <= 0:
		return -1
	}
	return min(100, 100*float64(v.Rows)/float64(v.Estimated))
}

// Text sums the copy up for people, as ctl and the console show it: rows
// against the estimate, rate and time left.
func (v *SnapshotView) Text() string {
	if v.Done {
		return fmt.Sprintf("done: %d rows in %d tables copied", v.Rows, len(v.Tables))
	}
	s := fmt.Sprintf("copying: %d of ~%d rows", v.Rows, v.Estimated)
	if pc := v.Percent(); pc >= 0 {
		s += fmt.Sprintf(" (%.0f%%)", pc)
	}
	s += fmt.Sprintf(", %.0f rows/s", v.RowsPerSecond)
	if v.ETA > 0 {
		s += ", about " + v.ETA.String() + " left"
	}
	return s
}

// PosSample is the source's position at a time, as the active monitor
// samples it at every evaluation. A run of samples at one position is
// kept as one: At is the last time the source was seen there, Since the
// first.
type PosSample struct {
	At    time.Time     `json:"at"`
	Since time.Time     `json:"since,omitzero"`
	Pos   core.Position `json:"pos"`
}

// ViewTask derives what task ts is doing at now. samples are the
// monitor's readings of the task's source, oldest first (nil when there
// are none): with them the lag is measured against the source's binlog
// end, so it grows while the target is down or no core runs the task;
// without them only a RUNNING owner's own report (the age of the last
// event it applied) is known.
func ViewTask(ts core.TaskStatus, samples []PosSample, now time.Time) TaskView {
	v := TaskView{Name: ts.Name}
	v.Position, v.State = taskPosition(ts), TaskNotRunning
	owner, hasOwner := ts.Owner()
	if hasOwner {
		v.Owner = owner.Name
	}
	reported := time.Duration(-1)
	switch {
	case ts.Spec == nil:
		v.State, v.Error = TaskInvalid, ts.SpecError
	case hasOwner && owner.State.State == core.StateFailed:
		v.State, v.Error = TaskFailed, owner.State.Error
	case ts.LastCommit != nil && ts.LastCommit.Failure != nil && !(hasOwner && owner.State.State == core.StateRunning && owner.State.Error == ""):
		v.State, v.Error = TaskFailed, ts.LastCommit.Failure.Error
	case ts.Spec.State == core.DesiredStopped:
		v.State = TaskStopped
	case hasOwner && owner.State.State == core.StateRunning && owner.State.Error != "":
		v.State, v.Error = TaskRetrying, owner.State.Error
	case hasOwner && owner.State.State == core.StateRunning:
		v.State, v.RowsPerSecond = TaskRunning, owner.State.RowsPerSecond
		reported = time.Duration(owner.State.LagSeconds * float64(time.Second))
	}
	if hasOwner && owner.State.State == core.StateRunning && owner.State.Snapshot != nil {
		v.Snapshot = snapshotView(owner.State.Snapshot, owner.State.RowsPerSecond)
	}
	if ts.Spec != nil && ts.Spec.State == core.DesiredStopped {
		return v // a stopped task is not late: nobody wants it to move
	}
	if lag, ok := Lag(samples, v.Position, max(reported, 0), now); ok && !v.Position.IsZero() {
		v.Lag, v.LagKnown = lag, true
	} else if reported >= 0 {
		v.Lag, v.LagKnown = reported, true
	}
	return v
}

// taskPosition is the furthest position the task is known to have
// committed: lastCommit, or its running owner's report if further.
func taskPosition(ts core.TaskStatus) core.Position {
	var pos core.Position
	if ts.LastCommit != nil {
		pos = ts.LastCommit.Position()
	}
	if o, ok := ts.Owner(); ok && o.State.State == core.StateRunning && !o.State.Position.IsZero() {
		if c, cmpOK := replication.CompareFilePositions(o.State.Position, pos); pos.IsZero() || (cmpOK && c > 0) {
			pos = o.State.Position
		}
	}
	return pos
}

// Lag is how far behind the source a task at position task is, from the
// source's sampled positions (oldest first): zero when the task has the
// source's current position (an idle source is never late, however old
// its last event), else the time since the source was last sampled at a
// position the task has reached — everything written since may be
// missing. With no such sample remembered it is at least the time since
// the source was first seen at the oldest sample's position, and at least
// what the task itself reports (reported).
// known is false without samples, or when the positions cannot be
// compared (another server's binlog).
func Lag(samples []PosSample, task core.Position, reported time.Duration, now time.Time) (lag time.Duration, known bool) {
	if len(samples) == 0 {
		return 0, false
	}
	cur := samples[len(samples)-1]
	c, ok := replication.CompareFilePositions(task, cur.Pos)
	if !ok {
		return 0, false
	}
	if c >= 0 {
		return 0, true
	}
	for i := len(samples) - 2; i >= 0; i-- {
		if c, ok := replication.CompareFilePositions(task, samples[i].Pos); ok && c >= 0 {
			return now.Sub(samples[i].At), true
		}
	}
	first := samples[0].Since
	if first.IsZero() { // a sample of a monitor from before Since
		first = samples[0].At
	}
	return max(now.Sub(first), reported), true
}

// LagText renders the lag for people: "0s", "1m30s", "unknown".
func (v TaskView) LagText() string {
	switch {
	case v.State == TaskStopped:
		return "-"
	case !v.LagKnown:
		return "unknown"
	}
	return HumanDuration(v.Lag)
}

// HumanDuration renders a lag or an age for people: "850ms", "12.5s",
// "3m5s" — the one rendering ctl and the console's pages share.
func HumanDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
