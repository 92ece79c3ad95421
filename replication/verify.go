package replication

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// This file is verify: a chunk-by-chunk comparison of the source and the
// target while the task runs, and the repair of the rows found to
// differ. The method, and why it is sound, is in the package doc
// ("Verify").

// ErrVerifyUnsupported: verify needs the MySQL sink.
var ErrVerifyUnsupported = errors.New("replication: verify compares a MySQL or MariaDB target only")

// Defaults of VerifyOptions.
const (
	DefaultVerifyRechecks = 3
	DefaultVerifyWait     = 2 * time.Minute
)

// VerifyOptions say what Verify compares and how.
type VerifyOptions struct {
	// Tables are source tables as "db.table"; empty is every table the
	// task includes.
	Tables []string
	// Repair rewrites the rows of confirmed differences on the target
	// (keyed tables), fenced by Epoch, and compares their chunks again.
	Repair bool
	// Epoch fences the repair: it is refused once the target's
	// checkpoint holds a larger epoch (a newer owner). 0 is the epoch the
	// checkpoint holds when Verify begins.
	Epoch int64
	// ChunkRows is the rows of a keyed table per chunk; 0 is
	// DefaultSnapshotChunkRows.
	ChunkRows int
	// Rechecks is how many times a chunk that differs is compared again,
	// each time at a newer position, before the difference counts as
	// confirmed; 0 is DefaultVerifyRechecks.
	Rechecks int
	// Wait bounds each wait for the target to apply a position; 0 is
	// DefaultVerifyWait.
	Wait time.Duration
}

// VerifyReport is what a verify found.
type VerifyReport struct {
	Task     string    `json:"task"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Position is the source position of the last comparison.
	Position Position `json:"position"`
	// Tables are the tables compared, in order.
	Tables []TableVerify `json:"tables"`
	// Chunks and Rows count the chunks compared and the source's rows in
	// them.
	Chunks int   `json:"chunks"`
	Rows   int64 `json:"rows"`
	// Differences counts the confirmed differences left: rows of keyed
	// tables (missing, extra or changed on the target), keyless tables
	// whose checksum differs, and tables missing on the target.
	Differences int `json:"differences"`
	// Repaired counts the rows repaired (Repair) whose chunks then
	// compared equal.
	Repaired int `json:"repaired,omitempty"`
	// Unverified counts the keyless tables not decided either way.
	Unverified int `json:"unverified,omitempty"`
	// Error is why the verify stopped early, if it did: the report then
	// covers the tables before.
	Error string `json:"error,omitempty"`
}

// Clean reports whether the verify ran to the end and found no
// difference.
func (r *VerifyReport) Clean() bool { return r.Differences == 0 && r.Error == "" }

// TableVerify is one table's part of a verify.
type TableVerify struct {
	DB    string `json:"db"`
	Table string `json:"table"`
	// Target is the routed target table, `db`.`table`.
	Target string `json:"target"`
	Keyed  bool   `json:"keyed"`
	Chunks int    `json:"chunks"`
	Rows   int64  `json:"rows"`
	// Diffs are the chunks of a keyed table with confirmed differences.
	Diffs []ChunkDiff `json:"diffs,omitempty"`
	// Differs: a keyless table whose whole-table checksum differed with
	// the target at the source's position.
	Differs bool `json:"differs,omitempty"`
	// Missing: the target has no such table (a confirmed difference).
	Missing bool `json:"missing,omitempty"`
	// Unverified: a keyless table whose comparison was not decided (see
	// the package doc).
	Unverified bool `json:"unverified,omitempty"`
}

// ChunkDiff is a chunk of a keyed table with confirmed differences: the
// key range (After, Through] — nil is unbounded — and the keys that
// differ, each as its key columns' values.
type ChunkDiff struct {
	After   []string   `json:"after,omitempty"`
	Through []string   `json:"through,omitempty"`
	Missing [][]string `json:"missing,omitempty"` // on the source, not on the target
	Extra   [][]string `json:"extra,omitempty"`   // on the target, not on the source
	Changed [][]string `json:"changed,omitempty"` // on both, different
	// Unlisted counts the differing keys beyond the first
	// maxListedKeys, which are not listed (the report is kept in a
	// coordination node, whose size is bounded).
	Unlisted int `json:"unlisted,omitempty"`
	// Repaired: the rows were rewritten and the chunk then compared equal.
	Repaired bool `json:"repaired,omitempty"`

	// keys (Missing, Extra and Changed) and the range, for the repair.
	keys           [][]keyValue
	after, through []keyValue
}

// Keys counts the differing keys.
func (d *ChunkDiff) Keys() int { return len(d.Missing) + len(d.Extra) + len(d.Changed) + d.Unlisted }

// maxListedKeys bounds the keys a ChunkDiff lists.
const maxListedKeys = 100

// verifier runs one Verify.
type verifier struct {
	r      *Replicator
	opts   VerifyOptions
	src    *sql.DB // openSnapshotDB's
	tgt    *mysqlTarget
	id     sourceID
	report *VerifyReport
}

// Verify compares the source's and the target's rows of the task's
// tables, chunk by chunk in key order, each chunk at a source position
// the target has applied, while the task runs (see the package doc,
// "Verify"). The report lists the confirmed differences; with
// opts.Repair they are rewritten first, and the report says what is
// left. An error ends the verify; the report then covers what was
// compared.
func (r *Replicator) Verify(ctx context.Context, opts VerifyOptions) (VerifyReport, error) {
	rep := VerifyReport{Task: r.cfg.Task, Started: time.Now().UTC(), Tables: []TableVerify{}}
	err := r.verify(ctx, opts, &rep)
	rep.Finished = time.Now().UTC()
	if err != nil {
		err = fmt.Errorf("task %q: verify: %w", r.cfg.Task, classify(err))
		rep.Error = err.Error()
	}
	return rep, err
}

func (r *Replicator) verify(ctx context.Context, opts VerifyOptions, rep *VerifyReport) error {
	tgt, ok := r.sink.(*mysqlTarget)
	if !ok {
		return ErrVerifyUnsupported
	}
	if opts.ChunkRows <= 0 {
		opts.ChunkRows = DefaultSnapshotChunkRows
	}
	if opts.Rechecks <= 0 {
		opts.Rechecks = DefaultVerifyRechecks
	}
	if opts.Wait <= 0 {
		opts.Wait = DefaultVerifyWait
	}
	if opts.Epoch == 0 {
		row, _, err := tgt.ckpt.read(ctx, tgt.db)
		if err != nil {
			return err
		}
		opts.Epoch = row.Epoch
	}
	plan, err := r.planCopy(ctx)
	if err != nil {
		return err
	}
	tables := plan.Tables
	if len(opts.Tables) > 0 {
		tables = nil
		for _, name := range opts.Tables {
			db, table, ok := strings.Cut(strings.TrimSpace(name), ".")
			t := [2]string{db, table}
			if !ok || !slices.Contains(plan.Tables, t) {
				return fmt.Errorf("%w: table %q: not a table the task replicates (want db.table)", ErrConfig, name)
			}
			tables = append(tables, t)
		}
	}
	id, err := sourceIdentity(ctx, r.source, r.cfg.Source, r.flavor)
	if err != nil {
		return err
	}
	src, err := openSnapshotDB(r.cfg.Source, r.cfg.Logger)
	if err != nil {
		return err
	}
	defer src.Close()
	v := &verifier{r: r, opts: opts, src: src, tgt: tgt, id: id, report: rep}
	for _, t := range tables {
		if err := v.table(ctx, t[0], t[1]); err != nil {
			return err
		}
	}
	r.log.Info("verify: done", "tables", len(rep.Tables), "chunks", rep.Chunks, "rows", rep.Rows,
		"differences", rep.Differences, "repaired", rep.Repaired, "unverified", rep.Unverified)
	return nil
}

// table compares one table and, with Repair, repairs it.
func (v *verifier) table(ctx context.Context, db, table string) error {
	tbl, err := v.r.loadCopyTable(ctx, db, table)
	if errors.Is(err, errMissingTable) {
		return nil // dropped since listed
	}
	if err != nil {
		return err
	}
	tv := TableVerify{DB: db, Table: table, Target: qualified(tbl.spec.ToDB, tbl.spec.ToTable), Keyed: tbl.meta.key != nil}
	defer func() { v.report.Tables = append(v.report.Tables, tv) }()
	var n int
	err = v.tgt.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
		tbl.spec.ToDB, tbl.spec.ToTable).Scan(&n)
	if err != nil {
		return connectError("target", v.tgt.sink.target, err)
	}
	if n == 0 {
		tv.Missing = true
		v.report.Differences++
		v.r.log.Warn("verify: a table is missing on the target", "table", qualified(db, table), "target", tv.Target)
		return nil
	}
	if !tv.Keyed {
		same, decided, n, err := v.keylessSame(ctx, tbl)
		tv.Chunks, tv.Rows = 1, n
		v.report.Chunks++
		v.report.Rows += n
		if err != nil {
			return err
		}
		if !decided {
			tv.Unverified = true
			v.report.Unverified++
			v.r.log.Warn("verify: a keyless table could not be compared at an exact position (writes to it never paused)", "table", qualified(db, table))
			return nil
		}
		if !same {
			tv.Differs = true
			v.report.Differences++
			v.r.log.Warn("verify: a keyless table differs", "table", qualified(db, table))
		}
		return nil
	}
	var after []keyValue
	for {
		through, srcSum, dstSum, err := v.chunk(ctx, tbl, after)
		if err != nil {
			return err
		}
		tv.Chunks++
		tv.Rows += srcSum.rows
		v.report.Chunks++
		v.report.Rows += srcSum.rows
		if srcSum != dstSum {
			d, err := v.confirm(ctx, tbl, after, through)
			if err != nil {
				return err
			}
			if d != nil {
				if v.opts.Repair {
					if err := v.repair(ctx, tbl, d); err != nil {
						return err
					}
				}
				if !d.Repaired {
					v.report.Differences += d.Keys()
				}
				tv.Diffs = append(tv.Diffs, *d)
			}
		}
		if through == nil {
			return nil
		}
		after = through
	}
}

// checksum is a set of rows' count and the sum of their row hashes.
type checksum struct {
	rows int64
	sum  string
}

// chunk opens a snapshot of the source at P, finds the chunk after
// after (through: its last key, nil when it reaches the table's end),
// reads its checksum, and the target's once the target has applied P.
func (v *verifier) chunk(ctx context.Context, tbl *copyTable, after []keyValue) (through []keyValue, src, dst checksum, err error) {
	err = v.atSnapshot(ctx, func(conn *sql.Conn, at Position) error {
		if through, err = v.boundary(ctx, conn, tbl, after); err != nil {
			return err
		}
		if src, err = sumOf(ctx, conn, tbl, tbl.spec.DB, tbl.spec.Table, after, through); err != nil {
			return v.r.sourceReadError(tbl, err)
		}
		return v.atTarget(ctx, at, func(tconn *sql.Conn, _ Position) (err error) {
			dst, err = sumOf(ctx, tconn, tbl, tbl.spec.ToDB, tbl.spec.ToTable, after, through)
			return err
		})
	})
	return through, src, dst, err
}

// keylessSame compares a keyless table by its whole-table checksum.
// With no key to tell rows changed after a position from rows that
// differ, only a comparison where the target's checkpoint is exactly
// the source snapshot's position decides a difference; one with the
// target further on decides only equality. Of at most 10×Rechecks
// comparisons, the first equal one or the first exact differing one
// decides; if none does, the table is unverified (a steady stream of
// writes to it).
func (v *verifier) keylessSame(ctx context.Context, tbl *copyTable) (same, decided bool, n int64, err error) {
	for range 10 * v.opts.Rechecks {
		var src, dst checksum
		var exact bool
		err := v.atSnapshot(ctx, func(conn *sql.Conn, at Position) error {
			var err error
			if src, err = sumOf(ctx, conn, tbl, tbl.spec.DB, tbl.spec.Table, nil, nil); err != nil {
				return v.r.sourceReadError(tbl, err)
			}
			return v.atTarget(ctx, at, func(tconn *sql.Conn, c Position) (err error) {
				cmp, _ := ComparePositions(v.r.flavor, c, at)
				exact = cmp == 0
				dst, err = sumOf(ctx, tconn, tbl, tbl.spec.ToDB, tbl.spec.ToTable, nil, nil)
				return err
			})
		})
		if err != nil {
			return false, false, 0, err
		}
		n = src.rows
		switch {
		case src == dst:
			return true, true, n, nil
		case exact:
			return false, true, n, nil
		}
	}
	return false, false, n, nil
}

// confirm compares the rows of the range (after, through] by their
// hashes Rechecks times, each at a newer source position, and returns
// the keys that differed every time with the same rows on both sides
// (nil if none did: the chunk had changed between a position and the
// target's read of it).
func (v *verifier) confirm(ctx context.Context, tbl *copyTable, after, through []keyValue) (*ChunkDiff, error) {
	var last map[string]rowDiff
	for i := range v.opts.Rechecks {
		var src, dst map[string]keyedHash
		err := v.atSnapshot(ctx, func(conn *sql.Conn, at Position) error {
			var err error
			if src, err = hashesOf(ctx, conn, tbl, tbl.spec.DB, tbl.spec.Table, after, through); err != nil {
				return v.r.sourceReadError(tbl, err)
			}
			return v.atTarget(ctx, at, func(tconn *sql.Conn, _ Position) (err error) {
				dst, err = hashesOf(ctx, tconn, tbl, tbl.spec.ToDB, tbl.spec.ToTable, after, through)
				return err
			})
		})
		if err != nil {
			return nil, err
		}
		diff := map[string]rowDiff{}
		for k, s := range src {
			d, ok := dst[k]
			switch {
			case !ok:
				diff[k] = rowDiff{s.key, 'm', s.hash, ""}
			case d.hash != s.hash:
				diff[k] = rowDiff{s.key, 'c', s.hash, d.hash}
			}
		}
		for k, d := range dst {
			if _, ok := src[k]; !ok {
				diff[k] = rowDiff{d.key, 'x', "", d.hash}
			}
		}
		if i > 0 {
			// A key stays only if both sides hold the same rows as at the
			// previous comparison: a row the source keeps changing (a hot
			// counter) differs at every comparison while the target
			// follows it, and is not a confirmed difference.
			for k, d := range diff {
				if l, ok := last[k]; !ok || l.src != d.src || l.dst != d.dst {
					delete(diff, k)
				}
			}
		}
		if len(diff) == 0 {
			return nil, nil
		}
		last = diff
	}
	d := &ChunkDiff{After: showKey(after), Through: showKey(through), after: after, through: through}
	for _, k := range slices.Sorted(maps.Keys(last)) {
		rd := last[k]
		d.keys = append(d.keys, rd.key)
		if len(d.keys) > maxListedKeys {
			d.Unlisted++
			continue
		}
		switch rd.kind {
		case 'm':
			d.Missing = append(d.Missing, showKey(rd.key))
		case 'x':
			d.Extra = append(d.Extra, showKey(rd.key))
		default:
			d.Changed = append(d.Changed, showKey(rd.key))
		}
	}
	v.r.log.Warn("verify: confirmed difference", "table", qualified(tbl.spec.DB, tbl.spec.Table),
		"after", d.After, "through", d.Through, "missing", len(d.Missing), "extra", len(d.Extra), "changed", len(d.Changed))
	return d, nil
}

type rowDiff struct {
	key      []keyValue
	kind     byte   // m missing, x extra, c changed
	src, dst string // the row's hash on each side ("" absent)
}

// atSnapshot runs fn in a new consistent snapshot of the source at its
// position, and ends the snapshot: the source is read for one chunk at a
// time, and never locked on MariaDB (see startSnapshot).
func (v *verifier) atSnapshot(ctx context.Context, fn func(*sql.Conn, Position) error) error {
	conn, err := v.src.Conn(ctx)
	if err != nil {
		return connectError("source", v.r.cfg.Source, err)
	}
	defer conn.Close()
	at, err := v.r.startSnapshot(ctx, conn)
	if err != nil {
		return err
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK") }()
	at.Server = v.id.Name
	v.report.Position = at
	return fn(conn, at)
}

// atTarget waits until the target's checkpoint has reached at, then runs
// fn in a consistent snapshot of the target that sees that checkpoint:
// the target as of a position at or after at.
func (v *verifier) atTarget(ctx context.Context, at Position, fn func(conn *sql.Conn, checkpoint Position) error) error {
	conn, err := v.tgt.db.Conn(ctx)
	if err != nil {
		return connectError("target", v.tgt.sink.target, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return connectError("target", v.tgt.sink.target, err)
	}
	deadline := time.Now().Add(v.opts.Wait)
	pause := time.Millisecond
	for {
		if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
			return connectError("target", v.tgt.sink.target, err)
		}
		row, _, err := v.tgt.ckpt.read(ctx, conn)
		if err != nil {
			return err
		}
		cmp, ok := ComparePositions(v.r.flavor, row.Position, at)
		if ok && cmp >= 0 {
			err := fn(conn, row.Position)
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			if err != nil {
				return connectError("target", v.tgt.sink.target, fmt.Errorf("verify read: %w", err))
			}
			return nil
		}
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			return connectError("target", v.tgt.sink.target, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the target's checkpoint %s has not reached the source position %s within %s: is the task running?", row.Position, at, v.opts.Wait)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// sourceReadError is a failed read of tbl on the source.
func (r *Replicator) sourceReadError(tbl *copyTable, err error) error {
	return connectError("source", r.cfg.Source, fmt.Errorf("verify read of %s: %w", qualified(tbl.spec.DB, tbl.spec.Table), err))
}

// rowHashExpr is the hash of a row, the same text on both servers for
// the same stored values: every column as text in one CONCAT_WS, strings
// and binary strings as the hex of their bytes (no character set
// conversion, no collation: 'a' and 'A' differ), ENUM, SET and BIT as
// their numbers, NULL as N (a mark no hex or number text equals).
func rowHashExpr(tbl *copyTable) string {
	parts := make([]string, len(tbl.meta.cols))
	for i, c := range tbl.meta.cols {
		e := quoteIdent(c.name)
		switch {
		case isStringType(c.dataType):
			e = "HEX(" + e + ")"
		case c.dataType == "json":
			e = "HEX(CAST(" + e + " AS CHAR))"
		case c.dataType == "enum" || c.dataType == "set" || c.dataType == "bit":
			e += "+0"
		}
		parts[i] = "IFNULL(" + e + ", 'N')"
	}
	return "MD5(CONCAT_WS('|', " + strings.Join(parts, ", ") + "))"
}

// keySelect is the select list of the key columns as text: strings as
// the hex of their bytes, the rest as the server renders them.
func keySelect(tbl *copyTable) string {
	sel := make([]string, len(tbl.meta.key))
	for i, k := range tbl.meta.key {
		c := tbl.meta.cols[k]
		e := quoteIdent(c.name)
		switch {
		case isStringType(c.dataType):
			e = "HEX(" + e + ")"
		case c.dataType == "enum" || c.dataType == "set" || c.dataType == "bit":
			e += "+0"
		}
		sel[i] = "CAST(" + e + " AS CHAR)"
	}
	return strings.Join(sel, ", ")
}

// scanKey reads a keySelect's columns as a key.
func scanKey(tbl *copyTable, text []sql.NullString) []keyValue {
	key := make([]keyValue, len(text))
	for i, k := range tbl.meta.key {
		kind := "s"
		if isStringType(tbl.meta.cols[k].dataType) {
			kind = "b"
		}
		key[i] = keyValue{kind, text[i].String}
	}
	return key
}

// showKey renders a key for people: strings as text when they are
// UTF-8, else 0x and their hex.
func showKey(key []keyValue) []string {
	if key == nil {
		return nil
	}
	out := make([]string, len(key))
	for i, k := range key {
		out[i] = k.Text
		if k.Kind == "b" {
			b, err := hex.DecodeString(k.Text)
			if err == nil && utf8.Valid(b) {
				out[i] = string(b)
			} else {
				out[i] = "0x" + k.Text
			}
		}
	}
	return out
}

// keyRange is the WHERE clause of the range (after, through] of tbl's
// key, with its parameters; "" when it is the whole table.
func keyRange(tbl *copyTable, after, through []keyValue) (string, []any, error) {
	var conds []string
	var args []any
	for _, b := range []struct {
		key  []keyValue
		op   string
		last string
	}{{after, " > ", " > "}, {through, " < ", " <= "}} {
		if b.key == nil {
			continue
		}
		c, a, err := keyBound(tbl, b.key, b.op, b.last)
		if err != nil {
			return "", nil, err
		}
		conds, args = append(conds, "("+c+")"), append(args, a...)
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args, nil
}

// keyOrder is the ORDER BY of tbl's key.
func keyOrder(tbl *copyTable) string {
	cols := make([]string, len(tbl.meta.key))
	for i, k := range tbl.meta.key {
		cols[i] = quoteIdent(tbl.meta.cols[k].name)
	}
	return " ORDER BY " + strings.Join(cols, ", ")
}

// boundary returns the last key of the chunk after after: the
// ChunkRows-th key, nil when fewer are left (the chunk reaches the end).
func (v *verifier) boundary(ctx context.Context, conn *sql.Conn, tbl *copyTable, after []keyValue) ([]keyValue, error) {
	where, args, err := keyRange(tbl, after, nil)
	if err != nil {
		return nil, err
	}
	q := "SELECT " + keySelect(tbl) + " FROM " + qualified(tbl.spec.DB, tbl.spec.Table) + where + keyOrder(tbl) + " LIMIT 1 OFFSET ?"
	text := make([]sql.NullString, len(tbl.meta.key))
	ptrs := make([]any, len(text))
	for i := range text {
		ptrs[i] = &text[i]
	}
	err = conn.QueryRowContext(ctx, q, append(args, v.opts.ChunkRows-1)...).Scan(ptrs...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, v.r.sourceReadError(tbl, err)
	}
	return scanKey(tbl, text), nil
}

// sumOf reads the checksum of the range (after, through] of table
// db.table (the source's or the routed target's, of tbl's columns): the
// count and the sum of the first 60 bits of each row's hash, which
// counts duplicate rows (a keyless table's) and does not depend on
// order.
func sumOf(ctx context.Context, q queryer, tbl *copyTable, db, table string, after, through []keyValue) (checksum, error) {
	where, args, err := keyRange(tbl, after, through)
	if err != nil {
		return checksum{}, err
	}
	query := "SELECT COUNT(*), CAST(COALESCE(SUM(CAST(CONV(LEFT(" + rowHashExpr(tbl) + ", 15), 16, 10) AS UNSIGNED)), 0) AS CHAR) FROM " +
		qualified(db, table) + where
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return checksum{}, err
	}
	defer rows.Close()
	var s checksum
	if rows.Next() {
		if err := rows.Scan(&s.rows, &s.sum); err != nil {
			return checksum{}, err
		}
	}
	return s, rows.Err()
}

// keyedHash is a row's key and hash.
type keyedHash struct {
	key  []keyValue
	hash string
}

// hashesOf reads the key and hash of every row of the range (after,
// through], by the key's text.
func hashesOf(ctx context.Context, q queryer, tbl *copyTable, db, table string, after, through []keyValue) (map[string]keyedHash, error) {
	where, args, err := keyRange(tbl, after, through)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, "SELECT "+keySelect(tbl)+", CAST("+rowHashExpr(tbl)+" AS CHAR) FROM "+qualified(db, table)+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]keyedHash{}
	text := make([]sql.NullString, len(tbl.meta.key)+1)
	ptrs := make([]any, len(text))
	for i := range text {
		ptrs[i] = &text[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		key := scanKey(tbl, text[:len(tbl.meta.key)])
		var id strings.Builder
		for _, k := range key {
			id.WriteString(k.Text)
			id.WriteByte(0)
		}
		out[id.String()] = keyedHash{key, text[len(text)-1].String}
	}
	return out, rows.Err()
}

// keyBound is (k1 OP v1) OR (k1 = v1 AND k2 OP v2) OR … with last as the
// operator of the last column's term: after a key (" > ", " > ") or up
// to it (" < ", " <= ").
func keyBound(tbl *copyTable, key []keyValue, op, last string) (string, []any, error) {
	var q strings.Builder
	var args []any
	n := len(tbl.meta.key)
	for i := range n {
		if i > 0 {
			q.WriteString(" OR ")
		}
		q.WriteString("(")
		for j := 0; j <= i; j++ {
			o := " = "
			switch {
			case j == i && i == n-1:
				o = last
			case j == i:
				o = op
			}
			if j > 0 {
				q.WriteString(" AND ")
			}
			q.WriteString(quoteIdent(tbl.meta.cols[tbl.meta.key[j]].name) + o + tbl.keyExpr[j])
			v, err := key[j].param()
			if err != nil {
				return "", nil, err
			}
			args = append(args, v)
		}
		q.WriteString(")")
	}
	return q.String(), args, nil
}

// repair rewrites the rows of d on the target in one transaction fenced
// like the applier's commits: it locks the task's checkpoint row (FOR
// UPDATE) and goes on only while its epoch is not larger than
// opts.Epoch. With the lock held the applier cannot commit, so the
// target stays at its checkpoint C while the repair reads the source's
// rows, at a position P at or after C (the source is always ahead of
// what the target applied); it deletes the keys the source lacks and
// REPLACEs the others with the source's rows. Changes to those keys
// between C and P are applied again by the applier afterwards, each a
// REPLACE or DELETE of a full row image, so the target converges to the
// source. The chunk is then compared again.
func (v *verifier) repair(ctx context.Context, tbl *copyTable, d *ChunkDiff) error {
	var err error
	for attempt := 0; ; attempt++ {
		if err = v.repairOnce(ctx, tbl, d); err == nil || !retryable(err) || attempt == 2 || ctx.Err() != nil {
			break
		}
		v.r.log.Info("verify: repair retried", "table", qualified(tbl.spec.DB, tbl.spec.Table), "error", err)
	}
	if err != nil {
		return fmt.Errorf("repair of %s: %w", qualified(tbl.spec.DB, tbl.spec.Table), err)
	}
	left, err := v.confirm(ctx, tbl, d.after, d.through)
	if err != nil {
		return err
	}
	same := left == nil
	if same {
		d.Repaired = true
		v.report.Repaired += d.Keys()
	}
	v.r.log.Info("verify: chunk repaired", "table", qualified(tbl.spec.DB, tbl.spec.Table), "keys", d.Keys(), "equal_after", same)
	return nil
}

func (v *verifier) repairOnce(ctx context.Context, tbl *copyTable, d *ChunkDiff) error {
	conn, err := v.tgt.db.Conn(ctx)
	if err != nil {
		return connectError("target", v.tgt.sink.target, err)
	}
	defer conn.Close()
	if err := checkStrict(ctx, conn); err != nil {
		return err
	}
	meta, err := loadTableMeta(ctx, conn, tbl.spec.ToDB, tbl.spec.ToTable, 0)
	if err != nil {
		return err
	}
	if len(meta.cols) != len(tbl.meta.cols) {
		return fmt.Errorf("%w: target table %s has %d columns, source table %s %d", ErrIncompatibleTable, meta.name, len(meta.cols), qualified(tbl.spec.DB, tbl.spec.Table), len(tbl.meta.cols))
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return connectError("target", v.tgt.sink.target, err)
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	var epoch int64
	var owner string
	err = conn.QueryRowContext(ctx, "SELECT epoch, owner FROM "+v.tgt.ckpt.table+" WHERE task = ? FOR UPDATE", v.tgt.ckpt.task).Scan(&epoch, &owner)
	if err != nil {
		return fmt.Errorf("lock the checkpoint of task %q: %w", v.tgt.ckpt.task, err)
	}
	if epoch > v.opts.Epoch {
		return fmt.Errorf("%w: task %q: the repair's epoch %d is older than the stored epoch %d of owner %q", ErrFenced, v.tgt.ckpt.task, v.opts.Epoch, epoch, owner)
	}
	// The source's rows of the keys, read now: at or after the checkpoint
	// the lock holds still.
	present := map[int]bool{}
	var rows [][]any
	err = v.atSnapshot(ctx, func(sconn *sql.Conn, _ Position) error {
		for i, key := range d.keys {
			args, err := keyParams(key)
			if err != nil {
				return err
			}
			r, err := sconn.QueryContext(ctx, "SELECT "+tbl.cols+" FROM "+qualified(tbl.spec.DB, tbl.spec.Table)+" WHERE "+keyEqual(tbl)+" LIMIT ?", append(args, 1)...)
			if err != nil {
				return v.r.sourceReadError(tbl, err)
			}
			got, err := scanRows(r, tbl, 1)
			r.Close()
			if err != nil {
				return v.r.sourceReadError(tbl, err)
			}
			if len(got) == 1 {
				present[i] = true
				rows = append(rows, got[0])
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, key := range d.keys {
		if present[i] {
			continue
		}
		args, err := keyParams(key)
		if err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, "DELETE FROM "+meta.name+" WHERE "+keyEqual(tbl), args...); err != nil {
			return &ApplyError{Statement: "DELETE FROM " + meta.name, Err: err}
		}
	}
	for _, row := range rows {
		q, err := appendRowValues(nil, opReplace, meta, true, row)
		if err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, string(q)); err != nil {
			return &ApplyError{Statement: clip(string(q)), Err: err}
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return connectError("target", v.tgt.sink.target, err)
	}
	committed = true
	v.r.log.Info("verify: rows repaired", "table", meta.name, "replaced", len(rows), "deleted", len(d.keys)-len(rows), "epoch", v.opts.Epoch)
	return nil
}

// keyEqual is k1 = ? AND k2 = ? … in tbl's key expressions.
func keyEqual(tbl *copyTable) string {
	conds := make([]string, len(tbl.meta.key))
	for i, k := range tbl.meta.key {
		conds[i] = quoteIdent(tbl.meta.cols[k].name) + " = " + tbl.keyExpr[i]
	}
	return strings.Join(conds, " AND ")
}

// keyParams is a key's values as query parameters.
func keyParams(key []keyValue) ([]any, error) {
	args := make([]any, len(key))
	for i, k := range key {
		v, err := k.param()
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	return args, nil
}
