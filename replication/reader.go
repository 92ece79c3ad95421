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

// changeKind is what a row event did.
type changeKind int

const (
	changeInsert changeKind = iota
	changeUpdate
	changeDelete
)

// change is the rows of one row event for a replicated table.
type change struct {
	db, table string // source names
	kind      changeKind
	// rows are full row images; for updates they alternate before, after.
	rows [][]any
	tm   *replication.TableMapEvent
}

// segment is a source transaction, or a piece of one, handed from the
// reader to the applier. A transaction larger than Config.MaxTxnRows
// arrives as several segments; only the last has last set and an end.
type segment struct {
	start   Position // where the source transaction starts (the previous one's end)
	end     Position // where it ends; valid when last
	last    bool
	changes []change
	rows    int    // row images (an update's before and after count once)
	ts      uint32 // source commit time, seconds
	gtid    string // the transaction's GTID, for messages
	// mgtid is the MariaDB transaction's GTID, in the last segment only;
	// nil on MySQL and without a GTID event.
	mgtid *gomysql.MariadbGTID
	// ddl is a DDL statement; a segment holds either rows or one DDL.
	ddl *ddlEvent
}

// ddlEvent is a DDL statement and the database it ran in on the source.
type ddlEvent struct{ schema, query string }

// reader turns the source's binlog stream into segments. It is run by one
// goroutine; the applier reads its channel.
type reader struct {
	log     *slog.Logger
	flavor  string
	filter  *filter
	maxRows int
	out     chan<- segment

	server sourceID        // the server read from; pos is of its binlog
	file   string          // current binlog file
	pos    Position        // end of the last complete transaction
	gset   gomysql.GTIDSet // GTID state at pos; nil when unknown
	dumped bool            // the dump's first event was seen

	txn      *segment // open transaction, nil between transactions
	explicit bool     // the open transaction began with BEGIN (or a non-standalone GTID): DDL inside it does not end it
	txnGTID  string
	mgtid    *gomysql.MariadbGTID

	heartbeatAt atomic.Int64 // unix nanos of the last heartbeat, for lag
	producedAt  atomic.Int64 // unix nanos of the last transaction sent
}

func newReader(log *slog.Logger, flavor string, f *filter, maxRows int, start Position, server sourceID, out chan<- segment) (*reader, error) {
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
	}
	return nil
}

// begin opens a transaction. explicit says DDL inside it does not end it.
func (rd *reader) begin(h *replication.EventHeader, explicit bool) {
	rd.txn = &segment{start: rd.pos, ts: h.Timestamp}
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
	if rd.txn.rows > 0 || len(rd.txn.changes) > 0 {
		return nonRetryable(fmt.Errorf("DDL at %s:%d follows row changes in the same transaction (%s); this cannot be applied atomically", rd.file, h.LogPos, clip(q)))
	}
	seg := *rd.txn
	seg.ddl = &ddlEvent{schema: string(e.Schema), query: q}
	seg.gtid = rd.txnGTID
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
	c := change{db: db, table: table, rows: e.Rows, tm: e.Table}
	n := len(e.Rows)
	switch e.Type() {
	case replication.EnumRowsEventTypeInsert:
		c.kind = changeInsert
	case replication.EnumRowsEventTypeDelete:
		c.kind = changeDelete
	case replication.EnumRowsEventTypeUpdate:
		c.kind = changeUpdate
		n /= 2
	default:
		return nonRetryable(fmt.Errorf("%w: %v event at %s:%d on %s.%s: partial row images cannot be replicated; set binlog_row_value_options='' and binlog_row_image=FULL",
			ErrSourceConfig, h.EventType, rd.file, h.LogPos, db, table))
	}
	rd.txn.changes = append(rd.txn.changes, c)
	rd.txn.rows += n
	if rd.txn.rows >= rd.maxRows {
		// Hand over what we have and keep the transaction open: the
		// applier streams it into one target transaction.
		seg := *rd.txn
		seg.gtid = rd.txnGTID
		rd.txn.changes, rd.txn.rows = nil, 0
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
	seg.gtid = rd.txnGTID
	return rd.finish(ctx, h, seg)
}

// finish sends the last segment of a transaction ending with event h.
func (rd *reader) finish(ctx context.Context, h *replication.EventHeader, seg segment) error {
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
	seg.end, seg.last, seg.ts, seg.mgtid = rd.pos, true, h.Timestamp, rd.mgtid
	rd.txn = nil
	rd.producedAt.Store(time.Now().UnixNano())
	return rd.send(ctx, seg)
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

func (rd *reader) send(ctx context.Context, seg segment) error {
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
