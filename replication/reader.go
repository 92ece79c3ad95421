package replication

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
)

// ChangeKind is what a row event did.
type ChangeKind int

// Kinds of row change.
const (
	ChangeInsert ChangeKind = iota
	ChangeUpdate
	ChangeDelete
)

// Change is the rows of one row event for a replicated table, with the
// source's names: a sink routes them (SinkEnv.Route).
type Change struct {
	DB, Table string
	Kind      ChangeKind
	// Rows are full row images as go-mysql decodes them; for updates
	// they alternate before, after.
	Rows [][]any
	// TableMap is the event's table map: column types and, with
	// binlog_row_metadata=FULL on the source, names, signedness,
	// character sets, ENUM and SET labels and the primary key.
	TableMap *replication.TableMapEvent
}

// Segment is a source transaction, or a piece of one, handed from the
// reader to the sink. A transaction larger than Config.MaxTxnRows
// arrives as several segments; only the last has Last set and an End.
type Segment struct {
	Start Position // where the source transaction starts (the previous one's end)
	// First is where the transaction's first event is. It is Start but
	// after a rotation: Start is then the end of the previous file, and
	// First in the new one (what the snapshot's catch-up orders by).
	First   Position
	End     Position // where it ends; valid when Last
	Last    bool
	Changes []Change
	Rows    int    // row images (an update's before and after count once)
	TS      uint32 // source commit time, seconds
	GTID    string // the transaction's GTID ("0-1-57", "uuid:57"), "" without one
	// MariaGTID is the MariaDB transaction's GTID, in the last segment
	// only; nil on MySQL and without a GTID event (see History.Add).
	MariaGTID *gomysql.MariadbGTID
	// DDL is a DDL statement; a segment holds either rows or one DDL.
	DDL *DDL
}

// DDL is a DDL statement and the database it ran in on the source.
type DDL struct{ Schema, Query string }

// reader turns the source's binlog stream into segments. It is run by one
// goroutine; the applier reads its channel.
type reader struct {
	log     *slog.Logger
	flavor  string
	filter  *filter
	maxRows int
	out     chan<- Segment

	server sourceID        // the server read from; pos is of its binlog
	file   string          // current binlog file
	pos    Position        // end of the last complete transaction
	gset   gomysql.GTIDSet // GTID state at pos; nil when unknown
	dumped bool            // the dump's first event was seen

	txn      *Segment // open transaction, nil between transactions
	explicit bool     // the open transaction began with BEGIN (or a non-standalone GTID): DDL inside it does not end it
	txnGTID  string
	mgtid    *gomysql.MariadbGTID

	// reached is the position up to which the reader has handed over
	// every transaction (the snapshot copy's catch-up waits for it).
	reached atomic.Pointer[Position]

	heartbeatAt atomic.Int64 // unix nanos of the last heartbeat, for lag
	producedAt  atomic.Int64 // unix nanos of the last transaction sent
}

func newReader(log *slog.Logger, flavor string, f *filter, maxRows int, start Position, server sourceID, out chan<- Segment) (*reader, error) {
	rd := &reader{log: log, flavor: flavor, filter: f, maxRows: maxRows, out: out, server: server, file: start.File, pos: start}
	rd.pos.Server = server.Name
	if start.GTID == "" && flavor == FlavorMariaDB {
		// MariaDB always knows a file position's GTID state (the start was
		// resolved with BINLOG_GTID_POS): empty means no GTID before it, and
		// the state starts empty, so that the first GTID is recorded.
		rd.gset, _ = gomysql.ParseMariadbGTIDSet("") // an empty set parses
	}
	if start.GTID != "" {
		g, err := gomysql.ParseGTIDSet(flavor, start.GTID)
		if err != nil {
			return nil, nonRetryable(fmt.Errorf("GTID state %q of start position %s: %w", start.GTID, start, err))
		}
		rd.gset = g
	}
	p := rd.pos
	rd.reached.Store(&p)
	return rd, nil
}

// run reads events until ctx ends or the stream fails.
func (rd *reader) run(ctx context.Context, s *replication.BinlogStreamer) error {
	for {
		ev, err := s.GetEvent(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("read source binlog after %s: %w", rd.pos, err)
		}
		if err := rd.handle(ctx, ev); err != nil {
			return err
		}
	}
}

func (rd *reader) handle(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		if err := rd.checkDumpServer(h); err != nil {
			return err
		}
		rd.file = string(e.NextLogName)
		if rd.pos.File == "" {
			// Started from a GTID state alone: the first rotate says where.
			rd.pos.File, rd.pos.Pos = rd.file, uint32(e.Position)
		}
	case *replication.MariadbGTIDEvent:
		g := e.GTID
		rd.begin(h, !e.IsStandalone())
		rd.mgtid, rd.txnGTID = &g, g.String()
	case *replication.GTIDEvent:
		u, err := uuid.FromBytes(e.SID)
		if err != nil {
			return nonRetryable(fmt.Errorf("GTID event at %s:%d: %w", rd.file, h.LogPos, err))
		}
		rd.begin(h, false)
		rd.txnGTID = fmt.Sprintf("%s:%d", u, e.GNO)
	case *replication.GtidTaggedLogEvent:
		u, err := uuid.FromBytes(e.SID)
		if err != nil {
			return nonRetryable(fmt.Errorf("GTID event at %s:%d: %w", rd.file, h.LogPos, err))
		}
		rd.begin(h, false)
		rd.txnGTID = fmt.Sprintf("%s:%s:%d", u, e.Tag, e.GNO)
	case *replication.QueryEvent:
		return rd.query(ctx, h, e)
	case *replication.RowsEvent:
		return rd.rows(ctx, h, e)
	case *replication.XIDEvent:
		return rd.commit(ctx, h)
	case *replication.TransactionPayloadEvent:
		// MySQL binlog_transaction_compression: the transaction's events
		// are inside, already decoded.
		for _, inner := range e.Events {
			if err := rd.handle(ctx, inner); err != nil {
				return err
			}
		}
	case *replication.HeartbeatEvent:
		rd.heartbeatAt.Store(time.Now().UnixNano())
		if rd.txn == nil && rd.file != "" && h.LogPos > 0 {
			// Nothing more to send: the source is at the heartbeat's
			// position, in the current file.
			p := Position{File: rd.file, Pos: h.LogPos, GTID: rd.pos.GTID, Server: rd.server.Name}
			rd.reached.Store(&p)
		}
	}
	return nil
}

// begin opens a transaction. explicit says DDL inside it does not end it.
func (rd *reader) begin(h *replication.EventHeader, explicit bool) {
	first := rd.pos
	if rd.file != "" && h.LogPos > 0 && h.LogPos >= h.EventSize {
		// The event's own position (LogPos is where it ends). Events
		// inside a compressed payload have none: Start stands.
		first.File, first.Pos = rd.file, h.LogPos-h.EventSize
	}
	rd.txn = &Segment{Start: rd.pos, First: first, TS: h.Timestamp}
	rd.explicit = explicit
	rd.txnGTID, rd.mgtid = "", nil
}

func (rd *reader) query(ctx context.Context, h *replication.EventHeader, e *replication.QueryEvent) error {
	q := strings.TrimSpace(string(e.Query))
	word := strings.ToUpper(firstWord(q))
	switch word {
	case "BEGIN":
		if rd.txn == nil {
			rd.begin(h, true)
		} else {
			rd.explicit = true
		}
		return nil
	case "COMMIT", "ROLLBACK":
		if word == "ROLLBACK" && strings.HasPrefix(strings.ToUpper(q), "ROLLBACK TO") {
			return nil
		}
		// A ROLLBACK is logged only when non-transactional tables were
		// changed, and those changes stay on the source: apply them.
		return rd.commit(ctx, h)
	case "SAVEPOINT", "RELEASE":
		return nil
	case "XA":
		return nonRetryable(fmt.Errorf("XA transaction at %s:%d (%s) cannot be replicated", rd.file, h.LogPos, clip(q)))
	case "INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD", "CALL", "DO":
		return nonRetryable(fmt.Errorf("%w: statement-based event at %s:%d (%s): a session wrote with binlog_format other than ROW; set binlog_format=ROW globally and restart the clients",
			ErrSourceConfig, rd.file, h.LogPos, clip(q)))
	}
	// DDL (or another statement the applier will judge).
	if rd.txn == nil {
		rd.begin(h, false)
	}
	if rd.txn.Rows > 0 || len(rd.txn.Changes) > 0 {
		return nonRetryable(fmt.Errorf("DDL at %s:%d follows row changes in the same transaction (%s); this cannot be applied atomically", rd.file, h.LogPos, clip(q)))
	}
	seg := *rd.txn
	seg.DDL = &DDL{Schema: string(e.Schema), Query: q}
	seg.GTID = rd.txnGTID
	if rd.explicit {
		// CREATE TABLE … SELECT: the rows and the commit follow.
		return rd.send(ctx, seg)
	}
	return rd.finish(ctx, h, seg)
}

func (rd *reader) rows(ctx context.Context, h *replication.EventHeader, e *replication.RowsEvent) error {
	if rd.txn == nil {
		return nonRetryable(fmt.Errorf("row event at %s:%d outside a transaction: the start position %s is not at a transaction boundary", rd.file, h.LogPos, rd.pos))
	}
	db, table := string(e.Table.Schema), string(e.Table.Table)
	if !rd.filter.tableIncluded(db, table) {
		return nil
	}
	c := Change{DB: db, Table: table, Rows: e.Rows, TableMap: e.Table}
	n := len(e.Rows)
	switch e.Type() {
	case replication.EnumRowsEventTypeInsert:
		c.Kind = ChangeInsert
	case replication.EnumRowsEventTypeDelete:
		c.Kind = ChangeDelete
	case replication.EnumRowsEventTypeUpdate:
		c.Kind = ChangeUpdate
		n /= 2
	default:
		return nonRetryable(fmt.Errorf("%w: %v event at %s:%d on %s.%s: partial row images cannot be replicated; set binlog_row_value_options='' and binlog_row_image=FULL",
			ErrSourceConfig, h.EventType, rd.file, h.LogPos, db, table))
	}
	rd.txn.Changes = append(rd.txn.Changes, c)
	rd.txn.Rows += n
	if rd.txn.Rows >= rd.maxRows {
		// Hand over what we have and keep the transaction open: the
		// applier streams it into one target transaction.
		seg := *rd.txn
		seg.GTID = rd.txnGTID
		rd.txn.Changes, rd.txn.Rows = nil, 0
		return rd.send(ctx, seg)
	}
	return nil
}

// commit ends the open transaction at the event that commits it.
func (rd *reader) commit(ctx context.Context, h *replication.EventHeader) error {
	if rd.txn == nil {
		// A commit without a start: the stream began inside a transaction.
		return nonRetryable(fmt.Errorf("commit at %s:%d without a transaction start: the start position %s is not at a transaction boundary", rd.file, h.LogPos, rd.pos))
	}
	seg := *rd.txn
	seg.GTID = rd.txnGTID
	return rd.finish(ctx, h, seg)
}

// finish sends the last segment of a transaction ending with event h.
func (rd *reader) finish(ctx context.Context, h *replication.EventHeader, seg Segment) error {
	if rd.gset != nil && rd.txnGTID != "" {
		var err error
		if rd.mgtid != nil {
			err = rd.gset.(*gomysql.MariadbGTIDSet).AddSet(rd.mgtid)
		} else {
			err = rd.gset.Update(rd.txnGTID)
		}
		if err != nil {
			return nonRetryable(fmt.Errorf("GTID %s at %s:%d: %w", rd.txnGTID, rd.file, h.LogPos, err))
		}
	}
	rd.pos = Position{File: rd.file, Pos: h.LogPos, Server: rd.server.Name}
	if rd.gset != nil {
		rd.pos.GTID = rd.gset.String()
	}
	seg.End, seg.Last, seg.TS, seg.MariaGTID = rd.pos, true, h.Timestamp, rd.mgtid
	rd.txn = nil
	rd.producedAt.Store(time.Now().UnixNano())
	if err := rd.send(ctx, seg); err != nil {
		return err
	}
	p := rd.pos
	rd.reached.Store(&p)
	return nil
}

// checkDumpServer checks that the server serving the binlog is the one
// whose identity the position was placed with (Replicator.placeOn): the
// first event of a dump is a rotate the server makes up (no timestamp),
// and its header carries that server's server_id. The address may have
// moved to another server between the identity query and the dump's
// connection; the retry asks again.
func (rd *reader) checkDumpServer(h *replication.EventHeader) error {
	if rd.dumped || h.Timestamp != 0 {
		return nil
	}
	rd.dumped = true
	if h.ServerID != rd.server.ServerID {
		return fmt.Errorf("the source binlog is served by server_id %d, not %s, which was asked a moment before: the address moved to another server", h.ServerID, rd.server.Name)
	}
	return nil
}

func (rd *reader) send(ctx context.Context, seg Segment) error {
	select {
	case rd.out <- seg:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// caughtUp reports whether the source said it had nothing more to send
// after the last transaction this reader produced.
func (rd *reader) caughtUp() bool { return rd.heartbeatAt.Load() > rd.producedAt.Load() }

func firstWord(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return s[:i]
		}
	}
	return s
}

// clip shortens a statement for an error message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
