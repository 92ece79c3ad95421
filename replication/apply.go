package replication

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// maxStatementBytes bounds one multi-row statement (see maxPacketBytes).
const maxStatementBytes = 1 << 20

// applier writes segments into the target. It owns one connection and at
// most one open transaction, and is used by one goroutine.
//
// Statements: the row changes of a target transaction (one or several
// source transactions) are merged into multi-row statements, at most two
// per keyed table — a REPLACE of every row written and a DELETE … IN of
// every key deleted — held open side by side and executed when full or at
// commit, and the checkpoint UPDATE is the last statement before COMMIT.
// Merging a table's changes across other tables' changes and across
// source transactions reorders statements, which is safe because only
// changes to the same row must stay in order: the session runs with
// foreign_key_checks=0, the two statements of one table never hold the
// same key (adding a key the other holds executes that other statement
// first), and a REPLACE removes whatever row stands in its way on any
// unique key, as the source must already have done. Tables with an
// identifying key are written idempotently — REPLACE for inserts and
// updates, DELETE … IN for deletes — so a replayed row event converges to
// the same row. Tables without one are matched on the full row image,
// one row per statement, after the table's pending INSERT.
type applier struct {
	log    *slog.Logger
	filter *filter
	ckpt   checkpointStore
	epoch  int64
	owner  string
	batch  int // Config.BatchRows

	conn *sql.Conn
	sess *targetSession
	meta metaCache

	pend pendingStmts
	// keyBefore and keyAfter are sameKey's buffers, kept between calls.
	keyBefore, keyAfter []byte
	openRows            int      // rows applied in the open target transaction
	openTxns            int      // complete source transactions in it
	openEnd             Position // end of the last complete one
	openTS              uint32
	partial             bool     // a source transaction is half applied
	curStart            Position // start of the source transaction being applied
	// followed is the history the target has with the open transaction
	// (see followedState): the checkpoint's when Run started, plus the
	// GTID of every complete source transaction applied since. It is
	// serialised only into a commit's checkpoint UPDATE, so it commits
	// with the data; after a failure Run starts a new applier from the
	// checkpoint row. Empty on MySQL, whose GTID sets are complete.
	followed followedState

	// ddlPending is the checkpoint's DDL marker when Run started: the DDL
	// of that source transaction may already have run on the target.
	ddlPending string

	// onCommit is called after every commit with the rows and source
	// transactions it made durable.
	onCommit func(pos Position, followed string, ts uint32, rows, txns int)
}

// pendingStmts are the multi-row statements being accumulated, at most
// one per table and kind, in the order of their first row.
type pendingStmts struct {
	order []*stmtBuilder
	by    map[stmtSlot]*stmtBuilder
	free  []*stmtBuilder // executed builders, their buffers kept for reuse
	key   []byte         // scratch for rowKey
}

type stmtSlot struct {
	meta *tableMeta
	op   stmtOp
}

// stmtBuilder accumulates one multi-row statement: as text in buf, or,
// for a REPLACE on a table with a prepared statement, as row images in
// imgs.
type stmtBuilder struct {
	op    stmtOp
	meta  *tableMeta
	buf   []byte
	imgs  [][]any
	bytes int // about the bytes of imgs' strings
	rows  int
	// keys holds the identifying keys of the rows of a table with exact
	// keys (tableMeta.exactKey), so that a row of the same key in the
	// table's other statement can be ordered after it.
	keys map[string]struct{}
}

type stmtOp int

const (
	opNone    stmtOp = iota
	opReplace        // REPLACE INTO t (…) VALUES (…),(…)
	opInsert         // INSERT INTO t (…) VALUES (…),(…) — keyless tables
	opDelete         // DELETE FROM t WHERE key IN (…) / (k1=… AND k2=…) OR …
)

// handle applies one segment. It leaves the target transaction open; the
// caller decides when to commit (flush).
func (a *applier) handle(ctx context.Context, seg Segment) error {
	if seg.DDL != nil {
		return a.applyDDL(ctx, seg)
	}
	a.sess.begin()
	a.curStart = seg.Start
	for i := range seg.Changes {
		if err := a.applyChange(ctx, &seg.Changes[i], seg); err != nil {
			return err
		}
	}
	a.openRows += seg.Rows
	if seg.Last {
		a.openTxns++
		a.openEnd, a.openTS = seg.End, seg.TS
		if seg.MariaGTID != nil {
			a.followed.add(seg.MariaGTID)
		}
		a.partial = false
	} else {
		a.partial = true
	}
	return nil
}

// idle reports whether no target transaction is open or committing.
func (a *applier) idle() bool { return a.sess.idle() }

// flush sends the commit of the open target transaction with the
// checkpoint of its last complete source transaction; onCommit reports it
// once the target has answered (see targetSession). It must not be
// called while a source transaction is half applied.
func (a *applier) flush(ctx context.Context) error {
	if !a.sess.open {
		return nil
	}
	if a.partial {
		return fmt.Errorf("replication: internal error: flush inside source transaction starting at %s", a.curStart)
	}
	if err := a.execPending(ctx); err != nil {
		return err
	}
	pos, ts, rows, txns := a.openEnd, a.openTS, a.openRows, a.openTxns
	// On a lost connection the outcome is unknown; Run re-reads the
	// checkpoint to find out.
	followed := a.followed.String() // as committed: a.followed moves on before the commit lands
	err := a.sess.commit(ctx, pos, a.followed, nil, func() { a.onCommit(pos, followed, ts, rows, txns) })
	a.openRows, a.openTxns = 0, 0
	return err
}

// settle flushes and waits until the target has answered everything
// sent, so that the connection is free for a statement of its own.
func (a *applier) settle(ctx context.Context) error {
	if err := a.flush(ctx); err != nil {
		return err
	}
	return a.sess.settle(ctx)
}

// abort rolls back the open transaction, if any, after a failure or
// when the apply session ends, and closes its prepared statements.
func (a *applier) abort() {
	a.sess.rollback()
	a.meta.reset()
	a.pend = pendingStmts{}
	a.openRows, a.openTxns, a.partial = 0, 0, false
}

func (a *applier) applyChange(ctx context.Context, c *Change, seg Segment) error {
	db, table := a.filter.route(c.DB, c.Table)
	if !a.meta.has(db, table) {
		// Loading it is a query of its own on the connection.
		if err := a.sess.settle(ctx); err != nil {
			return err
		}
	}
	m, err := a.meta.get(ctx, a.conn, db, table)
	if err != nil {
		if errors.Is(err, errMissingTable) {
			return nonRetryable(fmt.Errorf("source table %s (source transaction %s at %s): %w", qualified(c.DB, c.Table), seg.GTID, seg.Start, err))
		}
		return err
	}
	if err := checkShape(m, c); err != nil {
		return nonRetryable(fmt.Errorf("source transaction %s at %s: %w", seg.GTID, seg.Start, err))
	}
	switch c.Kind {
	case ChangeInsert:
		for _, row := range c.Rows {
			if err := a.addRow(ctx, m, row); err != nil {
				return err
			}
		}
	case ChangeDelete:
		for _, row := range c.Rows {
			if err := a.deleteRow(ctx, m, row); err != nil {
				return err
			}
		}
	case ChangeUpdate:
		return a.update(ctx, m, c.Rows)
	}
	return nil
}

// checkShape verifies that the event's rows fit the target table: the same
// number of columns and, when the source logs column names
// (binlog_row_metadata=FULL), the same names in the same order.
func checkShape(m *tableMeta, c *Change) error {
	if int(c.TableMap.ColumnCount) != len(m.cols) {
		return fmt.Errorf("row event for %s has %d columns but target table %s has %d: the tables differ (was the target table created or altered outside replication?)",
			qualified(c.DB, c.Table), c.TableMap.ColumnCount, m.name, len(m.cols))
	}
	names := c.TableMap.ColumnNameString()
	if len(names) == len(m.cols) {
		for i, n := range names {
			if !strings.EqualFold(n, m.cols[i].name) {
				return fmt.Errorf("row event for %s has column %d named %q but target table %s has %q there",
					qualified(c.DB, c.Table), i+1, n, m.name, m.cols[i].name)
			}
		}
	}
	return nil
}

// update applies update row pairs. For a table with a key, the after
// images are upserted; rows whose key changed first lose their old key.
// All old keys go before any new row is written: within one statement's
// event the source moved every row at once, and in between a new key may
// equal another row's old one.
func (a *applier) update(ctx context.Context, m *tableMeta, rows [][]any) error {
	if m.key == nil {
		for i := 0; i+1 < len(rows); i += 2 {
			if err := a.updateByImage(ctx, m, rows[i], rows[i+1]); err != nil {
				return err
			}
		}
		return nil
	}
	for i := 0; i+1 < len(rows); i += 2 {
		same, err := a.sameKey(m, rows[i], rows[i+1])
		if err != nil {
			return err
		}
		if !same {
			if err := a.deleteRow(ctx, m, rows[i]); err != nil {
				return err
			}
		}
	}
	for i := 1; i < len(rows); i += 2 {
		if err := a.addRow(ctx, m, rows[i]); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) sameKey(m *tableMeta, before, after []any) (bool, error) {
	var err error
	if a.keyBefore, err = rowKey(a.keyBefore[:0], m, before); err != nil {
		return false, err
	}
	if a.keyAfter, err = rowKey(a.keyAfter[:0], m, after); err != nil {
		return false, err
	}
	return bytes.Equal(a.keyBefore, a.keyAfter), nil
}

// addRow adds a row to a REPLACE (keyed table) or INSERT (keyless).
func (a *applier) addRow(ctx context.Context, m *tableMeta, row []any) error {
	op := opReplace
	if m.key == nil {
		op = opInsert
	}
	s, err := a.want(ctx, op, m, row)
	if err != nil {
		return err
	}
	if op == opReplace && m.prepRows > 0 {
		s.imgs = append(s.imgs, row)
		s.rows++
		s.bytes += rowBytes(row)
		if len(s.imgs) == m.prepRows || s.bytes >= maxStatementBytes {
			return a.execStmt(ctx, s)
		}
		return nil
	}
	if s.buf, err = appendRowValues(s.buf, op, m, s.rows == 0, row); err != nil {
		return a.valueError(m, err)
	}
	return a.rowAdded(ctx, s)
}

// rowBytes is about the bytes the strings of row hold: what can make a
// row large.
func rowBytes(row []any) int {
	n := 0
	for _, v := range row {
		switch x := v.(type) {
		case string:
			n += len(x)
		case []byte:
			n += len(x)
		}
	}
	return n
}

// appendRowValues appends row to a REPLACE or INSERT statement: the
// statement's head and its first tuple when first, else a further tuple.
func appendRowValues(b []byte, op stmtOp, m *tableMeta, first bool, row []any) ([]byte, error) {
	if first {
		b = appendInsertHead(b, op, m)
	} else {
		b = append(b, ',')
	}
	b = append(b, '(')
	var err error
	for i, c := range m.written {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendLiteral(b, &m.cols[c], row[c], false); err != nil {
			return b, err
		}
	}
	return append(b, ')'), nil
}

// appendInsertHead appends "REPLACE INTO t (c1,…) VALUES " (or INSERT).
func appendInsertHead(b []byte, op stmtOp, m *tableMeta) []byte {
	if op == opReplace {
		b = append(b, "REPLACE INTO "...)
	} else {
		b = append(b, "INSERT INTO "...)
	}
	b = append(b, m.name...)
	b = append(b, " ("...)
	for i, c := range m.written {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, quoteIdent(m.cols[c].name)...)
	}
	return append(b, ") VALUES "...)
}

// deleteRow adds a row's key to a DELETE (keyed table), or deletes one
// row matching its full image (keyless).
func (a *applier) deleteRow(ctx context.Context, m *tableMeta, row []any) error {
	if m.key == nil {
		if err := a.execTable(ctx, m); err != nil {
			return err
		}
		q := append([]byte("DELETE FROM "), m.name...)
		q, err := a.appendImageMatch(append(q, " WHERE "...), m, row)
		if err != nil {
			return a.valueError(m, err)
		}
		return a.exec(ctx, append(q, " LIMIT 1"...))
	}
	s, err := a.want(ctx, opDelete, m, row)
	if err != nil {
		return err
	}
	single := len(m.key) == 1
	switch {
	case s.rows == 0 && single:
		s.buf = append(s.buf, "DELETE FROM "...)
		s.buf = append(s.buf, m.name...)
		s.buf = append(s.buf, " WHERE "...)
		s.buf = append(s.buf, quoteIdent(m.cols[m.key[0]].name)...)
		s.buf = append(s.buf, " IN ("...)
	case s.rows == 0:
		s.buf = append(s.buf, "DELETE FROM "...)
		s.buf = append(s.buf, m.name...)
		s.buf = append(s.buf, " WHERE ("...)
	case single:
		s.buf = append(s.buf, ',')
	default:
		s.buf = append(s.buf, " OR ("...)
	}
	for i, k := range m.key {
		if !single {
			if i > 0 {
				s.buf = append(s.buf, " AND "...)
			}
			s.buf = append(s.buf, quoteIdent(m.cols[k].name)...)
			s.buf = append(s.buf, '=')
		}
		if s.buf, err = appendLiteral(s.buf, &m.cols[k], row[k], false); err != nil {
			return a.valueError(m, err)
		}
	}
	if !single {
		s.buf = append(s.buf, ')')
	}
	return a.rowAdded(ctx, s)
}

// updateByImage updates one row of a keyless table found by its full
// before image.
func (a *applier) updateByImage(ctx context.Context, m *tableMeta, before, after []any) error {
	if err := a.execTable(ctx, m); err != nil {
		return err
	}
	q := append([]byte("UPDATE "), m.name...)
	q = append(q, " SET "...)
	var err error
	for i, c := range m.written {
		if i > 0 {
			q = append(q, ',')
		}
		q = append(q, quoteIdent(m.cols[c].name)...)
		q = append(q, '=')
		if q, err = appendLiteral(q, &m.cols[c], after[c], false); err != nil {
			return a.valueError(m, err)
		}
	}
	if q, err = a.appendImageMatch(append(q, " WHERE "...), m, before); err != nil {
		return a.valueError(m, err)
	}
	return a.exec(ctx, append(q, " LIMIT 1"...))
}

// appendImageMatch writes col <=> value for every stored column: NULL-safe,
// so that NULLs in the image match NULLs in the row.
func (a *applier) appendImageMatch(q []byte, m *tableMeta, row []any) ([]byte, error) {
	var err error
	for i, c := range m.written {
		if i > 0 {
			q = append(q, " AND "...)
		}
		q = append(q, quoteIdent(m.cols[c].name)...)
		q = append(q, " <=> "...)
		if q, err = appendLiteral(q, &m.cols[c], row[c], true); err != nil {
			return q, err
		}
	}
	return q, nil
}

// want returns the pending statement of kind op on table m, for row. For
// a keyed table, a row whose key the table's other statement holds makes
// that statement execute first, so that changes to one row stay in order;
// when keys cannot be compared as text, any row does.
func (a *applier) want(ctx context.Context, op stmtOp, m *tableMeta, row []any) (*stmtBuilder, error) {
	p := &a.pend
	var key string
	if m.key != nil {
		other := opReplace
		if op == opReplace {
			other = opDelete
		}
		o := p.by[stmtSlot{m, other}]
		if m.exactKey {
			var err error
			if p.key, err = rowKey(p.key[:0], m, row); err != nil {
				return nil, a.valueError(m, err)
			}
			key = string(p.key)
			if o != nil {
				if _, ok := o.keys[key]; !ok {
					o = nil
				}
			}
		}
		// Without exact keys, any row may be the other statement's: it
		// goes first.
		if o != nil {
			if err := a.execStmt(ctx, o); err != nil {
				return nil, err
			}
		}
	}
	s := p.by[stmtSlot{m, op}]
	if s == nil {
		if n := len(p.free); n > 0 {
			s, p.free = p.free[n-1], p.free[:n-1]
		} else {
			s = &stmtBuilder{}
		}
		s.op, s.meta = op, m
		if p.by == nil {
			p.by = map[stmtSlot]*stmtBuilder{}
		}
		p.by[stmtSlot{m, op}] = s
		p.order = append(p.order, s)
	}
	if m.exactKey {
		if s.keys == nil {
			s.keys = map[string]struct{}{}
		}
		s.keys[key] = struct{}{}
	}
	return s, nil
}

// rowKey appends the identifying key of row, as literals.
func rowKey(b []byte, m *tableMeta, row []any) ([]byte, error) {
	var err error
	for _, k := range m.key {
		if b, err = appendLiteral(b, &m.cols[k], row[k], false); err != nil {
			return b, err
		}
		b = append(b, 0)
	}
	return b, nil
}

func (a *applier) rowAdded(ctx context.Context, s *stmtBuilder) error {
	s.rows++
	if len(s.buf) >= maxStatementBytes {
		return a.execStmt(ctx, s)
	}
	return nil
}

// execPending executes every pending statement, in the order of their
// first rows.
func (a *applier) execPending(ctx context.Context) error {
	for len(a.pend.order) > 0 {
		if err := a.execStmt(ctx, a.pend.order[0]); err != nil {
			return err
		}
	}
	return nil
}

// execTable executes the pending statements of table m.
func (a *applier) execTable(ctx context.Context, m *tableMeta) error {
	for _, op := range []stmtOp{opInsert, opReplace, opDelete} {
		if s := a.pend.by[stmtSlot{m, op}]; s != nil {
			if err := a.execStmt(ctx, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// execStmt queues the pending statement s and retires it.
func (a *applier) execStmt(ctx context.Context, s *stmtBuilder) error {
	p := &a.pend
	var err error
	switch {
	case len(s.imgs) > 0:
		err = a.execImages(ctx, s.meta, s.imgs)
		s.imgs = nil // the flight holds them, for diagnose
	case s.op == opDelete && len(s.meta.key) == 1:
		s.buf = append(s.buf, ')')
		fallthrough
	default:
		err = a.exec(ctx, s.buf)
	}
	delete(p.by, stmtSlot{s.meta, s.op})
	if i := slices.Index(p.order, s); i >= 0 {
		p.order = slices.Delete(p.order, i, i+1)
	}
	s.buf, s.rows, s.bytes, s.op, s.meta = s.buf[:0], 0, 0, opNone, nil
	clear(s.keys)
	p.free = append(p.free, s)
	return err
}

// execImages writes the rows imgs of table m with REPLACE: a full chunk
// through the table's prepared statement, fewer rows as text.
func (a *applier) execImages(ctx context.Context, m *tableMeta, imgs [][]any) error {
	text := func() (string, error) {
		var b []byte
		var err error
		for i, row := range imgs {
			if b, err = appendRowValues(b, opReplace, m, i == 0, row); err != nil {
				return "", err
			}
		}
		return string(b), nil
	}
	var st *sql.Stmt
	if len(imgs) == m.prepRows {
		var err error
		if st, err = a.prepared(ctx, m); err != nil {
			return err
		}
	}
	if st == nil {
		q, err := text()
		if err != nil {
			return a.valueError(m, err)
		}
		return a.exec(ctx, []byte(q))
	}
	args := make([]any, 0, len(imgs)*len(m.written))
	size := 0
	for _, row := range imgs {
		for _, c := range m.written {
			v, err := paramOf(&m.cols[c], row[c])
			if err != nil {
				return a.valueError(m, err)
			}
			if s, ok := v.(string); ok {
				size += len(s)
			}
			args = append(args, v)
		}
	}
	size += 8 * len(args)
	return a.sess.execPrepared(ctx, st, args, size, func() string {
		q, err := text()
		if err != nil {
			return fmt.Sprintf("REPLACE INTO %s … (%d rows; %v)", m.name, len(imgs), err)
		}
		return q
	})
}

// prepared returns m's prepared REPLACE of m.prepRows rows, preparing
// it on the target the first time.
func (a *applier) prepared(ctx context.Context, m *tableMeta) (*sql.Stmt, error) {
	if m.prep != nil || a.meta.prepared >= maxPrepared || a.meta.noPrepare {
		return m.prep, nil
	}
	// Preparing is a round trip of its own on the connection.
	if err := a.sess.settle(ctx); err != nil {
		return nil, err
	}
	q := appendInsertHead(nil, opReplace, m)
	for i := range m.prepRows {
		if i > 0 {
			q = append(q, ',')
		}
		q = append(q, '(')
		for j := range m.written {
			if j > 0 {
				q = append(q, ',')
			}
			q = append(q, '?')
		}
		q = append(q, ')')
	}
	st, err := a.conn.PrepareContext(ctx, string(q))
	if _, _, isServer := serverErrorCode(err); isServer && !retryable(err) {
		// The target refuses prepared statements (max_prepared_stmt_count
		// reached or 0, a proxy without them): text does the same.
		a.log.Warn("target refuses prepared statements; writing rows as text", "table", m.name, "error", err)
		a.meta.noPrepare = true
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("prepare the multi-row REPLACE of %s on the target: %w", m.name, err)
	}
	m.prep = st
	a.meta.prepared++
	return st, nil
}

// exec queues one statement in the open transaction.
func (a *applier) exec(ctx context.Context, q []byte) error { return a.sess.queue(ctx, q) }

func (a *applier) valueError(m *tableMeta, err error) error {
	return nonRetryable(fmt.Errorf("table %s, source transaction at %s: %w", m.name, a.curStart, err))
}

// Error codes a replayed DDL statement can meet when it had already run
// before a crash: the table, column, key or database is already there, or
// already gone.
var replayedDDLCodes = map[uint16]bool{
	1007: true, // database exists
	1008: true, // database does not exist
	1050: true, // table exists
	1051: true, // unknown table
	1060: true, // duplicate column
	1061: true, // duplicate key name
	1091: true, // can't drop: check that it exists
	1146: true, // table doesn't exist
	1826: true, // duplicate foreign key constraint name
}

// applyDDL runs a DDL statement. DDL commits implicitly and cannot share
// a transaction with the checkpoint, so it goes in three steps, each
// fenced: mark the checkpoint row "DDL of the source transaction starting
// at X pending"; run the DDL; write the position past it and clear the
// mark. A crash between the steps leaves the mark; the resumed Run reads
// the same transaction again and, seeing the mark, treats "already
// exists / already gone" errors of that DDL as done. A DDL inside a source
// transaction (CREATE TABLE … SELECT) keeps the mark until the
// transaction's rows commit.
func (a *applier) applyDDL(ctx context.Context, seg Segment) error {
	a.curStart = seg.Start
	st := parseDDL(seg.DDL.Query)
	plan, err := st.plan(seg.DDL.Schema, a.filter)
	if err != nil {
		return nonRetryable(fmt.Errorf("DDL of source transaction %s at %s: %w", seg.GTID, seg.Start, err))
	}
	if !plan.apply {
		// Views, triggers and routines are schema the target will lack:
		// say so. Filtered tables and administrative statements are
		// expected.
		level := slog.LevelDebug
		if w := strings.ToUpper(firstWord(seg.DDL.Query)); st.kind == ddlOther && (w == "CREATE" || w == "ALTER" || w == "DROP" || w == "RENAME") {
			level = slog.LevelWarn
		}
		a.log.Log(ctx, level, "DDL not replicated", "position", seg.Start.String(), "why", plan.why, "statement", clip(seg.DDL.Query))
		// Nothing to run: the transaction is empty for the target.
		return a.handle(ctx, Segment{Start: seg.Start, End: seg.End, Last: seg.Last, TS: seg.TS, GTID: seg.GTID, MariaGTID: seg.MariaGTID})
	}
	if a.partial {
		return nonRetryable(fmt.Errorf("DDL inside the source transaction starting at %s after row changes cannot be applied atomically: %s", seg.Start, clip(seg.DDL.Query)))
	}
	if err := a.settle(ctx); err != nil {
		return err
	}
	key := ddlKey(seg.Start)
	replay := a.ddlPending == key
	if err := a.ckpt.markDDL(ctx, a.conn, a.epoch, a.owner, key); err != nil {
		return err
	}
	a.log.Info("applying DDL", "position", seg.Start.String(), "statement", clip(plan.sql))
	if seg.DDL.Schema != "" {
		// Table names are all qualified now, but expressions (a generated
		// column calling a stored function) may still rely on the default
		// database. It may not exist on the target: fine, then nothing
		// relies on it.
		if _, err := a.conn.ExecContext(ctx, "USE "+quoteIdent(a.filter.routeDB(seg.DDL.Schema))); err != nil && retryable(err) {
			return err
		}
	}
	if _, err := a.conn.ExecContext(ctx, plan.sql); err != nil {
		code, _, isServer := serverErrorCode(err)
		switch {
		case replay && isServer && replayedDDLCodes[code]:
			a.log.Info("DDL had already run before the last stop", "position", seg.Start.String(), "error", err)
		case retryable(err):
			return newApplyError(plan.sql, seg.Start, err)
		default:
			return nonRetryable(newApplyError(plan.sql, seg.Start, err))
		}
	}
	a.meta.reset()
	if !seg.Last {
		a.partial = true
		a.curStart = seg.Start
		a.sess.begin()
		return nil
	}
	if seg.MariaGTID != nil {
		a.followed.add(seg.MariaGTID)
	}
	if err := a.ckpt.commit(ctx, a.conn, seg.End, a.followed, a.epoch, a.owner, ""); err != nil {
		return err
	}
	a.sess.base = seg.End
	a.ddlPending = ""
	a.onCommit(seg.End, a.followed.String(), seg.TS, 0, 1)
	return nil
}
