package cluster

import (
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/replication"
)

// TestViewTaskUnderFaults: the one derivation of a task's state and lag,
// for each fault an operator meets. The target down used to read
// "RUNNING · lag 0" on the console while the monitor said 1m30s behind.
func TestViewTaskUnderFaults(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	pos := func(p uint32) core.Position { return core.Position{File: "bin.000001", Pos: p} }
	task := func(desired string, lc core.Position, owner *core.InstanceState, standbys int) core.TaskStatus {
		ts := core.TaskStatus{Name: "t", Spec: &core.Spec{Name: "t", State: desired}}
		if !lc.IsZero() {
			ts.LastCommit = &core.LastCommit{File: lc.File, Pos: lc.Pos, Time: now.Add(-time.Minute)}
		}
		if owner != nil {
			ts.Instances = append(ts.Instances, core.Instance{Name: "h1-0000000001", State: *owner})
		}
		for range standbys {
			ts.Instances = append(ts.Instances, core.Instance{Name: "h2-0000000002", State: core.InstanceState{State: core.StateStandby}})
		}
		return ts
	}
	running := func(p uint32, lag float64, err string) *core.InstanceState {
		return &core.InstanceState{State: core.StateRunning, Position: pos(p), LagSeconds: lag, Error: err, RowsPerSecond: 10}
	}
	// The source was at 900 a minute and a half ago, and is at 3900 now.
	moved := []PosSample{{At: now.Add(-90 * time.Second), Pos: pos(900)}, {At: now.Add(-time.Second), Pos: pos(3900)}}
	idle := []PosSample{{At: now.Add(-time.Hour), Pos: pos(900)}, {At: now.Add(-time.Second), Pos: pos(900)}}
	for _, tt := range []struct {
		name    string
		ts      core.TaskStatus
		samples []PosSample
		state   string
		lag     string
	}{
		{"caught up with an idle source", task(core.DesiredRunning, pos(900), running(900, 3600, ""), 1), idle, TaskRunning, "0s"},
		{"running, no monitor: its own report", task(core.DesiredRunning, pos(900), running(900, 1.5, ""), 1), nil, TaskRunning, "1.5s"},
		{"target down: retrying, and the source moved on", task(core.DesiredRunning, pos(900), running(900, 0, "retrying: connect to target: refused"), 1), moved, TaskRetrying, "1m30s"},
		{"source down: retrying, lag unknown", task(core.DesiredRunning, pos(900), running(900, 0, "retrying: connect to source: refused"), 1), nil, TaskRetrying, "unknown"},
		{"core killed: only a standby", task(core.DesiredRunning, pos(900), nil, 1), moved, TaskNotRunning, "1m30s"},
		{"no core at all", task(core.DesiredRunning, pos(900), nil, 0), nil, TaskNotRunning, "unknown"},
		{"stopped", task(core.DesiredStopped, pos(900), &core.InstanceState{State: core.StatePaused}, 0), moved, TaskStopped, "-"},
		{"failed", task(core.DesiredRunning, pos(900), &core.InstanceState{State: core.StateFailed, Error: "duplicate key"}, 0), moved, TaskFailed, "1m30s"},
		{"core killed before the monitor saw the source at the task's position", task(core.DesiredRunning, pos(900), nil, 1),
			[]PosSample{{At: now.Add(-time.Second), Since: now.Add(-2 * time.Minute), Pos: pos(3900)}}, TaskNotRunning, "2m0s"},
		{"spec unreadable", core.TaskStatus{Name: "t", SpecError: "bad json"}, nil, TaskInvalid, "unknown"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := ViewTask(tt.ts, tt.samples, now)
			if v.State != tt.state || v.LagText() != tt.lag {
				t.Fatalf("ViewTask = %s · lag %s (%+v), want %s · lag %s", v.State, v.LagText(), v, tt.state, tt.lag)
			}
			if (v.State == TaskRetrying || v.State == TaskFailed) && v.Error == "" {
				t.Fatalf("%s without its error", v.State)
			}
		})
	}
}

// TestViewTaskSnapshot: a copying owner's report becomes rows against
// the estimate, rate and time left; a done copy has no rate or ETA.
func TestViewTaskSnapshot(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	copying := &replication.SnapshotProgress{Rows: 4000, Estimated: 10000, Tables: []replication.TableCopy{
		{DB: "shop", Table: "a", Rows: 3000, Estimated: 3000, Done: true}, {DB: "shop", Table: "b", Rows: 1000, Estimated: 7000}}}
	ts := core.TaskStatus{Name: "t", Spec: &core.Spec{Name: "t", State: core.DesiredRunning}, Instances: []core.Instance{
		{Name: "h1-0000000001", State: core.InstanceState{State: core.StateRunning, RowsPerSecond: 2000, Snapshot: copying}}}}
	v := ViewTask(ts, nil, now)
	if v.Snapshot == nil || v.Snapshot.Rows != 4000 || v.Snapshot.RowsPerSecond != 2000 || v.Snapshot.ETA != 3*time.Second || len(v.Snapshot.Tables) != 2 {
		t.Fatalf("snapshot view = %+v", v.Snapshot)
	}
	done := *copying
	done.Done = true
	ts.Instances[0].State.Snapshot = &done
	if v := ViewTask(ts, nil, now); v.Snapshot == nil || v.Snapshot.ETA != 0 || v.Snapshot.RowsPerSecond != 0 {
		t.Fatalf("done snapshot view = %+v", v.Snapshot)
	}
	ts.Instances[0].State = core.InstanceState{State: core.StateStandby, Snapshot: copying}
	if v := ViewTask(ts, nil, now); v.Snapshot != nil {
		t.Fatalf("a standby's report shows a copy: %+v", v.Snapshot)
	}
}
