package replication

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/shepherd-dev/shepherd/internal/mysqldial"
	"github.com/shepherd-dev/shepherd/internal/rowtypes"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// TestRowDecodeMatchesGoMySQLOnBinlogs reads a real MariaDB binlog with
// the syncer's own configuration and decodes every rows event with both
// decoders: the all-types table's rows and changes (every type the
// replication tests copy), and a seeded random workload on a table of
// the hot types, each without and with binlog_row_metadata=FULL — inserts, updates of some columns and of all, deletes,
// NULLs, extreme integers, long strings, zero dates, fractional seconds,
// negative decimals. Each event the fast path decodes must decode the
// same with go-mysql; the events of tables of hot types only must all be
// taken by the fast path.
func TestRowDecodeMatchesGoMySQLOnBinlogs(t *testing.T) {
	source, target := servers(t)
	dropDBs(t, []*testpeer.MariaDB{source, target}, "rt_dec")
	r := openReplicator(t, newConfig(t, source, target, "rt_dec"))
	from := currentPosition(t, r)

	inDB := func(stmts ...string) []string {
		out := make([]string, len(stmts))
		for i, s := range stmts {
			out[i] = strings.ReplaceAll(s, "rt_types.", "rt_dec.")
		}
		return out
	}
	source.Exec(t, inDB("CREATE DATABASE rt_dec", rowtypes.AllTypes, hotTableDDL)...)
	source.Exec(t, inDB(rowtypes.Rows...)...)
	writeHotLoad(t, source, rand.New(rand.NewPCG(30, 7)))
	// The rest with the table maps' full metadata: signedness among it.
	var meta string
	if err := source.DB(t).QueryRow("SELECT @@global.binlog_row_metadata").Scan(&meta); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { source.DB(t).Exec("SET GLOBAL binlog_row_metadata = " + meta) })
	source.Exec(t, "SET GLOBAL binlog_row_metadata = FULL")
	source.Exec(t, inDB(
		"UPDATE rt_types.alltypes SET tiu = 254, f = f * 2, vc = CONCAT(vc, 'x'), n = 1 WHERE id IN (1, 9)",
		"UPDATE rt_types.alltypes SET id = id + 100 WHERE id IN (2, 3)",
		"UPDATE rt_types.alltypes SET j = NULL, e = NULL, s = 'y', b64 = 0 WHERE id = 6",
		"DELETE FROM rt_types.alltypes WHERE id = 7",
	)...)
	writeHotLoad(t, source, rand.New(rand.NewPCG(30, 8)))
	to := currentPosition(t, r)

	got := compareDecoders(t, r, from, to)
	for _, table := range []string{"alltypes", "hot"} {
		if got.declined[table] > 0 || got.taken[table] == 0 {
			t.Errorf("table %s: the fast path took %d events and declined %d, want all", table, got.taken[table], got.declined[table])
		}
	}
	// Every Go type go-mysql gives the hot types: unsigned ones come with
	// the FULL metadata's signedness.
	for _, typ := range []string{"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
		"int", "float32", "float64", "string", "[]uint8", "<nil>"} {
		if !got.types[typ] {
			t.Errorf("no value of type %s was decoded; types seen: %v", typ, got.types)
		}
	}
	t.Logf("events decoded by the fast path, per table: %v; declined: %v; rows compared: %d", got.taken, got.declined, got.rows)
}

// hotTableDDL is a table of the types the fast path decodes, with
// MariaDB's JSON (a LONGTEXT).
const hotTableDDL = `CREATE TABLE rt_dec.hot (
	id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, su SMALLINT UNSIGNED,
	mi MEDIUMINT, mu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED,
	y YEAR, d1 DECIMAL(65,30), d2 DECIMAL(10,2) UNSIGNED, d3 DECIMAL(18,0), f FLOAT, g DOUBLE,
	b1 BIT(1), b9 BIT(9), b64 BIT(64), e ENUM('a','b','c'), s SET('x','y','z'),
	vc VARCHAR(20), vl VARCHAR(2000), ch CHAR(20), cl CHAR(255), bn BINARY(8), vb VARBINARY(300),
	bl BLOB, mt MEDIUMTEXT, lt LONGTEXT, j JSON,
	da DATE, dt DATETIME, dt3 DATETIME(3), dt6 DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL, ts6 TIMESTAMP(6) NULL DEFAULT NULL,
	tm TIME, tm1 TIME(1), tm4 TIME(4), tm6 TIME(6)
)`

// writeHotLoad writes a seeded random workload on rt_dec.hot.
func writeHotLoad(t *testing.T, source *testpeer.MariaDB, r *rand.Rand) {
	db := source.DB(t)
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	orNull := func(v string) string {
		if r.IntN(5) == 0 {
			return "NULL"
		}
		return v
	}
	num := func(xs ...string) string { return orNull(pick(append(xs, fmt.Sprint(r.IntN(100)-50))...)) }
	unum := func(xs ...string) string { return orNull(pick(append(xs, fmt.Sprint(r.IntN(100)))...)) }
	row := func(id int) string {
		v := []string{fmt.Sprint(id),
			num("-128", "127"), unum("0", "255"), num("-32768", "32767"), unum("0", "65535"),
			num("-8388608", "8388607"), unum("0", "16777215"), num("-2147483648", "2147483647"), unum("0", "4294967295"),
			num("-9223372036854775808", "9223372036854775807", fmt.Sprint(r.Int64())), unum("0", "18446744073709551615", fmt.Sprint(r.Uint64())),
			orNull(pick("0", "1901", "2155", fmt.Sprint(1901+r.IntN(255)))),
			orNull(pick("0", "-0.000000000000000000000000000001", "99999999999999999999999999999999999.999999999999999999999999999999",
				"-99999999999999999999999999999999999.999999999999999999999999999999", fmt.Sprintf("-%d.%09d", r.Int64(), r.IntN(1e9)))),
			orNull(pick("0", "0.01", "99999999.99", fmt.Sprintf("%d.%02d", r.IntN(1e8), r.IntN(100)))),
			orNull(pick("0", "-999999999999999999", "1", fmt.Sprint(r.Int64()%1e18))),
			orNull(pick("0", "-3.4e38", "1.17549435e-38", fmt.Sprint(float32(r.NormFloat64())))),
			orNull(pick("0", "1.7976931348623157e308", "-2.2250738585072014e-308", fmt.Sprint(r.NormFloat64()*1e100))),
			orNull(pick("b'0'", "b'1'")), orNull(fmt.Sprintf("b'%b'", r.IntN(512))), orNull(pick("0", "18446744073709551615", fmt.Sprint(r.Uint64()))),
			orNull(pick("'a'", "'b'", "'c'")), orNull(pick("''", "'x'", "'x,y,z'", "'y,z'")),
			orNull(pick("''", "'short'", "'it''s \\\\ \"q\"'", "'ü€😀'")), orNull(fmt.Sprintf("REPEAT('v', %d)", pick2(r, 0, 2000, r.IntN(2000)))),
			orNull(pick("''", "'pad  '", "'abcdefghijklmnopqrst'")), orNull(fmt.Sprintf("REPEAT('ü', %d)", pick2(r, 0, 255, r.IntN(255)))),
			orNull(pick("X''", "X'00FF275C'", "X'0102030405060708'")), orNull(fmt.Sprintf("REPEAT(X'00FF', %d)", r.IntN(150))),
			orNull(fmt.Sprintf("REPEAT(X'5C27', %d)", pick2(r, 0, 32767, r.IntN(300)))), orNull(fmt.Sprintf("REPEAT('m', %d)", pick2(r, 0, 70000, r.IntN(300)))),
			orNull(fmt.Sprintf("REPEAT('long ', %d)", pick2(r, 0, 20000, r.IntN(50)))),
			orNull(pick(`'{"a": [1, 2.50, "x"], "b": null}'`, "'[]'", `'"s"'`, "'{}'")),
			orNull(pick("'0000-00-00'", "'1000-01-01'", "'9999-12-31'", fmt.Sprintf("'%04d-%02d-%02d'", 1000+r.IntN(9000), 1+r.IntN(12), 1+r.IntN(28)))),
			orNull(pick("'0000-00-00 00:00:00'", "'1000-01-01 00:00:00'", "'9999-12-31 23:59:59'", randDatetime(r, 0))),
			orNull(pick("'0000-00-00 00:00:00.000'", "'9999-12-31 23:59:59.999'", randDatetime(r, 3))),
			orNull(pick("'0000-00-00 00:00:00.000000'", "'1000-01-01 00:00:00.000001'", "'9999-12-31 23:59:59.999999'", randDatetime(r, 6))),
			orNull(pick("'1970-01-01 00:00:01'", "'2038-01-19 03:14:07'", "'0000-00-00 00:00:00'", fmt.Sprintf("FROM_UNIXTIME(%d)", 1+r.IntN(2e9)))),
			orNull(pick("'1970-01-01 00:00:01.000001'", "'2038-01-19 03:14:07.999999'", fmt.Sprintf("FROM_UNIXTIME(%d.%06d)", 1+r.IntN(2e9), r.IntN(1e6)))),
			orNull(pick("'-838:59:59'", "'838:59:59'", "'00:00:00'", fmt.Sprintf("'%d:%02d:%02d'", r.IntN(1600)-800, r.IntN(60), r.IntN(60)))),
			orNull(pick("'-838:59:58.9'", "'-00:00:00.1'", fmt.Sprintf("'%d:%02d:%02d.%d'", r.IntN(1600)-800, r.IntN(60), r.IntN(60), r.IntN(10)))),
			orNull(pick("'-838:59:58.9999'", "'-00:00:01.0001'", fmt.Sprintf("'%d:%02d:%02d.%04d'", r.IntN(1600)-800, r.IntN(60), r.IntN(60), r.IntN(1e4)))),
			orNull(pick("'-838:59:58.999999'", "'-00:00:00.000001'", "'838:59:58.999999'", fmt.Sprintf("'%d:%02d:%02d.%06d'", r.IntN(1600)-800, r.IntN(60), r.IntN(60), r.IntN(1e6)))),
		}
		return "(" + strings.Join(v, ", ") + ")"
	}
	for range 150 {
		id := r.IntN(60)
		var stmts []string
		for range 1 + r.IntN(4) {
			switch r.IntN(6) {
			case 0, 1:
				var rows []string
				for k := range 1 + r.IntN(5) {
					rows = append(rows, row(id+k*61))
				}
				stmts = append(stmts, "REPLACE INTO rt_dec.hot VALUES "+strings.Join(rows, ", "))
			case 2:
				stmts = append(stmts, fmt.Sprintf("UPDATE rt_dec.hot SET i = %s, vc = %s, dt6 = %s, d1 = -d1 WHERE id BETWEEN %d AND %d",
					num("-2147483648"), orNull("'upd'"), orNull(randDatetime(r, 6)), id, id+100))
			case 3:
				stmts = append(stmts, fmt.Sprintf("DELETE FROM rt_dec.hot WHERE id = %d", id))
			case 4:
				stmts = append(stmts, fmt.Sprintf("REPLACE INTO rt_dec.hot (id) VALUES (%d)", id)) // all NULL
			default:
				stmts = append(stmts, "REPLACE INTO rt_dec.hot VALUES "+row(id))
			}
		}
		if err := execTxn(db, stmts); err != nil {
			t.Fatalf("write the workload: %v", err)
		}
	}
}

func pick2(r *rand.Rand, a, b, c int) int { return []int{a, b, c}[r.IntN(3)] }

func randDatetime(r *rand.Rand, dec int) string {
	s := fmt.Sprintf("'%04d-%02d-%02d %02d:%02d:%02d", 1000+r.IntN(9000), 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
	if dec > 0 {
		s += fmt.Sprintf(".%0*d", dec, r.IntN(int(pow10(dec))))
	}
	return s + "'"
}

func pow10(n int) int64 {
	x := int64(1)
	for range n {
		x *= 10
	}
	return x
}

// decoderComparison is what compareDecoders saw.
type decoderComparison struct {
	taken, declined map[string]int // events, by table
	rows            int
	types           map[string]bool // Go types of the values decoded

}

// compareDecoders streams the source's binlog from `from` to `to` with
// the syncer's configuration, decoding every rows event with go-mysql
// and with the fast path, and fails the test where they differ.
func compareDecoders(t *testing.T, r *Replicator, from, to Position) decoderComparison {
	t.Helper()
	var (
		mu    sync.Mutex
		got   = decoderComparison{taken: map[string]int{}, declined: map[string]int{}, types: map[string]bool{}}
		diffs []string
	)
	d := newRowDecoder(syncerLocation)
	dial := mysqldial.NewDialer(r.cfg.Source.Addr(), r.log)
	cfg := r.syncerConfig(dial)
	cfg.RowsEventDecodeFunc = func(e *replication.RowsEvent, data []byte) error {
		ref, fast := *e, *e
		err := ref.Decode(data)
		ok := d.fast(&fast, data)
		mu.Lock()
		defer mu.Unlock()
		table := string(ref.Table.Table)
		if !ok {
			got.declined[table]++
		} else {
			got.taken[table]++
			got.rows += len(ref.Rows)
			for _, row := range fast.Rows {
				for _, v := range row {
					got.types[fmt.Sprintf("%T", v)] = true
				}
			}
			if err != nil {
				diffs = append(diffs, fmt.Sprintf("table %s: go-mysql fails (%v) where the fast path decodes", table, err))
			} else if diff := diffRows(ref.Rows, fast.Rows, ref.SkippedColumns, fast.SkippedColumns); diff != "" {
				diffs = append(diffs, fmt.Sprintf("table %s: %s", table, diff))
			}
		}
		*e = ref
		return err
	}
	s := syncer{dial: dial, BinlogSyncer: replication.NewBinlogSyncer(cfg)}
	defer s.Close()
	stream, err := r.startStream(s, from)
	if err != nil {
		t.Fatalf("start the binlog stream at %s: %v", from, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	file := from.File
	for {
		ev, err := stream.GetEvent(ctx)
		if err != nil {
			t.Fatalf("read the binlog (in %s, up to %s): %v", file, to, err)
		}
		if rot, ok := ev.Event.(*replication.RotateEvent); ok {
			file = string(rot.NextLogName)
			continue
		}
		if file == to.File && ev.Header.LogPos >= to.Pos {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, diff := range diffs {
		t.Error(diff)
	}
	return got
}
