package replication

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
)

// A Sink is where a task's row changes go: the target, described but not
// yet connected. The stream — reading the source's binlog, filtering,
// routing, grouping into transactions, positions, fencing by epoch —
// is the same for every sink; a sink writes what the stream hands it and
// keeps the task's checkpoint, committed with what it covers.
//
// The MySQL sink (MySQLSink, the default when Config.Sink is nil) writes
// rows into a MySQL or MariaDB target with the checkpoint row in the same
// transaction. Package replication/natssink publishes them to a NATS
// JetStream stream, package replication/kafkasink to Kafka topics.
//
// What every sink must guarantee, so that Run stays exactly once:
//
//   - its checkpoint never runs ahead of what the target durably holds:
//     a commit is reported (SinkRun.Begin's committed) only once the
//     target has taken every change up to it;
//   - Claim with an epoch smaller than the stored one fails with an error
//     wrapping ErrFenced, and once an epoch has claimed, no commit of a
//     smaller one succeeds;
//   - re-writing the changes after the checkpoint (what a Run resuming
//     from it does after a crash) has no effect beyond the first write —
//     MySQL by committing the checkpoint in the rows' transaction,
//     JetStream by deduplicating message ids, Kafka by committing the
//     checkpoint in the events' transaction.
type Sink interface {
	// String names the target for logs and messages, without secrets.
	String() string
	// Open connects and prepares the checkpoint storage (creating it if
	// missing). An unreachable target is a plain error the caller may
	// retry; one that can never work wraps ErrNonRetryable.
	Open(ctx context.Context, env SinkEnv) (OpenSink, error)
	// DryRun checks, writing nothing, that a task could write there: the
	// "test connection" of the console and the target half of DryRun.
	DryRun(ctx context.Context, env SinkEnv) []Check
}

// OpenSink is a connected sink of one task.
type OpenSink interface {
	// Claim begins a run of owner's term epoch: it raises the stored
	// epoch to epoch, failing with ErrFenced if a larger one is stored,
	// and returns the run and the checkpoint as stored (zero Position when
	// nothing was committed yet). The run holds what it needs (a
	// connection) until Close.
	Claim(ctx context.Context, epoch int64, owner string) (SinkRun, Checkpoint, error)
	// Checkpoint returns the stored checkpoint; ok is false when nothing
	// has been committed for the task yet.
	Checkpoint(ctx context.Context) (cp Checkpoint, ok bool, err error)
	// ResetEpoch sets the stored epoch to 0, keeping the position, and
	// returns the epoch it held (Replicator.ResetEpoch).
	ResetEpoch(ctx context.Context) (int64, error)
	// CheckpointPlace names where the checkpoint is kept, for messages
	// telling an operator what to delete.
	CheckpointPlace() string
	// Close releases the connections.
	Close() error
}

// SinkRun writes one Run attempt's changes. It is used by one goroutine,
// Run's, in this order: Begin once, then Write and Flush (and Landed when
// InFlight delivers) until something fails or the Run ends, then Close.
type SinkRun interface {
	// Begin tells the run where the stream starts (start, a transaction
	// boundary), the MariaDB history followed up to it (empty on MySQL),
	// and committed, to be called with every commit once the target holds
	// it: the position of its last source transaction and the history
	// followed up to it (History.String, as committed with it), that
	// transaction's source commit time (seconds), and the rows and source
	// transactions it made durable.
	Begin(start Position, followed History, committed func(pos Position, followed string, ts uint32, rows, txns int))
	// Write takes a segment (a source transaction or a piece of one, or a
	// DDL statement) and leaves it in the open batch; a sink may commit by
	// itself when it must (the MySQL sink commits DDL on its own).
	Write(ctx context.Context, seg Segment) error
	// Flush commits the open batch if it should now: the batch is full,
	// or the stream has nothing more ready (more is false) and the target
	// nothing in flight. It must not split a source transaction.
	Flush(ctx context.Context, more bool) error
	// InFlight is a channel on which the outcome of work the run handed
	// to the target arrives while Run waits for the source; nil when none.
	// Run passes what it receives to Landed.
	InFlight() <-chan error
	// Landed takes an outcome received from InFlight.
	Landed(ctx context.Context, err error) error
	// Idle reports whether nothing is open or in flight (for lag: an idle
	// sink at the end of the source is not behind).
	Idle() bool
	// Close abandons what is not committed and releases the run. It may
	// be called more than once.
	Close()

	// The snapshot copy (start: snapshot, see snapshot.go) writes through
	// the same run, between source transactions: PrepareTable once per
	// table before its first rows, then CopyRows and CommitCopy per
	// chunk. A sink that cannot copy yet returns ErrSnapshotUnsupported
	// (and refuses SinkEnv.Snapshot at Open and DryRun already).

	// PrepareTable makes the target ready for the rows of source table
	// t: it creates the table from the source's definition (create, a
	// CREATE TABLE naming the routed table) when it is missing, and
	// otherwise checks that its columns are t's, naming the first that
	// differs. It waits until nothing is in flight.
	PrepareTable(ctx context.Context, t SnapshotTable, create string) error
	// CopyRows adds rows read from source table db.table (source names,
	// full rows in the source's column order) to the open batch: what a
	// read of the table says is there, written over whatever the target
	// holds under the same key.
	CopyRows(ctx context.Context, db, table string, rows [][]any) error
	// CommitCopy commits the batch with the checkpoint at, a source
	// position the target now holds, and the copy's cursor state (an
	// opaque string the sink returns in Checkpoint.Snapshot), fenced by
	// epoch like every commit. It returns once the target has answered.
	CommitCopy(ctx context.Context, at Position, state string, rows int) error
}

// SnapshotTable is a source table the snapshot copies, with the columns
// the source has (in order) and the names it gets on the target.
type SnapshotTable struct {
	DB, Table     string // source names
	ToDB, ToTable string // after routes
	Columns       []SnapshotColumn
}

// SnapshotColumn is a source column as information_schema describes it.
type SnapshotColumn struct {
	Name     string
	DataType string // DATA_TYPE, lower case
}

// SinkEnv is what the stream tells a sink about its task.
type SinkEnv struct {
	// Task names the task: the key of its checkpoint.
	Task string
	// Log is the task's logger.
	Log *slog.Logger
	// BatchRows is Config.BatchRows: rows per commit when small source
	// transactions are grouped.
	BatchRows int
	// Snapshot says the task starts with a copy of the source's tables
	// (Config.Snapshot): a sink that cannot write one refuses it at Open
	// and DryRun with ErrSnapshotUnsupported.
	Snapshot bool
	filter   *filter
	rawLog   *slog.Logger // Config.Logger, without the task
}

// Route returns the target names of a source table, after the task's
// routes (none in a SinkEnv made outside Open, as tests make them).
func (e SinkEnv) Route(db, table string) (string, string) {
	if e.filter == nil {
		return db, table
	}
	return e.filter.route(db, table)
}

// RouteDB returns the target name of a source database.
func (e SinkEnv) RouteDB(db string) string {
	if e.filter == nil {
		return db
	}
	return e.filter.routeDB(db)
}

// PlanDDL decides whether a DDL statement run in database schema on the
// source concerns the task's tables, and returns it with its names
// routed and every table qualified (what the MySQL sink runs); when it
// does not, ok is false and why says so.
func (e SinkEnv) PlanDDL(schema, query string) (routed string, ok bool, why string, err error) {
	f := e.filter
	if f == nil {
		var err error
		if f, err = newFilter(nil, nil, nil); err != nil {
			return "", false, "", err
		}
	}
	p, err := parseDDL(query).plan(schema, f)
	if err != nil {
		return "", false, "", err
	}
	return p.sql, p.apply, p.why, nil
}

// History is the MariaDB history a sink has followed (see followedState):
// the highest sequence number of every domain and server whose
// transactions it holds. A sink keeps it with its checkpoint so that a
// source failover can tell a transaction the target has from an errant
// one. Empty on MySQL, whose GTID sets are complete.
type History struct{ s followedState }

// ParseHistory reads a History as String writes it ("" is empty).
func ParseHistory(s string) (History, error) {
	f, err := parseFollowedState(s)
	return History{f}, err
}

// Add records the transaction seg ends, if it is the last segment of a
// MariaDB transaction with a GTID.
func (h *History) Add(seg *Segment) {
	if seg.Last && seg.MariaGTID != nil {
		h.s.add(seg.MariaGTID)
	}
}

// Clone returns a copy that Add on h does not change.
func (h History) Clone() History { return History{append(followedState(nil), h.s...)} }

// String is the history as "d-s-n,d-s-n".
func (h History) String() string { return h.s.String() }

// EventBatch is the open batch of a sink that publishes events rather
// than writing rows (NATS JetStream, Kafka): what it has taken since its
// last commit, when that commit is due, and the report of it to the
// stream (SinkRun.Begin's committed). One bookkeeping for every such sink.
type EventBatch struct {
	Rows, Txns int      // rows and whole source transactions taken
	End        Position // the end of the last whole source transaction
	TS         uint32   // its source commit time
	// Followed is the MariaDB history followed up to End.
	Followed History
	// Partial: a source transaction is part-way in, and no commit may
	// split it.
	Partial   bool
	committed func(pos Position, followed string, ts uint32, rows, txns int)
}

// Begin starts the batch of a run (SinkRun.Begin's arguments).
func (b *EventBatch) Begin(followed History, committed func(pos Position, followed string, ts uint32, rows, txns int)) {
	b.Followed, b.committed = followed.Clone(), committed
}

// Took records a segment written into the batch.
func (b *EventBatch) Took(seg *Segment) {
	b.Rows += seg.Rows
	b.Partial = !seg.Last
	if seg.Last {
		b.Txns++
		b.End, b.TS = seg.End, seg.TS
		b.Followed.Add(seg)
	}
}

// Due reports whether the batch should commit now (SinkRun.Flush): it
// holds whole transactions only, and is full or the stream has no more
// ready.
func (b *EventBatch) Due(batchRows int, more bool) bool {
	return !b.Partial && b.Txns > 0 && (b.Rows >= batchRows || !more)
}

// Idle reports whether nothing is open (SinkRun.Idle).
func (b *EventBatch) Idle() bool { return b.Txns == 0 && !b.Partial }

// Stored is the checkpoint a commit of the batch writes: base (the one
// last written) moved to the batch's end and history, under epoch and
// owner, at now.
func (b *EventBatch) Stored(base StoredCheckpoint, epoch int64, owner string) StoredCheckpoint {
	st := base
	st.Version, st.Epoch, st.Owner, st.Time = StoredCheckpointVersion, epoch, owner, time.Now().UTC()
	st.File, st.Pos, st.GTID, st.Server = b.End.File, b.End.Pos, b.End.GTID, b.End.Server
	st.Followed = b.Followed.String()
	return st
}

// NoSnapshotCopy is the snapshot half of a SinkRun for a sink that does
// not copy tables yet (its Open and DryRun refuse SinkEnv.Snapshot, so a
// run never gets here): embedded, it answers ErrSnapshotUnsupported.
type NoSnapshotCopy struct{}

func (NoSnapshotCopy) PrepareTable(context.Context, SnapshotTable, string) error {
	return ErrSnapshotUnsupported
}

func (NoSnapshotCopy) CopyRows(context.Context, string, string, [][]any) error {
	return ErrSnapshotUnsupported
}

func (NoSnapshotCopy) CommitCopy(context.Context, Position, string, int) error {
	return ErrSnapshotUnsupported
}

// Committed empties the batch once the target holds it, and reports the
// commit to the stream.
func (b *EventBatch) Committed() {
	pos, ts, rows, txns := b.End, b.TS, b.Rows, b.Txns
	b.Rows, b.Txns = 0, 0
	b.committed(pos, b.Followed.String(), ts, rows, txns)
}

// StoredCheckpointVersion is the version of StoredCheckpoint's JSON.
const StoredCheckpointVersion = 1

// StoredCheckpoint is a checkpoint as an event sink keeps it beside its
// events, as JSON: the NATS sink in a key-value bucket, the Kafka sink in
// a compacted topic. One form for both, so that a task's checkpoint reads
// the same wherever it is kept.
type StoredCheckpoint struct {
	Version  int       `json:"version"`
	File     string    `json:"file"`
	Pos      uint32    `json:"pos"`
	GTID     string    `json:"gtid,omitempty"`
	Server   string    `json:"server,omitempty"`
	Followed string    `json:"followed,omitempty"`
	Epoch    int64     `json:"epoch"`
	Owner    string    `json:"owner"`
	Time     time.Time `json:"time"`
}

// Checkpoint is s as the stream reads it.
func (s StoredCheckpoint) Checkpoint() Checkpoint {
	return Checkpoint{
		Position: Position{File: s.File, Pos: s.Pos, GTID: s.GTID, Server: s.Server},
		Epoch:    s.Epoch, Owner: s.Owner, Time: s.Time, Followed: s.Followed,
	}
}

// SamePlace reports whether s and o name the same position and history.
func (s StoredCheckpoint) SamePlace(o StoredCheckpoint) bool {
	return s.File == o.File && s.Pos == o.Pos && s.GTID == o.GTID && s.Server == o.Server && s.Followed == o.Followed
}

// Marshal is s's JSON.
func (s StoredCheckpoint) Marshal() []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("replication: marshal checkpoint: %v", err)) // a plain struct
	}
	return b
}
