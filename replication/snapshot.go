package replication

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shepherd-dev/shepherd/internal/ctxsleep"
)

// This file is the snapshot copy (start: snapshot): every included
// table's rows are copied from consistent snapshots of the source,
// interleaved with the binlog, before Run goes on with the binlog alone.
// The method, and why it is exact, is in the package doc ("Snapshot").

// SnapshotConfig is Config.Snapshot: whether a task without a checkpoint
// starts by copying the source's tables, and how.
type SnapshotConfig struct {
	// Enabled starts a task that has no checkpoint with a copy of every
	// included table (start: snapshot).
	Enabled bool
	// ChunkRows is the rows of a keyed table copied per target
	// transaction; 0 is DefaultSnapshotChunkRows.
	ChunkRows int
	// MaxRowsPerSecond throttles the copy; 0 is unlimited.
	MaxRowsPerSecond int
	// Threads is the copy's readers. One consistent snapshot is one
	// source transaction, read by one connection: only 1 is supported.
	Threads int
	// hold bounds how long one consistent snapshot is read before the
	// copy takes a newer one and brings the target up to it from the
	// binlog; 0 is defaultSnapshotHold. Tests lower it.
	hold time.Duration
}

// Defaults of SnapshotConfig.
const (
	DefaultSnapshotChunkRows = 1000
	// defaultSnapshotHold keeps a snapshot's undo history on the source
	// short, and the binlog feed, which waits meanwhile, well within the
	// source's net_write_timeout (60 s by default).
	defaultSnapshotHold = 10 * time.Second
)

func (c SnapshotConfig) withDefaults() (SnapshotConfig, error) {
	switch {
	case c.ChunkRows < 0:
		return c, fmt.Errorf("%w: Snapshot.ChunkRows %d is negative", ErrConfig, c.ChunkRows)
	case c.MaxRowsPerSecond < 0:
		return c, fmt.Errorf("%w: Snapshot.MaxRowsPerSecond %d is negative", ErrConfig, c.MaxRowsPerSecond)
	case c.Threads < 0 || c.Threads > 1:
		return c, fmt.Errorf("%w: Snapshot.Threads %d: the copy reads one consistent snapshot through one connection; use 1", ErrConfig, c.Threads)
	}
	if c.ChunkRows == 0 {
		c.ChunkRows = DefaultSnapshotChunkRows
	}
	if c.Threads == 0 {
		c.Threads = 1
	}
	if c.hold == 0 {
		c.hold = defaultSnapshotHold
	}
	return c, nil
}

// SnapshotProgress is how far a snapshot copy is, in Progress.
type SnapshotProgress struct {
	// Tables are the tables copied, in copy order.
	Tables []TableCopy `json:"tables"`
	// Rows and Estimated total Tables' (Estimated: information_schema's
	// TABLE_ROWS when the copy began, an estimate).
	Rows      int64 `json:"rows"`
	Estimated int64 `json:"estimated"`
	// Done is true once every table is copied and Run follows the binlog
	// alone.
	Done bool `json:"done,omitempty"`
}

// TableCopy is one table's part of a snapshot copy.
type TableCopy struct {
	DB        string `json:"db"`
	Table     string `json:"table"`
	Rows      int64  `json:"rows"`
	Estimated int64  `json:"estimated"`
	Done      bool   `json:"done,omitempty"`
}

// copyState is the copy's cursor, committed with every chunk in the
// checkpoint row (Checkpoint.Snapshot) as JSON.
type copyState struct {
	// Tables are the source tables to copy, in order, as listed when the
	// copy began; tables created later come with the binlog.
	Tables [][2]string `json:"tables"`
	// Next is the index in Tables of the table being copied.
	Next int `json:"next"`
	// Key is the key of the last row of Tables[Next] copied; nil when
	// none is yet.
	Key []keyValue `json:"key,omitempty"`
	// At is the snapshot the last chunk was read from.
	At Position `json:"at"`
	// Rows and Estimated count the rows copied and estimated per table.
	Rows      []int64 `json:"rows"`
	Estimated []int64 `json:"estimated"`
	Done      bool    `json:"done,omitempty"`

	index map[[2]string]int
}

// keyValue is one column of a copy cursor's key: Kind i (int64), u
// (uint64), f (float64), b (a string's bytes, in hex) or s (decimal or
// temporal text).
type keyValue struct {
	Kind string `json:"t"`
	Text string `json:"v"`
}

func parseCopyState(s string) (*copyState, error) {
	if s == "" {
		return nil, nil
	}
	var st copyState
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return nil, nonRetryable(fmt.Errorf("the checkpoint's snapshot state is unreadable: %w", err))
	}
	if len(st.Rows) != len(st.Tables) || len(st.Estimated) != len(st.Tables) || st.Next < 0 || st.Next > len(st.Tables) {
		return nil, nonRetryable(fmt.Errorf("the checkpoint's snapshot state is inconsistent: %d tables, next %d", len(st.Tables), st.Next))
	}
	st.makeIndex()
	return &st, nil
}

func (s *copyState) makeIndex() {
	s.index = make(map[[2]string]int, len(s.Tables))
	for i, t := range s.Tables {
		s.index[t] = i
	}
}

func (s *copyState) String() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("replication: marshal snapshot state: %v", err)) // plain types always encode
	}
	return string(b)
}

// pending reports whether the binlog's changes to source table db.table
// are to be skipped: the table is listed and its copy has not begun (no
// chunk committed), so the copy will read them from a later snapshot.
func (s *copyState) pending(db, table string) bool {
	i, ok := s.index[[2]string{db, table}]
	return ok && (i > s.Next || i == s.Next && s.Key == nil)
}

// progress is the state as Progress reports it.
func (s *copyState) progress() *SnapshotProgress {
	p := &SnapshotProgress{Done: s.Done}
	for i, t := range s.Tables {
		p.Tables = append(p.Tables, TableCopy{DB: t[0], Table: t[1], Rows: s.Rows[i], Estimated: s.Estimated[i], Done: i < s.Next})
		p.Rows += s.Rows[i]
		p.Estimated += s.Estimated[i]
	}
	return p
}

// copyCommitted, when set, is called after every copy commit: the crash
// tests hold a child process at a chosen cursor with it, to kill it
// there. Nil in production.
var copyCommitted func(*copyState)

// copier runs one Run attempt's copy.
type copier struct {
	r     *Replicator
	cfg   SnapshotConfig
	src   *sourceFeed
	run   SinkRun
	st    *runStats
	state *copyState
	id    sourceID
	db    *sql.DB // openSnapshotDB's
	snap  *snapshotTx
	stash *Segment // read past the snapshot's position, applied next

	began  time.Time // for the throttle
	copied int64     // rows copied since began
}

// copyTables copies what state (nil: a copy not begun) says is left,
// bringing the target up to each snapshot from the binlog feed src
// before reading from it, and returns the segment it read past the last
// snapshot's position, which Run applies first when it goes on with the
// binlog alone.
func (r *Replicator) copyTables(ctx context.Context, src *sourceFeed, run SinkRun, st *runStats, state *copyState, id sourceID) (*Segment, error) {
	db, err := openSnapshotDB(r.cfg.Source, r.cfg.Logger)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	c := &copier{r: r, cfg: r.cfg.Snapshot, src: src, run: run, st: st, state: state, id: id, db: db, began: time.Now()}
	defer c.closeSnapshot()
	if c.state == nil {
		if c.state, err = r.planCopy(ctx); err != nil {
			return nil, err
		}
		r.log.Info("snapshot: copying tables", "tables", len(c.state.Tables))
	} else {
		r.log.Info("snapshot: resuming the copy", "table", c.state.Next, "of", len(c.state.Tables), "after_key", c.state.Key != nil)
	}
	st.snapshot = c.state.progress()
	for c.state.Next < len(c.state.Tables) {
		if c.snap == nil || time.Since(c.snap.opened) > c.cfg.hold {
			if err := c.newSnapshot(ctx); err != nil {
				return nil, err
			}
		}
		if err := c.copyTable(ctx); err != nil {
			return nil, err
		}
	}
	// Every table is copied: the target holds the source as of the last
	// commit, and from here the binlog applies to every table.
	if err := settleRun(ctx, run); err != nil {
		return nil, err
	}
	c.state.Done, c.state.Key = true, nil
	if err := run.CommitCopy(ctx, st.committed, c.state.String(), 0); err != nil {
		return nil, err
	}
	st.snapshot = c.state.progress()
	r.log.Info("snapshot: copy complete; following the binlog", "position", st.committed.String(), "rows", st.snapshot.Rows)
	return c.stash, nil
}

// planCopy lists the included base tables of the source, in order, with
// their estimated rows.
func (r *Replicator) planCopy(ctx context.Context) (*copyState, error) {
	rows, err := r.source.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, IFNULL(TABLE_ROWS, 0) FROM information_schema.TABLES
		WHERE TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_SCHEMA, TABLE_NAME`)
	if err != nil {
		return nil, connectError("source", r.cfg.Source, fmt.Errorf("list the source's tables: %w", err))
	}
	defer rows.Close()
	st := &copyState{}
	for rows.Next() {
		var db, table string
		var est int64
		if err := rows.Scan(&db, &table, &est); err != nil {
			return nil, fmt.Errorf("list the source's tables: %w", err)
		}
		if !r.filter.tableIncluded(db, table) || db == r.cfg.CheckpointSchema && table == CheckpointTable {
			continue
		}
		st.Tables = append(st.Tables, [2]string{db, table})
		st.Estimated = append(st.Estimated, est)
		st.Rows = append(st.Rows, 0)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list the source's tables: %w", err)
	}
	st.makeIndex()
	return st, nil
}

// snapshotTx is a consistent snapshot of the source: a read-only
// transaction and the binlog position it sees exactly up to.
type snapshotTx struct {
	conn   *sql.Conn
	at     Position
	opened time.Time
}

func (c *copier) closeSnapshot() {
	if c.snap != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = c.snap.conn.ExecContext(ctx, "ROLLBACK")
		cancel()
		c.snap.conn.Close()
		c.snap = nil
	}
}

// newSnapshot opens a consistent snapshot of the source at position P
// and brings the target up to P from the binlog, for the tables whose
// copy has begun.
func (c *copier) newSnapshot(ctx context.Context) error {
	c.closeSnapshot()
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return connectError("source", c.r.cfg.Source, err)
	}
	at, err := c.r.startSnapshot(ctx, conn)
	if err != nil {
		conn.Close()
		return err
	}
	at.Server = c.id.Name
	c.snap = &snapshotTx{conn: conn, at: at, opened: time.Now()}
	c.r.log.Debug("snapshot: consistent snapshot opened", "position", at.String())
	return c.catchUp(ctx, at)
}

// startSnapshot begins a consistent snapshot on conn and returns the
// binlog position it corresponds to. MariaDB reports it without any
// lock (binlog_snapshot_file and binlog_snapshot_position); MySQL has no
// such status, so the position is read under FLUSH TABLES WITH READ LOCK,
// held for the three statements it takes and never waited for beyond a
// second (lock_wait_timeout).
func (r *Replicator) startSnapshot(ctx context.Context, conn *sql.Conn) (Position, error) {
	if _, err := conn.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return Position{}, connectError("source", r.cfg.Source, err)
	}
	const start = "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"
	if r.flavor == FlavorMariaDB {
		if _, err := conn.ExecContext(ctx, start); err != nil {
			return Position{}, connectError("source", r.cfg.Source, fmt.Errorf("start a consistent snapshot: %w", err))
		}
		var p Position
		rows, err := conn.QueryContext(ctx, "SHOW STATUS LIKE 'binlog_snapshot_%'")
		if err != nil {
			return Position{}, connectError("source", r.cfg.Source, fmt.Errorf("read the snapshot's binlog position: %w", err))
		}
		defer rows.Close()
		for rows.Next() {
			var name, value string
			if err := rows.Scan(&name, &value); err != nil {
				return Position{}, err
			}
			switch strings.ToLower(name) {
			case "binlog_snapshot_file":
				p.File = value
			case "binlog_snapshot_position":
				n, err := strconv.ParseUint(value, 10, 32)
				if err != nil {
					return Position{}, fmt.Errorf("source %s: binlog_snapshot_position %q: %w", r.cfg.Source, value, err)
				}
				p.Pos = uint32(n)
			}
		}
		if err := rows.Err(); err != nil {
			return Position{}, err
		}
		if p.File == "" {
			return Position{}, fmt.Errorf("%w: source %s reports no binlog_snapshot_file: is the binary log on?", ErrSourceConfig, r.cfg.Source)
		}
		if p.GTID, err = binlogGTIDPos(ctx, r.source, p.File, p.Pos); err != nil {
			return Position{}, err
		}
		return p, nil
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION lock_wait_timeout = 1"); err != nil {
		return Position{}, connectError("source", r.cfg.Source, err)
	}
	if _, err := conn.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		return Position{}, fmt.Errorf("source %s: FLUSH TABLES WITH READ LOCK, to read the snapshot's binlog position (the account needs RELOAD): %w", r.cfg.Source, err)
	}
	locked := time.Now()
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "UNLOCK TABLES")
		r.log.Debug("snapshot: read lock released", "held", time.Since(locked))
	}()
	if _, err := conn.ExecContext(ctx, start); err != nil {
		return Position{}, connectError("source", r.cfg.Source, fmt.Errorf("start a consistent snapshot: %w", err))
	}
	file, pos, gtid, err := masterStatus(ctx, conn, r.cfg.Source)
	if err != nil {
		return Position{}, err
	}
	return Position{File: file, Pos: pos, GTID: gtid}, nil
}

// catchUp applies the binlog up to at, the position of the snapshot
// about to be read, skipping the changes of tables whose copy has not
// begun; it stops at the first transaction past at, keeping it in
// c.stash, and returns once the target has committed everything.
func (c *copier) catchUp(ctx context.Context, at Position) error {
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		var seg Segment
		if c.stash != nil {
			seg, c.stash = *c.stash, nil
		} else {
			if p := c.src.rd.reached.Load(); p != nil && len(c.src.segments) == 0 {
				if cmp, ok := ComparePositions(c.r.flavor, *p, at); ok && cmp >= 0 {
					break
				}
			}
			select {
			case seg = <-c.src.segments:
			case err := <-c.run.InFlight():
				if err := c.run.Landed(ctx, err); err != nil {
					return err
				}
				continue
			case err := <-c.src.readErr:
				return c.r.sourceError(at, err)
			case <-tick.C:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		before, err := c.before(seg, at)
		if err != nil {
			return err
		}
		if !before {
			c.stash = &seg
			break
		}
		if err := c.run.Write(ctx, c.filter(seg)); err != nil {
			return err
		}
		if err := c.run.Flush(ctx, len(c.src.segments) > 0); err != nil {
			return err
		}
	}
	return settleRun(ctx, c.run)
}

// before reports whether seg belongs to a transaction the snapshot at
// sees: one ending at or before it (at is between transactions).
func (c *copier) before(seg Segment, at Position) (bool, error) {
	// A piece of a transaction is ordered by where the transaction's
	// first event is: its Start after a rotation is the previous file's
	// end, before a snapshot taken at the new file's first transaction.
	p, end := seg.First, 0
	if p.IsZero() {
		p = seg.Start
	}
	if seg.Last {
		p, end = seg.End, 1
	}
	cmp, ok := ComparePositions(c.r.flavor, p, at)
	if !ok {
		return false, fmt.Errorf("snapshot: cannot order the binlog position %s and the snapshot's %s (did the source change?)", p, at)
	}
	return cmp < end, nil
}

// filter drops from seg the changes of tables whose copy has not begun,
// and DDL naming one: the copy reads them from a later snapshot, and
// creates the table then from its definition at that time.
func (c *copier) filter(seg Segment) Segment {
	if d := seg.DDL; d != nil {
		st := parseDDL(d.Query)
		for _, ref := range st.refs {
			db := ref.db
			if db == "" {
				db = d.Schema
			}
			if ref.isDB && slices.ContainsFunc(c.state.Tables[c.state.Next:], func(t [2]string) bool { return t[0] == db }) ||
				!ref.isDB && c.state.pending(db, ref.table) {
				c.r.log.Info("snapshot: DDL on a table not copied yet skipped; the copy creates the table from its definition then",
					"query", clip(d.Query), "position", seg.Start.String())
				seg.DDL = nil
				return seg
			}
		}
		return seg
	}
	kept := seg.Changes[:0:0]
	for _, ch := range seg.Changes {
		if !c.state.pending(ch.DB, ch.Table) {
			kept = append(kept, ch)
		}
	}
	seg.Changes = kept
	return seg
}

// settleRun commits what the run has open and waits until the target
// has answered everything.
func settleRun(ctx context.Context, run SinkRun) error {
	for !run.Idle() {
		if ch := run.InFlight(); ch != nil {
			var err error
			select {
			case err = <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
			if err := run.Landed(ctx, err); err != nil {
				return err
			}
			continue
		}
		if err := run.Flush(ctx, false); err != nil {
			return err
		}
		if run.InFlight() == nil && !run.Idle() {
			return errors.New("replication: internal error: the snapshot's position is inside a source transaction")
		}
	}
	return nil
}

// copyTable copies the table state.Next from the open snapshot, chunk
// by chunk, until it is done or the snapshot is due for renewal.
func (c *copier) copyTable(ctx context.Context) error {
	s := c.state
	name := s.Tables[s.Next]
	tbl, err := c.r.loadCopyTable(ctx, name[0], name[1])
	if errors.Is(err, errMissingTable) {
		// Dropped since the copy began: its DROP came with the binlog.
		c.r.log.Info("snapshot: table gone from the source; skipped", "table", qualified(name[0], name[1]))
		s.Next, s.Key = s.Next+1, nil
		return c.commit(ctx, 0)
	}
	if err != nil {
		return err
	}
	if s.Key == nil {
		create, err := c.showCreate(ctx, tbl)
		if err != nil {
			return err
		}
		if err := c.run.PrepareTable(ctx, tbl.spec, create); err != nil {
			return fmt.Errorf("snapshot of %s: %w", qualified(name[0], name[1]), err)
		}
	}
	if tbl.meta.key == nil {
		return c.copyKeyless(ctx, tbl)
	}
	for {
		rows, err := c.readChunk(ctx, tbl, s.Key)
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			if err := c.run.CopyRows(ctx, name[0], name[1], rows); err != nil {
				return err
			}
			last := rows[len(rows)-1]
			s.Key = s.Key[:0:0]
			for _, k := range tbl.meta.key {
				s.Key = append(s.Key, encodeKey(&tbl.meta.cols[k], last[k]))
			}
		}
		s.Rows[s.Next] += int64(len(rows))
		done := len(rows) < c.cfg.ChunkRows
		if done {
			s.Next, s.Key = s.Next+1, nil
		}
		if err := c.commit(ctx, len(rows)); err != nil {
			return err
		}
		if err := c.throttle(ctx, len(rows)); err != nil {
			return err
		}
		if done || time.Since(c.snap.opened) > c.cfg.hold {
			return nil
		}
	}
}

// copyKeyless copies a table without a key in one target transaction:
// with no key to resume by, its rows and the cursor moving past it
// commit together or not at all, so a crash re-copies it whole into a
// target that never held any of it. The binlog's changes to it are
// skipped until then (copyState.pending), and applied from the
// snapshot's position on.
func (c *copier) copyKeyless(ctx context.Context, tbl *copyTable) error {
	s := c.state
	q := "SELECT " + tbl.cols + " FROM " + qualified(tbl.spec.DB, tbl.spec.Table) + " LIMIT ?"
	rows, err := c.snap.conn.QueryContext(ctx, q, int64(math.MaxInt64))
	if err != nil {
		return c.readError(tbl, err)
	}
	defer rows.Close()
	var n int
	for {
		batch, err := scanRows(rows, tbl, c.cfg.ChunkRows)
		if err != nil {
			return c.readError(tbl, err)
		}
		if len(batch) > 0 {
			if err := c.run.CopyRows(ctx, tbl.spec.DB, tbl.spec.Table, batch); err != nil {
				return err
			}
			n += len(batch)
			if err := c.throttle(ctx, len(batch)); err != nil {
				return err
			}
		}
		if len(batch) < c.cfg.ChunkRows {
			break
		}
	}
	s.Rows[s.Next] = int64(n)
	s.Next, s.Key = s.Next+1, nil
	return c.commit(ctx, n)
}

// commit commits the open chunk with the cursor, at the snapshot's
// position, and reports progress.
func (c *copier) commit(ctx context.Context, rows int) error {
	at := c.st.committed
	if c.snap != nil {
		at = c.snap.at
	}
	c.state.At = at
	if err := c.run.CommitCopy(ctx, at, c.state.String(), rows); err != nil {
		return err
	}
	if copyCommitted != nil {
		copyCommitted(c.state)
	}
	c.st.snapshot = c.state.progress()
	if time.Since(c.st.lastReport) >= progressEvery {
		c.st.send(StateRunning, nil, 0)
	}
	return nil
}

// throttle holds the copy to MaxRowsPerSecond on average since it began.
func (c *copier) throttle(ctx context.Context, rows int) error {
	c.copied += int64(rows)
	if c.cfg.MaxRowsPerSecond <= 0 {
		return nil
	}
	due := c.began.Add(time.Duration(float64(c.copied) / float64(c.cfg.MaxRowsPerSecond) * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		return ctxsleep.Sleep(ctx, d)
	}
	return nil
}

// copyTable is a source table as the copy reads it.
type copyTable struct {
	meta *tableMeta // the source's definition (key: the copy's order)
	spec SnapshotTable
	cols string // the select list
	// keyExpr[i] is the parameter expression compared with key column
	// i in the cursor's condition.
	keyExpr []string
}

// loadCopyTable reads the source's definition of db.table.
func (r *Replicator) loadCopyTable(ctx context.Context, db, table string) (*copyTable, error) {
	m, err := loadTableMeta(ctx, r.source, db, table, 0)
	if err != nil {
		return nil, err
	}
	t := &copyTable{meta: m}
	toDB, toTable := r.filter.route(db, table)
	t.spec = SnapshotTable{DB: db, Table: table, ToDB: toDB, ToTable: toTable}
	sel := make([]string, len(m.cols))
	for i, col := range m.cols {
		t.spec.Columns = append(t.spec.Columns, SnapshotColumn{Name: col.name, DataType: col.dataType})
		sel[i] = quoteIdent(col.name)
		switch col.dataType {
		case "enum", "set", "bit":
			// The binlog's form: an index, a bit mask, an integer.
			sel[i] += "+0"
		}
	}
	t.cols = strings.Join(sel, ", ")
	if m.key == nil {
		return t, nil
	}
	colls := map[string]string{}
	rows, err := r.source.QueryContext(ctx, "SELECT COLUMN_NAME, IFNULL(COLLATION_NAME, '') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, table)
	if err != nil {
		return nil, connectError("source", r.cfg.Source, err)
	}
	for rows.Next() {
		var n, coll string
		if err := rows.Scan(&n, &coll); err != nil {
			rows.Close()
			return nil, err
		}
		colls[n] = coll
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	for _, k := range m.key {
		col := m.cols[k]
		expr := "?"
		switch {
		case col.dataType == "decimal" || col.dataType == "numeric":
			expr = "CAST(? AS DECIMAL(65,30))"
		case isStringType(col.dataType) && col.charset != "":
			// The key's bytes as the column's character set holds them,
			// compared under its collation, as ORDER BY sorts.
			expr = "CONVERT(UNHEX(?) USING " + col.charset + ") COLLATE " + colls[col.name]
		case isStringType(col.dataType):
			expr = "UNHEX(?)"
		}
		t.keyExpr = append(t.keyExpr, expr)
	}
	return t, nil
}

func isStringType(dataType string) bool {
	switch dataType {
	case "char", "varchar", "binary", "varbinary", "tinytext", "text", "mediumtext", "longtext",
		"tinyblob", "blob", "mediumblob", "longblob":
		return true
	}
	return false
}

// showCreate returns the source's CREATE TABLE of tbl, naming its
// target table.
func (c *copier) showCreate(ctx context.Context, tbl *copyTable) (string, error) {
	var name, create string
	if err := c.r.source.QueryRowContext(ctx, "SHOW CREATE TABLE "+qualified(tbl.spec.DB, tbl.spec.Table)).Scan(&name, &create); err != nil {
		return "", connectError("source", c.r.cfg.Source, fmt.Errorf("SHOW CREATE TABLE %s: %w", qualified(tbl.spec.DB, tbl.spec.Table), err))
	}
	head := "CREATE TABLE " + quoteIdent(tbl.spec.Table)
	if !strings.HasPrefix(create, head) {
		return "", fmt.Errorf("SHOW CREATE TABLE %s: unexpected text %q", qualified(tbl.spec.DB, tbl.spec.Table), clip(create))
	}
	return "CREATE TABLE IF NOT EXISTS " + qualified(tbl.spec.ToDB, tbl.spec.ToTable) + create[len(head):], nil
}

// readChunk reads up to ChunkRows rows of a keyed table after key (nil:
// from the first), in key order, from the snapshot.
func (c *copier) readChunk(ctx context.Context, tbl *copyTable, key []keyValue) ([][]any, error) {
	// (k1 > v1) OR (k1 = v1 AND k2 > v2) OR …, which every optimizer
	// turns into a range.
	where, args, err := keyRange(tbl, key, nil)
	if err != nil {
		return nil, err
	}
	q := "SELECT " + tbl.cols + " FROM " + qualified(tbl.spec.DB, tbl.spec.Table) + where + keyOrder(tbl) + " LIMIT ?"
	args = append(args, c.cfg.ChunkRows)
	rows, err := c.snap.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, c.readError(tbl, err)
	}
	defer rows.Close()
	out, err := scanRows(rows, tbl, c.cfg.ChunkRows)
	if err != nil {
		return nil, c.readError(tbl, err)
	}
	return out, nil
}

func (c *copier) readError(tbl *copyTable, err error) error {
	return connectError("source", c.r.cfg.Source, fmt.Errorf("snapshot read of %s: %w", qualified(tbl.spec.DB, tbl.spec.Table), err))
}

// scanRows reads up to n rows, as the binlog would carry them.
func scanRows(rows *sql.Rows, tbl *copyTable, n int) ([][]any, error) {
	var out [][]any
	for len(out) < n && rows.Next() {
		row := make([]any, len(tbl.meta.cols))
		ptrs := make([]any, len(row))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i := range row {
			v, err := binlogValue(&tbl.meta.cols[i], row[i])
			if err != nil {
				return nil, err
			}
			row[i] = v
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// binlogValue turns a value the binary protocol gave into what the
// binlog decoder gives for the column, which is what sinks write: the
// driver gives integers past int64 (an UNSIGNED BIGINT, a BIT(64), a
// SET's mask) as decimal text.
func binlogValue(col *column, v any) (any, error) {
	b, ok := v.([]byte)
	if !ok {
		return v, nil
	}
	switch col.dataType {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year", "bit", "enum", "set":
		if u, err := strconv.ParseUint(string(b), 10, 64); err == nil {
			return u, nil
		}
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("column %s: integer %q: %w", col.name, b, err)
		}
		return n, nil
	}
	return b, nil
}

// encodeKey keeps the value of key column col in the copy cursor.
func encodeKey(col *column, v any) keyValue {
	if b, ok := v.([]byte); ok && !isStringType(col.dataType) {
		return keyValue{"s", string(b)} // decimal or temporal text
	}
	switch x := v.(type) {
	case int64:
		return keyValue{"i", strconv.FormatInt(x, 10)}
	case uint64:
		return keyValue{"u", strconv.FormatUint(x, 10)}
	case float32:
		return keyValue{"f", strconv.FormatFloat(float64(x), 'g', -1, 64)}
	case float64:
		return keyValue{"f", strconv.FormatFloat(x, 'g', -1, 64)}
	case []byte:
		return keyValue{"b", hex.EncodeToString(x)}
	}
	return keyValue{"b", hex.EncodeToString(fmt.Append(nil, v))}
}

// param is the value as a query parameter, matched by the key column's
// expression (copyTable.keyExpr): bytes go as hex.
func (k keyValue) param() (any, error) {
	switch k.Kind {
	case "i":
		return strconv.ParseInt(k.Text, 10, 64)
	case "u":
		return strconv.ParseUint(k.Text, 10, 64)
	case "f":
		return strconv.ParseFloat(k.Text, 64)
	case "b", "s":
		return k.Text, nil
	}
	return nil, nonRetryable(fmt.Errorf("the snapshot cursor has a key value of unknown kind %q", k.Kind))
}
