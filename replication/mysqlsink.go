package replication

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// MySQLSink is the sink that applies rows to a MySQL or MariaDB server,
// with the task's checkpoint row in checkpointSchema.shepherd_checkpoint
// ("" is DefaultCheckpointSchema) committed in the same transaction as
// the rows (see the package doc). It is the sink of a Config without one.
func MySQLSink(target Endpoint, checkpointSchema string) Sink {
	if checkpointSchema == "" {
		checkpointSchema = DefaultCheckpointSchema
	}
	return mysqlSink{target: target, schema: checkpointSchema}
}

type mysqlSink struct {
	target Endpoint
	schema string
	// prepChunkRows is Config.prepChunkRows, for tests.
	prepChunkRows int
}

func (s mysqlSink) String() string { return s.target.String() }

// Open connects to the target and creates the checkpoint schema, table
// and the task's row if they are missing.
func (s mysqlSink) Open(ctx context.Context, env SinkEnv) (OpenSink, error) {
	db, err := openDB(s.target, 3, true, env.rawLog)
	if err != nil {
		return nil, err
	}
	t := &mysqlTarget{sink: s, env: env, db: db, ckpt: newCheckpointStore(s.schema, env.Task)}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("task %q: %w", env.Task, connectError("target", s.target, err))
	}
	if err := t.ckpt.create(ctx, db, s.schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("task %q: target %s: %w", env.Task, s.target, err)
	}
	return t, nil
}

// DryRun connects as the task's account and checks its grants.
func (s mysqlSink) DryRun(ctx context.Context, env SinkEnv) []Check {
	var checks []Check
	add := func(name string, err error, ok string) {
		c := Check{Name: name, OK: err == nil, Detail: ok}
		if err != nil {
			c.Detail = err.Error()
		}
		checks = append(checks, c)
	}
	tgt, err := openDB(s.target, 1, false, env.rawLog)
	if err != nil {
		add("target connect", err, "")
		return checks
	}
	defer tgt.Close()
	err = tgt.PingContext(ctx)
	if err != nil {
		err = dryRunConnectError("target", s.target, err)
	}
	add("target connect", err, "connected to "+s.target.String())
	if err == nil {
		add("target privileges", checkGrants(ctx, tgt, s.target,
			[][]string{{"INSERT"}, {"UPDATE"}, {"DELETE"}, {"CREATE"}}), "INSERT, UPDATE, DELETE and CREATE (for the checkpoint table)")
	}
	return checks
}

// mysqlTarget is an open MySQL sink.
type mysqlTarget struct {
	sink mysqlSink
	env  SinkEnv
	db   *sql.DB // checkpoint reads, and the apply connection
	ckpt checkpointStore
}

func (t *mysqlTarget) CheckpointPlace() string { return t.ckpt.table }

func (t *mysqlTarget) Checkpoint(ctx context.Context) (Checkpoint, bool, error) {
	row, ok, err := t.ckpt.read(ctx, t.db)
	if err != nil {
		return Checkpoint{}, false, err
	}
	row.Followed = row.gtidState
	if !ok || row.Position.IsZero() {
		return row.Checkpoint, false, nil
	}
	return row.Checkpoint, true, nil
}

func (t *mysqlTarget) ResetEpoch(ctx context.Context) (int64, error) {
	row, ok, err := t.ckpt.read(ctx, t.db)
	if err != nil || !ok {
		return 0, err
	}
	if err := t.ckpt.resetEpoch(ctx, t.db); err != nil {
		return 0, err
	}
	return row.Epoch, nil
}

func (t *mysqlTarget) Close() error { return t.db.Close() }

// Claim takes a connection, checks its session is strict (the commit
// fence depends on it, see targetSession) and raises the checkpoint
// row's epoch.
func (t *mysqlTarget) Claim(ctx context.Context, epoch int64, owner string) (SinkRun, Checkpoint, error) {
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return nil, Checkpoint{}, connectError("target", t.sink.target, err)
	}
	row, err := t.claim(ctx, conn, epoch, owner)
	if err != nil {
		conn.Close()
		return nil, Checkpoint{}, err
	}
	cp := row.Checkpoint
	cp.Followed = row.gtidState
	return &mysqlRun{t: t, conn: conn, row: row, epoch: epoch, owner: owner}, cp, nil
}

func (t *mysqlTarget) claim(ctx context.Context, conn *sql.Conn, epoch int64, owner string) (checkpointRow, error) {
	if err := checkStrict(ctx, conn); err != nil {
		return checkpointRow{}, err
	}
	if err := t.ckpt.claim(ctx, conn, epoch, owner); err != nil {
		return checkpointRow{}, err
	}
	row, _, err := t.ckpt.read(ctx, conn)
	return row, err
}

// mysqlRun is one Run attempt's applier on its connection.
type mysqlRun struct {
	t      *mysqlTarget
	conn   *sql.Conn
	row    checkpointRow // as claimed
	epoch  int64
	owner  string
	ap     *applier
	closed bool
}

func (m *mysqlRun) Begin(start Position, followed History, committed func(pos Position, followed string, ts uint32, rows, txns int)) {
	t := m.t
	ap := &applier{
		log: t.env.Log, filter: t.env.filter, ckpt: t.ckpt, epoch: m.epoch, owner: m.owner, batch: t.env.BatchRows,
		conn: m.conn, ddlPending: m.row.ddlPending, meta: metaCache{chunkRows: t.sink.prepChunkRows}, followed: followed.s,
		onCommit: committed,
	}
	ap.sess = &targetSession{conn: m.conn, ckpt: t.ckpt, epoch: m.epoch, owner: m.owner, base: m.row.Position, where: func() Position { return ap.curStart }}
	m.ap = ap
}

func (m *mysqlRun) Write(ctx context.Context, seg Segment) error { return m.ap.handle(ctx, seg) }

// Flush commits the open target transaction when the batch is full, or
// when the stream has nothing more ready and the target nothing in
// flight: small source transactions then share a commit while the target
// is busy — committing sooner would not make them visible sooner, the
// target works through its packets in order — and are not held back when
// it is idle.
func (m *mysqlRun) Flush(ctx context.Context, more bool) error {
	ap := m.ap
	if ap.partial || !ap.sess.open {
		return nil
	}
	if ap.openRows >= ap.batch || !more && ap.sess.inFlight() == nil {
		return ap.flush(ctx)
	}
	return nil
}

func (m *mysqlRun) InFlight() <-chan error { return m.ap.sess.inFlight() }

func (m *mysqlRun) Landed(ctx context.Context, err error) error { return m.ap.sess.landed(ctx, err) }

func (m *mysqlRun) Idle() bool { return m.ap.idle() }

// Close rolls back the open transaction, if any, closes the prepared
// statements and returns the connection.
func (m *mysqlRun) Close() {
	if m.closed {
		return
	}
	m.closed = true
	if m.ap != nil {
		m.ap.abort()
	}
	m.conn.Close()
}

// PrepareTable creates the target table of t from the source's
// definition when it is missing, else checks its columns against t's.
// DDL commits by itself, so it runs between transactions; CREATE … IF
// NOT EXISTS makes a repeat after a crash harmless.
func (m *mysqlRun) PrepareTable(ctx context.Context, t SnapshotTable, create string) error {
	if err := m.ap.settle(ctx); err != nil {
		return err
	}
	if m.ap.sess.open {
		return fmt.Errorf("replication: internal error: PrepareTable inside a target transaction")
	}
	rows, err := m.conn.QueryContext(ctx, "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", t.ToDB, t.ToTable)
	if err != nil {
		return fmt.Errorf("read the columns of target table %s: %w", qualified(t.ToDB, t.ToTable), err)
	}
	var have []SnapshotColumn
	for rows.Next() {
		var c SnapshotColumn
		if err := rows.Scan(&c.Name, &c.DataType); err != nil {
			rows.Close()
			return fmt.Errorf("read the columns of target table %s: %w", qualified(t.ToDB, t.ToTable), err)
		}
		c.DataType = strings.ToLower(c.DataType)
		have = append(have, c)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read the columns of target table %s: %w", qualified(t.ToDB, t.ToTable), err)
	}
	if len(have) > 0 {
		return compatibleColumns(t, have)
	}
	for _, q := range []string{"CREATE DATABASE IF NOT EXISTS " + quoteIdent(t.ToDB), create} {
		if _, err := m.conn.ExecContext(ctx, q); err != nil {
			return nonRetryable(&ApplyError{Statement: clip(q), Err: err})
		}
	}
	m.t.env.Log.Info("snapshot: created target table from the source's definition", "table", qualified(t.ToDB, t.ToTable), "source_table", qualified(t.DB, t.Table))
	return nil
}

// compatibleColumns checks that a target table has the source table's
// columns, in order and of the same types, which both the copy and the
// binlog's row images (positional) need.
func compatibleColumns(t SnapshotTable, have []SnapshotColumn) error {
	name := qualified(t.ToDB, t.ToTable)
	for i, c := range t.Columns {
		if i >= len(have) {
			return fmt.Errorf("%w: target table %s has no column %s (source column %d of %s): add it, or drop the target table to have it created",
				ErrIncompatibleTable, name, quoteIdent(c.Name), i+1, qualified(t.DB, t.Table))
		}
		h := have[i]
		if !strings.EqualFold(h.Name, c.Name) {
			return fmt.Errorf("%w: target table %s: column %d is %s, the source's is %s",
				ErrIncompatibleTable, name, i+1, quoteIdent(h.Name), quoteIdent(c.Name))
		}
		if h.DataType != c.DataType && !sameStoredType(h.DataType, c.DataType) {
			return fmt.Errorf("%w: target table %s: column %s is %s, the source's is %s",
				ErrIncompatibleTable, name, quoteIdent(h.Name), h.DataType, c.DataType)
		}
	}
	if len(have) > len(t.Columns) {
		return fmt.Errorf("%w: target table %s has a column %s that source table %s lacks",
			ErrIncompatibleTable, name, quoteIdent(have[len(t.Columns)].Name), qualified(t.DB, t.Table))
	}
	return nil
}

// sameStoredType accepts the one type pair that differs by flavor only:
// MySQL's JSON is MariaDB's LONGTEXT.
func sameStoredType(a, b string) bool {
	return a == "json" && b == "longtext" || a == "longtext" && b == "json"
}

// CopyRows adds rows to the open transaction: REPLACE for a keyed
// table, INSERT for one without a key (which the copy writes once, see
// snapshot.go).
func (m *mysqlRun) CopyRows(ctx context.Context, db, table string, rows [][]any) error {
	ap := m.ap
	tdb, tt := m.t.env.Route(db, table)
	if !ap.meta.has(tdb, tt) {
		if err := ap.sess.settle(ctx); err != nil {
			return err
		}
	}
	meta, err := ap.meta.get(ctx, m.conn, tdb, tt)
	if err != nil {
		if errors.Is(err, errMissingTable) {
			return nonRetryable(fmt.Errorf("snapshot of %s: %w", qualified(db, table), err))
		}
		return err
	}
	ap.sess.begin()
	for _, row := range rows {
		if len(row) != len(meta.cols) {
			return nonRetryable(fmt.Errorf("%w: snapshot of %s read %d columns, target table %s has %d", ErrIncompatibleTable, qualified(db, table), len(row), meta.name, len(meta.cols)))
		}
		if err := ap.addRow(ctx, meta, row); err != nil {
			return err
		}
	}
	return nil
}

// CommitCopy commits the open transaction with the checkpoint at and the
// snapshot state, and waits for the target's answer.
func (m *mysqlRun) CommitCopy(ctx context.Context, at Position, state string, rows int) error {
	ap := m.ap
	if ap.partial {
		return fmt.Errorf("replication: internal error: snapshot commit inside source transaction starting at %s", ap.curStart)
	}
	ap.sess.begin()
	if err := ap.execPending(ctx); err != nil {
		return err
	}
	followed := ap.followed.String()
	txns := ap.openTxns
	ap.openRows, ap.openTxns = 0, 0
	if err := ap.sess.commit(ctx, at, ap.followed, &state, func() { ap.onCommit(at, followed, 0, rows, txns) }); err != nil {
		return err
	}
	return ap.sess.settle(ctx)
}
