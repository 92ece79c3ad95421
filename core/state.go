package core

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/shepherd-dev/shepherd/replication"
)

// docVersion is the schema version of the JSON documents below.
const docVersion = 1

// Instance states, as the data of instance nodes shows them.
const (
	// StateStandby: waiting to take over (hot standby).
	StateStandby = "STANDBY"
	// StateRunning: this instance runs the task. With an Error it is
	// retrying a failure that may pass (a server unreachable).
	StateRunning = "RUNNING"
	// StatePaused: this instance owns the task but does not apply, because
	// the task's desired state is stopped.
	StatePaused = "PAUSED"
	// StateFailed: this instance owns the task but stopped applying after
	// an error that retrying would not fix (see Error); it waits for the
	// spec to change (shepherd ctl task start resets it).
	StateFailed = "FAILED"
)

// Position is a place in the source's binlog: replication's one position
// type, with its one ordering (replication.ComparePositions).
type Position = replication.Position

// InstanceState is the data of an instance node: what the instance is
// doing, for operators and the monitor.
type InstanceState struct {
	Version int    `json:"version"`
	State   string `json:"state"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	// Epoch is the fencing epoch of the instance's term while it owns the
	// task (RUNNING, PAUSED, FAILED).
	Epoch int64 `json:"epoch,omitempty"`
	// Position is the last position committed to the target.
	Position Position `json:"position"`
	// LagSeconds is how far the target is behind the source: the age of
	// the last event applied, or 0 when caught up.
	LagSeconds float64 `json:"lagSeconds"`
	// RowsPerSecond is the apply rate over the last report interval.
	RowsPerSecond float64 `json:"rowsPerSecond"`
	// Rows is the rows applied in this term (copied ones included).
	Rows int64 `json:"rows"`
	// Snapshot is the table copy's progress while a task with start:
	// snapshot copies (and Done once it has); nil otherwise.
	Snapshot *replication.SnapshotProgress `json:"snapshot,omitempty"`
	// Error is why the instance is FAILED, or, while RUNNING, the failure
	// it is retrying.
	Error string `json:"error,omitempty"`
	// RetryAt is when a RUNNING instance with an Error tries again.
	RetryAt *time.Time `json:"retryAt,omitempty"`
	// Since is when the instance entered State.
	Since time.Time `json:"since"`
	// Updated is when this document was written.
	Updated time.Time `json:"updated"`
}

// Marshal encodes the state as instance node data.
func (st *InstanceState) Marshal() []byte { return mustJSON(st) }

// ParseInstanceState decodes instance node data.
func ParseInstanceState(data []byte) (InstanceState, error) {
	var st InstanceState
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("core: instance state: %w", err)
	}
	return st, nil
}

// LastCommit is the checkpoint mirrored in tasks/<task>/lastCommit: the
// last source position committed to the target, and who committed it. A
// new RUNNING instance resumes from the later of it and the target's own
// checkpoint.
type LastCommit struct {
	Version int    `json:"version"`
	File    string `json:"file"`
	Pos     uint32 `json:"pos"`
	GTID    string `json:"gtid"`
	// Server is the source server the position is of
	// (replication.Position.Server); empty when unknown.
	Server string `json:"server,omitempty"`
	// Time is when the position was committed.
	Time time.Time `json:"time"`
	// Owner is the instance node name (host-seq) of the writer.
	Owner string `json:"owner"`
	// Epoch is the writer's fencing epoch: the creation zxid of its
	// instance node. Writers with a smaller epoch are refused.
	Epoch int64 `json:"epoch"`
	// Failure records a non-retryable failure, so that instances taking
	// over do not retry it forever.
	Failure *Failure `json:"failure,omitempty"`
	// Source is the host:port of the source candidate the task reads
	// from (Spec.ActiveSource); empty before the first run.
	Source string `json:"source,omitempty"`
	// Switch is the task's last change of source, automatic or asked for.
	Switch *SourceSwitch `json:"switch,omitempty"`
	// Followed is the MariaDB source history the target followed up to
	// the position (Checkpoint.Followed), "" when unknown: the monitor
	// judges source candidates against it (TakeoverProblem).
	Followed string `json:"followed,omitempty"`
}

// SourceSwitch records a task leaving one source candidate for another.
type SourceSwitch struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Reason says why: the source unreachable, read-only while To was
	// writable, or an operator's request (and whose).
	Reason string    `json:"reason"`
	Owner  string    `json:"owner"` // the instance that switched
	Time   time.Time `json:"time"`
}

// Failure is a non-retryable failure of a task.
type Failure struct {
	Error string `json:"error"`
	// Attempts is how many instances have failed this way in a row.
	Attempts int       `json:"attempts"`
	Owner    string    `json:"owner"`
	Time     time.Time `json:"time"`
}

// Position returns the checkpointed position.
func (lc *LastCommit) Position() Position {
	return Position{File: lc.File, Pos: lc.Pos, GTID: lc.GTID, Server: lc.Server}
}

// setPosition makes p the checkpointed position.
func (lc *LastCommit) setPosition(p Position) {
	lc.File, lc.Pos, lc.GTID, lc.Server = p.File, p.Pos, p.GTID, p.Server
}

// Marshal encodes the checkpoint as lastCommit data.
func (lc *LastCommit) Marshal() []byte { return mustJSON(lc) }

// ParseLastCommit decodes lastCommit data.
func ParseLastCommit(data []byte) (LastCommit, error) {
	var lc LastCommit
	if err := json.Unmarshal(data, &lc); err != nil {
		return lc, fmt.Errorf("core: lastCommit: %w", err)
	}
	return lc, nil
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("core: marshal %T: %v", v, err)) // plain structs always encode
	}
	return data
}
