package replication

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Row events carry values by column position only (and, unless the source
// runs with binlog_row_metadata=FULL, without names, signedness or ENUM
// labels). The names and types needed to write them are read from the
// TARGET's information_schema, not the source's: DDL is applied in binlog
// order, so the target table is exactly as it was on the source when the
// event was written, while the source's information_schema describes the
// table as it is now — after any later ALTER the replicator has not yet
// reached. The cache is emptied whenever a DDL statement is applied.

// column is what the applier needs to know about one column.
type column struct {
	name      string
	dataType  string // information_schema DATA_TYPE, lower case: int, varchar, enum, json…
	unsigned  bool
	charset   string // CHARACTER_SET_NAME; empty for non-character types and binary strings
	generated bool   // VIRTUAL or STORED/PERSISTENT: computed by the target, never written
	labels    []string
}

// tableMeta describes one target table.
type tableMeta struct {
	db, table string // target names
	cols      []column
	// key lists the columns that identify a row: the primary key, or else
	// the first unique key whose columns are all NOT NULL (what InnoDB
	// would use). Nil means none: rows are matched by their full image.
	key []int
	// exactKey says that two key values are the same key exactly when
	// their literals are the same text (integers, decimals, temporal
	// values), as opposed to strings under a collation, where 'a' and
	// 'A ' can be one key, or floats (0 and -0).
	exactKey bool
	// written lists the columns written by INSERT/REPLACE/UPDATE: all but
	// the generated ones.
	written []int
	name    string // `db`.`table`, quoted
	// prepRows is the rows of one execution of the table's prepared
	// multi-row REPLACE (prep, prepared on first use), 0 when its rows
	// are written as text only: tables without a key, or with a
	// character column whose values a parameter cannot carry unchanged
	// (paramOK).
	prepRows int
	prep     *sql.Stmt
}

const (
	// prepChunkRows is the rows of a prepared REPLACE. Measured on
	// sysbench rows, the target's CPU per row barely changes above 100,
	// and a transaction's last chunk of fewer rows goes as text.
	prepChunkRows = 100
	// maxParams is the most placeholders a statement may have.
	maxParams = 65535
	// maxPrepared bounds the prepared statements one apply session holds
	// (the server's max_prepared_stmt_count is global and 16382 by
	// default); tables beyond it are written as text.
	maxPrepared = 256
)

// errMissingTable is returned (wrapped) for a table the target lacks.
var errMissingTable = fmt.Errorf("table does not exist on the target (create it there, or replicate its CREATE TABLE by starting before it)")

// loadTableMeta reads the definition of db.table from information_schema
// over q (the apply connection, so that it sees the applier's own DDL).
func loadTableMeta(ctx context.Context, q queryer, db, table string, chunkRows int) (*tableMeta, error) {
	rows, err := q.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IFNULL(CHARACTER_SET_NAME, ''), EXTRA, IS_NULLABLE
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, db, table)
	if err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", qualified(db, table), err)
	}
	defer rows.Close()
	m := &tableMeta{db: db, table: table, name: qualified(db, table)}
	notNull := map[string]bool{}
	byName := map[string]int{}
	for rows.Next() {
		var c column
		var colType, extra, nullable string
		if err := rows.Scan(&c.name, &c.dataType, &colType, &c.charset, &extra, &nullable); err != nil {
			return nil, fmt.Errorf("read columns of %s: %w", m.name, err)
		}
		c.dataType = strings.ToLower(c.dataType)
		lowerType := strings.ToLower(colType)
		c.unsigned = strings.Contains(lowerType, "unsigned")
		if c.charset == "binary" {
			c.charset = ""
		}
		c.generated = isGeneratedExtra(extra)
		if c.dataType == "enum" || c.dataType == "set" {
			if c.labels, err = parseLabels(colType); err != nil {
				return nil, fmt.Errorf("column %s of %s: %w", c.name, m.name, err)
			}
		}
		notNull[strings.ToLower(c.name)] = nullable == "NO"
		byName[strings.ToLower(c.name)] = len(m.cols)
		if !c.generated {
			m.written = append(m.written, len(m.cols))
		}
		m.cols = append(m.cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read columns of %s: %w", m.name, err)
	}
	if len(m.cols) == 0 {
		return nil, fmt.Errorf("%s: %w", m.name, errMissingTable)
	}
	if m.key, err = loadKey(ctx, q, m, byName, notNull); err != nil {
		return nil, err
	}
	m.exactKey = m.key != nil
	if m.key != nil && len(m.written) > 0 {
		m.prepRows = min(chunkRows, maxParams/len(m.written))
		for _, c := range m.written {
			if !paramOK(&m.cols[c]) {
				m.prepRows = 0
			}
		}
	}
	for _, k := range m.key {
		switch m.cols[k].dataType {
		case "tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "numeric", "date", "datetime", "timestamp", "time", "year":
		default:
			m.exactKey = false
		}
	}
	return m, nil
}

// loadKey picks the identifying key of m from information_schema.STATISTICS.
func loadKey(ctx context.Context, q queryer, m *tableMeta, byName map[string]int, notNull map[string]bool) ([]int, error) {
	rows, err := q.QueryContext(ctx, `SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0 ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX`, m.db, m.table)
	if err != nil {
		return nil, fmt.Errorf("read keys of %s: %w", m.name, err)
	}
	defer rows.Close()
	type index struct {
		name   string
		cols   []int
		usable bool
	}
	var order []*index
	byIndex := map[string]*index{}
	for rows.Next() {
		var name, col string
		if err := rows.Scan(&name, &col); err != nil {
			return nil, fmt.Errorf("read keys of %s: %w", m.name, err)
		}
		ix := byIndex[name]
		if ix == nil {
			ix = &index{name: name, usable: true}
			byIndex[name] = ix
			order = append(order, ix)
		}
		i, ok := byName[strings.ToLower(col)]
		if !ok || !notNull[strings.ToLower(col)] {
			ix.usable = false
			continue
		}
		ix.cols = append(ix.cols, i)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read keys of %s: %w", m.name, err)
	}
	for _, ix := range order {
		if ix.usable && len(ix.cols) > 0 {
			return ix.cols, nil
		}
	}
	return nil, nil
}

// isGeneratedExtra reads information_schema.COLUMNS.EXTRA: MySQL and
// MariaDB say "VIRTUAL GENERATED" or "STORED GENERATED" (older MariaDB
// "VIRTUAL" or "PERSISTENT"); MySQL's "DEFAULT_GENERATED" is a column
// with an expression default, which is written like any other.
func isGeneratedExtra(extra string) bool {
	for _, w := range strings.Fields(strings.ToUpper(extra)) {
		switch w {
		case "VIRTUAL", "STORED", "PERSISTENT":
			return true
		}
	}
	return false
}

// parseLabels reads the labels of enum('a','b”c') or set(…).
func parseLabels(colType string) ([]string, error) {
	open := strings.IndexByte(colType, '(')
	if open < 0 || !strings.HasSuffix(colType, ")") {
		return nil, fmt.Errorf("cannot read labels from %q", colType)
	}
	body := colType[open+1 : len(colType)-1]
	var labels []string
	for i := 0; i < len(body); {
		if body[i] != '\'' {
			return nil, fmt.Errorf("cannot read labels from %q", colType)
		}
		var b strings.Builder
		i++
		for {
			if i >= len(body) {
				return nil, fmt.Errorf("unterminated label in %q", colType)
			}
			if body[i] == '\'' {
				if i+1 < len(body) && body[i+1] == '\'' {
					b.WriteByte('\'')
					i += 2
					continue
				}
				i++
				break
			}
			if body[i] == '\\' && i+1 < len(body) {
				// information_schema renders labels as SQL literals, so a
				// backslash escapes the next character.
				i++
			}
			b.WriteByte(body[i])
			i++
		}
		labels = append(labels, b.String())
		if i < len(body) {
			if body[i] != ',' {
				return nil, fmt.Errorf("cannot read labels from %q", colType)
			}
			i++
		}
	}
	return labels, nil
}

// queryer is what loadTableMeta needs of a connection.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// metaCache memoises tableMeta by target table; it belongs to the applier.
type metaCache struct {
	tables    map[[2]string]*tableMeta
	prepared  int  // tables with a prepared statement
	noPrepare bool // the target refused to prepare one: text only
	chunkRows int  // tableMeta.prepRows at most; 0: prepChunkRows
}

func (c *metaCache) get(ctx context.Context, q queryer, db, table string) (*tableMeta, error) {
	k := [2]string{db, table}
	if m, ok := c.tables[k]; ok {
		return m, nil
	}
	chunk := c.chunkRows
	if chunk == 0 {
		chunk = prepChunkRows
	}
	m, err := loadTableMeta(ctx, q, db, table, chunk)
	if err != nil {
		return nil, err
	}
	if c.tables == nil {
		c.tables = map[[2]string]*tableMeta{}
	}
	c.tables[k] = m
	return m, nil
}

// reset forgets every table, after DDL.
// has reports whether the table's metadata is cached.
func (c *metaCache) has(db, table string) bool {
	_, ok := c.tables[[2]string{db, table}]
	return ok
}

// reset forgets every table, closing their prepared statements: after
// DDL, and when the apply session ends.
func (c *metaCache) reset() {
	for _, m := range c.tables {
		if m.prep != nil {
			m.prep.Close()
		}
	}
	c.tables, c.prepared = nil, 0
}
