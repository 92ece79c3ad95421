package replication

import (
	"context"
	"database/sql"
	"fmt"
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
