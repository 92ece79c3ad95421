package replication

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Checkpoint is what the target's checkpoint row says: the source
// position of the last transaction applied (committed in the same target
// transaction as its rows), and who committed it.
type Checkpoint struct {
	Position Position
	Epoch    int64
	Owner    string
	Time     time.Time // when it was committed, UTC
	// Followed is the MariaDB history the target followed up to Position
	// (checkpointRow.gtidState), for SourceHealth.TakeoverProblem; ""
	// when unknown.
	Followed string
	// Snapshot is the state of the task's snapshot copy as CommitCopy
	// last committed it ("" when the task never copied): which tables
	// are copied, and how far into the one being copied.
	Snapshot string
}

// checkpointRow is the stored row, with the DDL marker Run keeps private.
type checkpointRow struct {
	Checkpoint
	// ddlPending marks a DDL statement that may or may not have been
	// executed: DDL commits on its own, so it cannot share a transaction
	// with the checkpoint. It holds ddlKey of the source transaction's
	// start; see applier.applyDDL.
	ddlPending string
	// gtidState is the MariaDB history the target followed up to
	// Position (see followedState), "" when unknown: on MySQL, and in a
	// row written before the column existed.
	gtidState string
}

// checkpointStore runs the checkpoint statements for one task.
type checkpointStore struct {
	task  string
	table string // `schema`.`shepherd_checkpoint`
}

func newCheckpointStore(schema, task string) checkpointStore {
	return checkpointStore{task: task, table: qualified(schema, CheckpointTable)}
}

// execer is a connection or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// create makes the schema, the table and the task's row (epoch 0, no
// position) if they are missing.
func (s checkpointStore) create(ctx context.Context, db execer, schema string) error {
	stmts := []string{
		"CREATE DATABASE IF NOT EXISTS " + quoteIdent(schema),
		"CREATE TABLE IF NOT EXISTS " + s.table + ` (
			task        VARCHAR(191) NOT NULL PRIMARY KEY,
			binlog_file VARCHAR(255) NOT NULL DEFAULT '',
			binlog_pos  BIGINT UNSIGNED NOT NULL DEFAULT 0,
			gtid        TEXT NOT NULL,
			epoch       BIGINT NOT NULL DEFAULT 0,
			owner       VARCHAR(255) NOT NULL DEFAULT '',
			ddl_pending VARCHAR(1024) NOT NULL DEFAULT '',
			updated_at  DATETIME(6) NULL,
			` + addedColumns[0].def + `,
			` + addedColumns[1].def + `,
			` + addedColumns[2].def + `
		) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create checkpoint table %s: %w", s.table, err)
		}
	}
	for _, c := range addedColumns {
		if err := s.addColumn(ctx, db, schema, c.name, c.def); err != nil {
			return err
		}
	}
	if _, err := db.ExecContext(ctx, "INSERT IGNORE INTO "+s.table+" (task, gtid) VALUES (?, '')", s.task); err != nil {
		return fmt.Errorf("create checkpoint row of task %q in %s: %w", s.task, s.table, err)
	}
	return nil
}

// addedColumns are the checkpoint columns added since the first version
// of the table, in order, for new tables and those made before them:
// source_server is Position.Server; gtid_state the history followed
// (checkpointRow.gtidState), NULL in the rows of an older table (TEXT
// has no default on older MySQL) and read as "" (unknown);
// snapshot_state Checkpoint.Snapshot, NULL until a copy commits.
var addedColumns = []struct{ name, def string }{
	{"source_server", "source_server VARCHAR(255) NOT NULL DEFAULT ''"},
	{"gtid_state", "gtid_state TEXT NULL"},
	{"snapshot_state", "snapshot_state MEDIUMTEXT NULL"},
}

// addColumn adds the column name, defined as def, to a table made before
// it existed. MySQL has no ADD COLUMN IF NOT EXISTS, so the catalogue is
// asked first; two Runs racing here both try, and the loser's "duplicate
// column" is the same outcome.
func (s checkpointStore) addColumn(ctx context.Context, db execer, schema, name, def string) error {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?",
		schema, CheckpointTable, name).Scan(&n)
	if err != nil {
		return fmt.Errorf("check checkpoint table %s for %s: %w", s.table, name, err)
	}
	if n > 0 {
		return nil
	}
	_, err = db.ExecContext(ctx, "ALTER TABLE "+s.table+" ADD COLUMN "+def)
	if err != nil && !isDuplicateColumn(err) {
		return fmt.Errorf("add %s to checkpoint table %s: %w", name, s.table, err)
	}
	return nil
}

// isDuplicateColumn reports MySQL's ER_DUP_FIELDNAME.
func isDuplicateColumn(err error) bool {
	code, _, ok := serverErrorCode(err)
	return ok && code == 1060
}

// read returns the task's row; ok is false when there is none.
func (s checkpointStore) read(ctx context.Context, db execer) (checkpointRow, bool, error) {
	var row checkpointRow
	var at sql.NullTime
	var pos uint64
	err := db.QueryRowContext(ctx, "SELECT binlog_file, binlog_pos, gtid, source_server, COALESCE(gtid_state, ''), COALESCE(snapshot_state, ''), epoch, owner, ddl_pending, updated_at FROM "+s.table+" WHERE task = ?", s.task).
		Scan(&row.Position.File, &pos, &row.Position.GTID, &row.Position.Server, &row.gtidState, &row.Snapshot, &row.Epoch, &row.Owner, &row.ddlPending, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return row, false, nil
	}
	if err != nil {
		return row, false, fmt.Errorf("read checkpoint of task %q from %s: %w", s.task, s.table, err)
	}
	row.Position.Pos = uint32(pos)
	if at.Valid {
		row.Time = at.Time.UTC()
	}
	return row, true, nil
}

// claim raises the row's epoch to epoch, creating the row if needed, and
// fails with ErrFenced if a larger epoch is stored. Claiming first means
// that once a new owner has started, an older one's next commit fails.
func (s checkpointStore) claim(ctx context.Context, db execer, epoch int64, owner string) error {
	if _, err := db.ExecContext(ctx, "INSERT IGNORE INTO "+s.table+" (task, gtid) VALUES (?, '')", s.task); err != nil {
		return fmt.Errorf("claim task %q in %s: %w", s.task, s.table, err)
	}
	res, err := db.ExecContext(ctx, "UPDATE "+s.table+" SET epoch = ?, owner = ? WHERE task = ? AND epoch <= ?", epoch, owner, s.task, epoch)
	if err != nil {
		return fmt.Errorf("claim task %q in %s: %w", s.task, s.table, err)
	}
	return s.checkFence(ctx, db, res, epoch)
}

// resetEpoch sets the row's epoch to 0, position untouched.
func (s checkpointStore) resetEpoch(ctx context.Context, db execer) error {
	if _, err := db.ExecContext(ctx, "UPDATE "+s.table+" SET epoch = 0 WHERE task = ?", s.task); err != nil {
		return fmt.Errorf("reset the epoch of task %q in %s: %w", s.task, s.table, err)
	}
	return nil
}

// commit writes the position and the history followed up to it (see
// checkpointRow.gtidState) inside the caller's transaction, on condition
// that no larger epoch has claimed the task. It clears ddlPending unless
// pending is given.
func (s checkpointStore) commit(ctx context.Context, tx execer, pos Position, state followedState, epoch int64, owner, pending string) error {
	res, err := tx.ExecContext(ctx, "UPDATE "+s.table+
		" SET binlog_file = ?, binlog_pos = ?, gtid = ?, source_server = ?, gtid_state = ?, epoch = ?, owner = ?, ddl_pending = ?, updated_at = UTC_TIMESTAMP(6) WHERE task = ? AND epoch <= ?",
		pos.File, uint64(pos.Pos), pos.GTID, pos.Server, state.String(), epoch, owner, pending, s.task, epoch)
	if err != nil {
		return fmt.Errorf("write checkpoint %s of task %q: %w", pos, s.task, err)
	}
	return s.checkFence(ctx, tx, res, epoch)
}

// commitStatement is the checkpoint UPDATE of a multi-statement commit
// (see targetSession), moving the checkpoint from prev to pos, with state
// the history followed up to pos (checkpointRow.gtidState): a larger
// stored epoch, or a stored position other than prev, makes it fail with
// "Column 'epoch' cannot be null", so the COMMIT after it never runs.
//
// The position check fences a Run against another of the same epoch —
// in practice its own past: a packet a cancelled or disconnected Run had
// already written is still executed by the target after the client is
// gone, possibly after the next Run read the checkpoint. Whichever of
// the two commits second finds the position moved and rolls back, so no
// source transaction is applied twice.
//
// The history is not part of the condition: it moves with the position,
// in the same statement, so a position check covers it.
//
// snapshot, when not nil, is the snapshot copy's state committed with
// the chunk of rows it covers (Checkpoint.Snapshot).
func (s checkpointStore) commitStatement(prev, pos Position, state followedState, epoch int64, owner string, snapshot *string) []byte {
	// epoch is assigned first: MySQL evaluates the assignments of an
	// UPDATE in order, and a later one sees the columns set before it.
	b := append([]byte("UPDATE "), s.table...)
	b = append(b, " SET epoch = IF(epoch <= "...)
	b = strconv.AppendInt(b, epoch, 10)
	b = appendPosition(append(b, " AND "...), prev, " AND ")
	b = append(b, ", "...)
	b = strconv.AppendInt(b, epoch, 10)
	b = appendPosition(append(b, ", NULL), "...), pos, ", ")
	b = state.appendTo(append(b, ", gtid_state = '"...)) // digits, '-' and ','
	b = append(b, "', owner = "...)
	b = appendQuoted(b, owner)
	if snapshot != nil {
		b = append(b, ", snapshot_state = "...)
		b = appendQuoted(b, *snapshot)
	}
	b = append(b, ", ddl_pending = '', updated_at = UTC_TIMESTAMP(6) WHERE task = "...)
	return appendQuoted(b, s.task)
}

// appendPosition writes the checkpoint columns of p as col = value,
// joined by sep: a condition (" AND ") or assignments (", ").
func appendPosition(b []byte, p Position, sep string) []byte {
	b = append(b, "binlog_file = "...)
	b = appendQuoted(b, p.File)
	b = append(b, sep...)
	b = append(b, "binlog_pos = "...)
	b = strconv.AppendUint(b, uint64(p.Pos), 10)
	b = append(b, sep...)
	b = append(b, "gtid = "...)
	b = appendQuoted(b, p.GTID)
	b = append(b, sep...)
	b = append(b, "source_server = "...)
	return appendQuoted(b, p.Server)
}

// markDDL records pending as the DDL about to run, fenced like commit.
func (s checkpointStore) markDDL(ctx context.Context, db execer, epoch int64, owner, pending string) error {
	res, err := db.ExecContext(ctx, "UPDATE "+s.table+" SET epoch = ?, owner = ?, ddl_pending = ?, updated_at = UTC_TIMESTAMP(6) WHERE task = ? AND epoch <= ?",
		epoch, owner, pending, s.task, epoch)
	if err != nil {
		return fmt.Errorf("mark DDL of task %q: %w", s.task, err)
	}
	return s.checkFence(ctx, db, res, epoch)
}

// checkFence turns "no row matched" into ErrFenced, naming the epoch and
// owner that won. The connection reports matched rather than changed
// rows (CLIENT_FOUND_ROWS), so a rewrite of identical values still counts.
func (s checkpointStore) checkFence(ctx context.Context, db execer, res sql.Result, epoch int64) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("checkpoint of task %q: %w", s.task, err)
	}
	if n > 0 {
		return nil
	}
	row, ok, err := s.read(ctx, db)
	switch {
	case err != nil:
		return fmt.Errorf("%w: task %q: epoch %d refused (and reading the row failed: %v)", ErrFenced, s.task, epoch, err)
	case !ok:
		return fmt.Errorf("%w: task %q: its checkpoint row in %s is gone", ErrFenced, s.task, s.table)
	}
	return fmt.Errorf("%w: task %q: epoch %d is older than the stored epoch %d of owner %q", ErrFenced, s.task, epoch, row.Epoch, row.Owner)
}

// ddlKey names the source transaction holding a DDL statement by where it
// starts, which is also where a resumed Run begins reading it again.
func ddlKey(start Position) string {
	if start.File != "" {
		return start.File + ":" + strconv.FormatUint(uint64(start.Pos), 10)
	}
	return "gtid:" + start.GTID
}
