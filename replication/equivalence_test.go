package replication

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// TestApplyPathsEquivalent applies one randomized binlog through every
// apply path — each source transaction committed on its own (BatchRows
// 1), the default batches, small batches of transactions streamed in
// pieces, prepared statements, and rows decoded by go-mysql alone rather
// than the fast path — and compares each copy with the source row by
// row. The binlog is seeded and bounded (some 600 transactions, a few
// thousand row changes): inserts, upserts, updates of values and of keys (several rows
// of one statement at once, keys moved onto keys just freed), deletes and
// re-inserts of the same key in one transaction, NULLs, most types, a
// unique secondary key, case-insensitive and composite keys, a keyless
// table with duplicate rows, and DDL in between.
func TestApplyPathsEquivalent(t *testing.T) {
	source, target := servers(t)
	modes := []struct {
		name                 string
		batchRows, maxTxnRow int
		chunkRows            int  // rows of a prepared REPLACE; 0: the default
		goMySQLRows          bool // rows decoded by go-mysql alone
	}{
		{"txn", 1, DefaultMaxTxnRows, 0, false},
		{"batch", DefaultBatchRows, DefaultMaxTxnRows, 0, false},
		{"stream", 300, 5, 0, false},
		// Most REPLACEs through prepared statements of 3 rows, the rest
		// as text; the statements re-prepared after every DDL.
		{"prepared", DefaultBatchRows, DefaultMaxTxnRows, 3, false},
		// The other modes decode rows with the fast path (rowdecode.go);
		// this one with go-mysql's decoder only.
		{"gomysql", DefaultBatchRows, DefaultMaxTxnRows, 0, true},
	}
	dbs := []string{"rt_eq"}
	for _, m := range modes {
		dbs = append(dbs, "rt_eq_"+m.name)
	}
	dropDBs(t, []*testpeer.MariaDB{source, target}, dbs...)
	probe := openReplicator(t, newConfig(t, source, target, "rt_eq"))
	from := currentPosition(t, probe)
	probe.Close()

	writeEquivalenceLoad(t, source, rand.New(rand.NewPCG(14, 2026)))

	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			cfg := newConfig(t, source, target, "rt_eq")
			cfg.Routes = []Route{{FromDB: "rt_eq", ToDB: "rt_eq_" + m.name}}
			cfg.BatchRows, cfg.MaxTxnRows, cfg.prepChunkRows = m.batchRows, m.maxTxnRow, m.chunkRows
			cfg.goMySQLRows = m.goMySQLRows
			r := openReplicator(t, cfg)
			rn := startRun(t, r, from, 1, "test")
			waitCaughtUp(t, r, source, rn)
			if err := rn.stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if ours := r.rowDec.ours.Load(); m.goMySQLRows != (ours == 0) {
				t.Errorf("the fast path decoded %d rows events (go-mysql %d)", ours, r.rowDec.theirs.Load())
			}
			assertSameData(t, source, target, "rt_eq", "rt_eq_"+m.name)
		})
	}
}

// equivalenceTables: a (integer key, a unique secondary key, most types),
// b (a without its latin1 column: the table whose rows can go through a
// prepared statement),
// c (composite key with a case-insensitive string), d (composite key of a
// decimal and a datetime), n (no key), q (a unique NOT NULL key, no
// primary key).
var equivalenceTables = []string{
	`CREATE TABLE rt_eq.a (id INT PRIMARY KEY, u INT NULL, ti TINYINT UNSIGNED, bi BIGINT, dc DECIMAL(20,6), f FLOAT, d DOUBLE,
		dt DATETIME(6), ts TIMESTAMP(3) NULL DEFAULT NULL, da DATE, tm TIME, y YEAR, vc VARCHAR(40), bl BLOB, j JSON,
		e ENUM('x','y','z'), s SET('p','q'), bt BIT(8), l1 VARCHAR(20) CHARACTER SET latin1, UNIQUE KEY (u))`,
	`CREATE TABLE rt_eq.b (id INT PRIMARY KEY, u INT NULL, ti TINYINT UNSIGNED, bi BIGINT, dc DECIMAL(20,6), f FLOAT, d DOUBLE,
		dt DATETIME(6), ts TIMESTAMP(3) NULL DEFAULT NULL, da DATE, tm TIME, y YEAR, vc VARCHAR(40), bl BLOB, j JSON,
		e ENUM('x','y','z'), s SET('p','q'), bt BIT(8), UNIQUE KEY (u))`,
	`CREATE TABLE rt_eq.c (g INT NOT NULL, k VARCHAR(8) COLLATE utf8mb4_general_ci NOT NULL, v INT, PRIMARY KEY (g, k))`,
	`CREATE TABLE rt_eq.d (dk DECIMAL(10,2) NOT NULL, dt DATETIME NOT NULL, v VARCHAR(10), PRIMARY KEY (dk, dt))`,
	`CREATE TABLE rt_eq.n (x INT, y VARCHAR(10), z DOUBLE)`,
	`CREATE TABLE rt_eq.q (a INT NOT NULL, b INT, UNIQUE KEY (a))`,
}

// writeEquivalenceLoad runs the randomized workload on the source, one
// statement at a time from one goroutine, so that its binlog depends on
// the seed only. A transaction the source refuses (a duplicate key the
// generator did not foresee) is rolled back and left out.
func writeEquivalenceLoad(t *testing.T, source *testpeer.MariaDB, r *rand.Rand) {
	source.Exec(t, append([]string{"CREATE DATABASE rt_eq"}, equivalenceTables...)...)
	db := source.DB(t)
	g := &eqGen{r: r}
	committed := 0
	for i := range 600 {
		if i%100 == 50 {
			source.Exec(t, g.ddl(i/100)...)
			continue
		}
		var stmts []string
		for range 1 + r.IntN(6) {
			stmts = append(stmts, g.statement()...)
		}
		if err := execTxn(db, stmts); err == nil {
			committed++
		} else if _, _, ok := serverErrorCode(err); !ok {
			t.Fatalf("write the workload: %v", err)
		}
	}
	if committed < 400 {
		t.Fatalf("only %d of 600 generated transactions committed on the source: the generator is off", committed)
	}
}

type eqGen struct {
	r     *rand.Rand
	extra []string // columns added to a by DDL, still there
}

func (g *eqGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *eqGen) orNull(v string) string {
	if g.r.IntN(6) == 0 {
		return "NULL"
	}
	return v
}

// aValues is a row of table a for id, or of b, which lacks a's last
// column.
func (g *eqGen) aValues(table string, id int) string {
	r := g.r
	v := fmt.Sprintf("(%d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", id,
		g.orNull(fmt.Sprint(r.IntN(300))), g.orNull(fmt.Sprint(r.IntN(256))), g.orNull(fmt.Sprint(r.Int64()-r.Int64())),
		g.orNull(fmt.Sprintf("%d.%06d", r.IntN(2e9)-1e9, r.IntN(1e6))), g.orNull(fmt.Sprint(float32(r.NormFloat64()))),
		g.orNull(fmt.Sprint(r.NormFloat64()*1e10)), g.orNull(fmt.Sprintf("'20%02d-%02d-%02d %02d:%02d:%02d.%06d'", r.IntN(99), 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1e6))),
		g.orNull(fmt.Sprintf("'20%02d-%02d-%02d 12:00:00.%03d'", 1+r.IntN(36), 1+r.IntN(12), 1+r.IntN(28), r.IntN(1000))),
		g.orNull(fmt.Sprintf("'%04d-%02d-%02d'", 1000+r.IntN(9000), 1+r.IntN(12), 1+r.IntN(28))),
		g.orNull(fmt.Sprintf("'%d:%02d:%02d'", r.IntN(1600)-800, r.IntN(60), r.IntN(60))), g.orNull(fmt.Sprint(1901+r.IntN(255))),
		g.orNull(g.pick("'plain'", "'it''s'", "'back\\\\slash'", "'new\\nline'", "'ü€😀'", "''", "'A'", "'a'")),
		g.orNull(g.pick("X'00FF275C'", "X''", "'bytes'")), g.orNull(g.pick(`'{"k": [1, "v"]}'`, "'[]'", `'"s"'`)),
		g.orNull(g.pick("'x'", "'y'", "'z'")), g.orNull(g.pick("''", "'p'", "'p,q'")), g.orNull(fmt.Sprintf("b'%b'", r.IntN(256))),
		g.orNull(g.pick("_latin1 X'636166E9'", "'abc'")))
	if table == "b" {
		v = v[:strings.LastIndex(v, ", ")] + ")"
	}
	return v
}

// columnsOf is the column list of table a or b.
func columnsOf(table string) string {
	if table == "b" {
		return "(id, u, ti, bi, dc, f, d, dt, ts, da, tm, y, vc, bl, j, e, s, bt)"
	}
	return "(id, u, ti, bi, dc, f, d, dt, ts, da, tm, y, vc, bl, j, e, s, bt, l1)"
}

// statement is one random DML statement, or a few that belong together.
func (g *eqGen) statement() []string {
	if g.r.IntN(25) == 0 {
		// A row written to c, then keys of c changed to others equal
		// under the collation: the target must delete the old keys before
		// writing the new ones, though its REPLACE into c was open first.
		grp := g.r.IntN(10)
		return []string{fmt.Sprintf("INSERT INTO rt_eq.c VALUES (%d, 'w', 0) ON DUPLICATE KEY UPDATE v = v + 1", 10+grp),
			fmt.Sprintf("UPDATE IGNORE rt_eq.c SET k = IF(k = BINARY UPPER(k), LOWER(k), UPPER(k)) WHERE g = %d", 20+grp%5)}
	}
	return []string{g.dml()}
}

func (g *eqGen) caseChange(grp int) string {
	return fmt.Sprintf("UPDATE IGNORE rt_eq.c SET k = %s(k), v = %s WHERE g = %d", g.pick("UPPER", "LOWER"), g.orNull("v + 1"), grp)
}

func (g *eqGen) dml() string {
	r := g.r
	id := 1 + r.IntN(200)
	t := g.pick("a", "b")
	switch r.IntN(20) {
	case 0, 1, 2:
		var rows []string
		for i := range 1 + r.IntN(4) {
			rows = append(rows, g.aValues(t, id+i*7))
		}
		return "INSERT IGNORE INTO rt_eq." + t + " " + columnsOf(t) + " VALUES " + strings.Join(rows, ",")
	case 3:
		return "INSERT INTO rt_eq." + t + " " + columnsOf(t) + " VALUES " + g.aValues(t, id) + " ON DUPLICATE KEY UPDATE vc = VALUES(vc), u = VALUES(u), f = NULL"
	case 4:
		return "REPLACE INTO rt_eq." + t + " " + columnsOf(t) + " VALUES " + g.aValues(t, id)
	case 5, 6:
		return fmt.Sprintf("UPDATE IGNORE rt_eq.%s SET vc = %s, d = %s, u = %s WHERE id BETWEEN %d AND %d",
			t, g.orNull("'upd'"), g.orNull(fmt.Sprint(r.Float64())), g.orNull(fmt.Sprint(r.IntN(300))), id, id+3)
	case 7:
		// Keys moved in one statement: onto keys the same statement frees.
		return fmt.Sprintf("UPDATE IGNORE rt_eq.%s SET id = id + %d WHERE id BETWEEN %d AND %d ORDER BY id DESC", t, 1+r.IntN(3), id, id+6)
	case 8:
		return fmt.Sprintf("UPDATE IGNORE rt_eq.%s SET id = id - 1 WHERE id BETWEEN %d AND %d ORDER BY id", t, id, id+6)
	case 9:
		return fmt.Sprintf("DELETE FROM rt_eq.%s WHERE id BETWEEN %d AND %d", t, id, id+2)
	case 10:
		// Groups 20-24 are never deleted from: a row lost there stays lost.
		return fmt.Sprintf("INSERT IGNORE INTO rt_eq.c VALUES (%d, %s, %s), (%d, %s, 1)", []int{0, 20}[r.IntN(2)]+r.IntN(10), g.pick("'a'", "'A'", "'b '", "'B'", "'é'", "'E'"), g.orNull(fmt.Sprint(r.IntN(9))),
			r.IntN(10), g.pick("'a'", "'c'", "'e'"))
	case 11:
		return g.caseChange(r.IntN(10))
	case 12:
		return fmt.Sprintf("DELETE FROM rt_eq.c WHERE g = %d AND k = %s", r.IntN(10), g.pick("'a'", "'B'", "'e'"))
	case 13:
		return fmt.Sprintf("INSERT IGNORE INTO rt_eq.d VALUES (%d.%02d, '2026-01-%02d 10:00:00', %s)", r.IntN(20), r.IntN(4)*25, 1+r.IntN(5), g.orNull("'d'"))
	case 14:
		return fmt.Sprintf("UPDATE IGNORE rt_eq.d SET dt = dt + INTERVAL 1 DAY, v = %s WHERE dk = %d.%02d", g.orNull("'moved'"), r.IntN(20), r.IntN(4)*25)
	case 15:
		return fmt.Sprintf("DELETE FROM rt_eq.d WHERE dk < %d", r.IntN(4))
	case 16:
		return fmt.Sprintf("INSERT INTO rt_eq.n VALUES (%d, %s, %s), (%d, %s, %s)", r.IntN(5), g.orNull("'n'"), g.orNull("0.5"), r.IntN(5), g.orNull("'n'"), g.orNull("0.5"))
	case 17:
		return fmt.Sprintf("%s WHERE x = %d LIMIT 1", g.pick("DELETE FROM rt_eq.n", "UPDATE rt_eq.n SET y = NULL, z = 1.25"), r.IntN(5))
	case 18:
		return fmt.Sprintf("INSERT IGNORE INTO rt_eq.q VALUES (%d, %s)", r.IntN(30), g.orNull(fmt.Sprint(r.IntN(9))))
	default:
		return fmt.Sprintf("%s WHERE a = %d", g.pick("UPDATE IGNORE rt_eq.q SET a = a + 1, b = NULL", "DELETE FROM rt_eq.q"), r.IntN(30))
	}
}

// ddl changes the tables between transactions, step counting from 0.
// Copying c through INSERT … SELECT rewrites all its rows, so it is done
// once, early: a later copy would hide rows lost before it.
func (g *eqGen) ddl(step int) []string {
	switch {
	case step == 1:
		return []string{"RENAME TABLE rt_eq.c TO rt_eq.c_old", "CREATE TABLE rt_eq.c LIKE rt_eq.c_old",
			"INSERT INTO rt_eq.c SELECT * FROM rt_eq.c_old", "DROP TABLE rt_eq.c_old"}
	case step%2 == 0:
		col := fmt.Sprintf("x%d", step)
		g.extra = append(g.extra, col)
		return []string{fmt.Sprintf("ALTER TABLE rt_eq.a ADD COLUMN %s VARCHAR(8) DEFAULT 'dflt%d' AFTER u", col, step),
			fmt.Sprintf("ALTER TABLE rt_eq.b ADD COLUMN %s VARCHAR(8) DEFAULT 'dflt%d' AFTER u", col, step),
			"ALTER TABLE rt_eq.n ADD COLUMN w" + fmt.Sprint(step) + " INT NULL"}
	}
	stmts := []string{"CREATE INDEX i" + fmt.Sprint(step) + " ON rt_eq.d (v)", "TRUNCATE rt_eq.q"}
	if len(g.extra) > 0 {
		stmts = append(stmts, "ALTER TABLE rt_eq.a DROP COLUMN "+g.extra[0], "ALTER TABLE rt_eq.b DROP COLUMN "+g.extra[0])
		g.extra = g.extra[1:]
	}
	return stmts
}
