package replication

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
)

// The mixed workload of BenchmarkApply: inserts, updates and deletes in
// the proportions 10:2:1 over four sysbench tables, a table with a
// composite key and a 19-column table of most types (NULLs included).

var createMixed = []string{
	createSbtest(1), createSbtest(2), createSbtest(3), createSbtest(4),
	`CREATE TABLE sbtest.composite (region INT NOT NULL, code VARCHAR(24) NOT NULL, seq INT NOT NULL,
		qty INT NOT NULL, note VARCHAR(100) NULL, PRIMARY KEY (region, code), KEY (seq))`,
	`CREATE TABLE sbtest.types (id BIGINT NOT NULL PRIMARY KEY, ti TINYINT NOT NULL, su SMALLINT UNSIGNED NOT NULL,
		mi MEDIUMINT NULL, i INT NULL, bu BIGINT UNSIGNED NOT NULL, dc DECIMAL(14,3) NULL, f FLOAT NULL, d DOUBLE NOT NULL,
		dt DATETIME(6) NOT NULL, ts TIMESTAMP(3) NULL, da DATE NULL, tm TIME NULL, yr YEAR NULL,
		vc VARCHAR(64) NOT NULL, tx TEXT NULL, vb VARBINARY(32) NULL, en ENUM('red','green','blue') NOT NULL,
		st SET('a','b','c','d') NULL)`,
}

// mixedTables are the tables of the mixed workload, in insert rotation.
var mixedTables = []string{"sbtest1", "sbtest2", "sbtest3", "sbtest4", "composite", "types"}

// mixedKey identifies a row of a mixed table: id, or (region, code).
type mixedKey struct {
	id   int
	code string
}

func (k mixedKey) where(table string) string {
	if table == "composite" {
		return fmt.Sprintf("(region, code) = (%d, '%s')", k.id, k.code)
	}
	return fmt.Sprintf("id = %d", k.id)
}

// loadMixed writes this worker's share of rows in blocks of 130 row
// changes: 10 insert transactions of 10 rows, 5 update transactions of 4
// single-row UPDATEs, 2 delete transactions of 5 rows. A worker only
// touches the keys it created (ids ≡ worker mod workers), so workers
// never wait for each other's locks.
func loadMixed(db *sql.DB, worker, workers, rows int) error {
	r := rand.New(rand.NewPCG(uint64(worker), 3))
	live := make([][]mixedKey, len(mixedTables))
	next := worker + 1
	exec := func(stmts ...string) error {
		// InnoDB's next-key locks can still make two workers' inserts
		// into neighbouring keys deadlock; such a transaction is retried
		// as a client would (it left nothing in the binlog).
		for attempt := 0; ; attempt++ {
			err := execTxn(db, stmts)
			if code, _, ok := serverErrorCode(err); ok && code == 1213 && attempt < 20 {
				continue
			}
			return err
		}
	}
	pick := func() (int, int) {
		for {
			t := r.IntN(len(mixedTables))
			if len(live[t]) > 0 {
				return t, r.IntN(len(live[t]))
			}
		}
	}
	for done, txn := 0, 0; done < rows/workers; txn++ {
		switch step := txn % 17; {
		case step < 10:
			t := txn / 17 * 10 % len(mixedTables)
			t = (t + step) % len(mixedTables)
			vals := make([]string, 10)
			for i := range vals {
				k := mixedKey{id: next}
				if mixedTables[t] == "composite" {
					k = mixedKey{id: next % 97, code: fmt.Sprintf("c%d", next)}
				}
				vals[i] = mixedRow(r, mixedTables[t], k)
				live[t] = append(live[t], k)
				next += workers
			}
			if err := exec(fmt.Sprintf("INSERT INTO sbtest.%s VALUES %s", mixedTables[t], strings.Join(vals, ","))); err != nil {
				return err
			}
			done += 10
		case step < 15:
			stmts := make([]string, 4)
			for i := range stmts {
				t, j := pick()
				stmts[i] = fmt.Sprintf("UPDATE sbtest.%s SET %s WHERE %s", mixedTables[t], mixedSet(r, mixedTables[t]), live[t][j].where(mixedTables[t]))
			}
			if err := exec(stmts...); err != nil {
				return err
			}
			done += 4
		default:
			t, _ := pick()
			var conds []string
			for range 5 {
				if len(live[t]) == 0 {
					break
				}
				j := r.IntN(len(live[t]))
				conds = append(conds, "("+live[t][j].where(mixedTables[t])+")")
				live[t][j] = live[t][len(live[t])-1]
				live[t] = live[t][:len(live[t])-1]
			}
			if err := exec(fmt.Sprintf("DELETE FROM sbtest.%s WHERE %s", mixedTables[t], strings.Join(conds, " OR "))); err != nil {
				return err
			}
			done += len(conds)
		}
	}
	return nil
}

// mixedRow is a VALUES tuple of table for key k.
func mixedRow(r *rand.Rand, table string, k mixedKey) string {
	switch table {
	case "composite":
		return fmt.Sprintf("(%d, '%s', %d, %d, %s)", k.id, k.code, r.IntN(1<<20), r.IntN(1000), nullOr(r, "'"+sbString(r, 3)+"'"))
	case "types":
		return fmt.Sprintf("(%d, %d, %d, %s, %s, %d, %s, %s, %v, '2026-%02d-%02d %02d:%02d:%02d.%06d', %s, %s, %s, %s, '%s', %s, %s, '%s', %s)",
			k.id, r.IntN(256)-128, r.IntN(65536), nullOr(r, fmt.Sprint(r.IntN(1<<24)-1<<23)), nullOr(r, fmt.Sprint(r.Int32())),
			r.Uint64(), nullOr(r, fmt.Sprintf("%d.%03d", r.IntN(1e9)-5e8, r.IntN(1000))), nullOr(r, fmt.Sprint(r.Float32())), r.NormFloat64()*1e6,
			1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1e6),
			nullOr(r, fmt.Sprintf("'2025-%02d-%02d 10:00:00.%03d'", 1+r.IntN(12), 1+r.IntN(28), r.IntN(1000))),
			nullOr(r, fmt.Sprintf("'20%02d-%02d-%02d'", r.IntN(40), 1+r.IntN(12), 1+r.IntN(28))),
			nullOr(r, fmt.Sprintf("'%d:%02d:%02d'", r.IntN(800)-400, r.IntN(60), r.IntN(60))),
			nullOr(r, fmt.Sprint(1901+r.IntN(254))),
			sbString(r, 2), nullOr(r, "'"+sbString(r, 1+r.IntN(20))+"'"), nullOr(r, fmt.Sprintf("X'%016x'", r.Uint64())),
			[]string{"red", "green", "blue"}[r.IntN(3)], nullOr(r, "'"+[]string{"a", "b,c", "a,d", ""}[r.IntN(4)]+"'"))
	}
	return fmt.Sprintf("(%d, %d, '%s', '%s')", k.id, r.IntN(1<<20), sbString(r, 10), sbString(r, 5))
}

// mixedSet is the SET clause of an update of a non-key column of table.
func mixedSet(r *rand.Rand, table string) string {
	switch table {
	case "composite":
		return fmt.Sprintf("qty = qty + 1, note = %s", nullOr(r, "'"+sbString(r, 2)+"'"))
	case "types":
		return fmt.Sprintf("i = %s, d = d + 1, vc = '%s', ts = %s", nullOr(r, fmt.Sprint(r.Int32())), sbString(r, 2), nullOr(r, "'2026-01-02 03:04:05.678'"))
	}
	if r.IntN(2) == 0 {
		return "k = k + 1"
	}
	return fmt.Sprintf("c = '%s'", sbString(r, 10))
}

// nullOr is v, or NULL one time in five.
func nullOr(r *rand.Rand, v string) string {
	if r.IntN(5) == 0 {
		return "NULL"
	}
	return v
}

func execTxn(db *sql.DB, stmts []string) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	for _, q := range stmts {
		if _, err := tx.Exec(q); err != nil {
			tx.Rollback()
			return fmt.Errorf("%.200s: %w", q, err)
		}
	}
	return tx.Commit()
}
