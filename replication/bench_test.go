package replication

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// BenchmarkApply measures how fast the replicator applies a binlog,
// side by side with MariaDB's own replication applying the same binlog:
//
//	SHEPHERD_IT=1 go test -run '^$' -bench BenchmarkApply -benchtime 1x ./replication/
//
// Three fresh servers: a source, a target for the replicator, and a native
// replica (log_slave_updates on, so both write their own binlog as the
// target does). The workload is written to the source first, by 4
// connections; then each applier starts from the position before it and
// is timed until it has applied the last transaction (DDL included). The
// native replica runs single-threaded and with slave_parallel_threads=4
// (optimistic mode). Workloads (sysbench's sbtest table: id, k, c, pad):
//
//   - insert: SHEPHERD_BENCH_ROWS rows (default 100000), 10 per transaction;
//   - write_only: a quarter as many transactions of sysbench's
//     oltp_write_only shape — two UPDATEs, a DELETE and an INSERT by key.
//
// Metrics are rows/s for each applier and the replicator's ratio to each
// native mode (above 1 means faster).
func BenchmarkApply(b *testing.B) {
	why, ok := testpeer.MariaDBAvailable()
	testpeer.Require(b, "MariaDB", ok, why)
	rows := 100000
	if s := os.Getenv("SHEPHERD_BENCH_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			b.Fatalf("SHEPHERD_BENCH_ROWS=%q: want a number ≥ 100", s)
		}
		rows = n
	}
	for _, w := range []benchWorkload{
		{name: "insert", rows: rows, load: loadInserts},
		{name: "write_only", rows: rows / 4 * 4, load: loadWriteOnly},
	} {
		b.Run(w.name, func(b *testing.B) { benchApply(b, w) })
	}
}

type benchWorkload struct {
	name string
	rows int // row changes the workload logs
	load func(db *sql.DB, worker, workers, rows int) error
}

const benchDB = "sbtest"

func benchApply(b *testing.B, w benchWorkload) {
	source, target, native, r := benchServers(b, "bench")
	start := currentPosition(b, r)
	if err := prepareBench(b, source, w); err != nil {
		b.Fatalf("load the source: %v", err)
	}
	end := currentPosition(b, r)
	b.Logf("%s: %d row changes, binlog %s to %s", w.name, w.rows, start, end)

	var ours, single, parallel time.Duration
	for i := 0; i < b.N; i++ {
		ours += timeShepherd(b, r, target, start, end)
		single += timeNative(b, source, native, start, end, 0)
		parallel += timeNative(b, source, native, start, end, 4)
	}
	rate := func(d time.Duration) float64 { return float64(w.rows) * float64(b.N) / d.Seconds() }
	b.ReportMetric(rate(ours), "shepherd-rows/s")
	b.ReportMetric(rate(single), "native1-rows/s")
	b.ReportMetric(rate(parallel), "native4-rows/s")
	b.ReportMetric(single.Seconds()/ours.Seconds(), "x-native1")
	b.ReportMetric(parallel.Seconds()/ours.Seconds(), "x-native4")
	assertSameData(b, source, target, benchDB, benchDB)
	assertSameData(b, source, native, benchDB, benchDB)
}

// benchServers starts the three servers of a side-by-side benchmark — a
// source, a target for the replicator, and a native replica, all with
// log_slave_updates on so that both appliers write their own binlog — and
// opens a replicator for task from the source to the target.
func benchServers(b *testing.B, task string) (source, target, native *testpeer.MariaDB, r *Replicator) {
	opts := testpeer.MariaDBOptions{ExtraArgs: []string{"--log-slave-updates=ON", "--innodb-buffer-pool-size=256M"}}
	source = testpeer.StartMariaDB(b, opts)
	target = testpeer.StartMariaDB(b, opts)
	native = testpeer.StartMariaDB(b, opts)
	cfg := Config{Task: task, Source: endpoint(source), Target: endpoint(target), Include: []string{benchDB},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	return source, target, native, openReplicator(b, cfg)
}

// createSbtest1 is sysbench's table.
const createSbtest1 = `CREATE TABLE sbtest.sbtest1 (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 0,
	c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))`

// prepareBench creates sbtest1 and runs the workload with 4 connections.
func prepareBench(b *testing.B, source *testpeer.MariaDB, w benchWorkload) error {
	db := source.DB(b)
	source.Exec(b, "CREATE DATABASE "+benchDB, createSbtest1)
	const workers = 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- w.load(db, i, workers, w.rows)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func sbRow(r *rand.Rand, id int) string {
	return fmt.Sprintf("(%d, %d, '%s', '%s')", id, r.IntN(1<<20), sbString(r, 10), sbString(r, 5))
}

// sbString is sysbench's c/pad: groups of 11 digits joined by dashes.
func sbString(r *rand.Rand, groups int) string {
	parts := make([]string, groups)
	for i := range parts {
		parts[i] = fmt.Sprintf("%011d", r.Int64N(1e11))
	}
	return strings.Join(parts, "-")
}

// loadInserts writes this worker's share of rows, 10 per transaction.
func loadInserts(db *sql.DB, worker, workers, rows int) error {
	r := rand.New(rand.NewPCG(uint64(worker), 1))
	for first := worker * 10; first < rows; first += workers * 10 {
		vals := make([]string, 0, 10)
		for id := first; id < first+10 && id < rows; id++ {
			vals = append(vals, sbRow(r, id+1))
		}
		if _, err := db.Exec("INSERT INTO sbtest.sbtest1 (id, k, c, pad) VALUES " + strings.Join(vals, ",")); err != nil {
			return err
		}
	}
	return nil
}

// loadWriteOnly seeds the table, then runs rows/4 transactions of
// sysbench's oltp_write_only: UPDATE k, UPDATE c, DELETE, re-INSERT.
// Each worker owns the ids ≡ worker (mod workers), so workers do not
// deadlock each other.
func loadWriteOnly(db *sql.DB, worker, workers, rows int) error {
	r := rand.New(rand.NewPCG(uint64(worker), 2))
	const tableSize = 10000
	var seed []string
	for id := worker + 1; id <= tableSize; id += workers {
		seed = append(seed, sbRow(r, id))
		if len(seed) == 100 || id+workers > tableSize {
			if _, err := db.Exec("INSERT INTO sbtest.sbtest1 (id, k, c, pad) VALUES " + strings.Join(seed, ",")); err != nil {
				return err
			}
			seed = seed[:0]
		}
	}
	pick := func() int { return r.IntN(tableSize/workers)*workers + worker + 1 }
	for n := worker; n < rows/4; n += workers {
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		id, del := pick(), pick()
		for _, q := range []string{
			fmt.Sprintf("UPDATE sbtest.sbtest1 SET k = k + 1 WHERE id = %d", id),
			fmt.Sprintf("UPDATE sbtest.sbtest1 SET c = '%s' WHERE id = %d", sbString(r, 10), pick()),
			fmt.Sprintf("DELETE FROM sbtest.sbtest1 WHERE id = %d", del),
			"INSERT INTO sbtest.sbtest1 (id, k, c, pad) VALUES " + sbRow(r, del),
		} {
			if _, err := tx.Exec(q); err != nil {
				tx.Rollback()
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// timeShepherd applies start..end with a fresh Run into an empty target.
func timeShepherd(b *testing.B, r *Replicator, target *testpeer.MariaDB, start, end Position) time.Duration {
	b.StopTimer()
	target.Exec(b, "DROP DATABASE IF EXISTS "+benchDB, "DELETE FROM shepherd.shepherd_checkpoint")
	b.StartTimer()
	t0 := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var last Position
	var mu sync.Mutex
	go func() {
		done <- r.Run(ctx, start, 1, "bench", func(p Progress) {
			mu.Lock()
			last = p.Position
			mu.Unlock()
		})
	}()
	defer func() {
		cancel()
		<-done
	}()
	for {
		mu.Lock()
		at := last
		mu.Unlock()
		if c, ok := comparePositions(FlavorMariaDB, at, end); ok && c >= 0 {
			return time.Since(t0)
		}
		select {
		case err := <-done:
			b.Fatalf("Run: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// timeNative points the native replica at start and times it to end.
func timeNative(b *testing.B, source, native *testpeer.MariaDB, start, end Position, threads int) time.Duration {
	b.StopTimer()
	pointNative(b, source, native, start, threads)
	b.StartTimer()
	t0 := time.Now()
	native.Exec(b, "START SLAVE")
	for {
		var gtid string
		if err := native.DB(b).QueryRow("SELECT @@gtid_slave_pos").Scan(&gtid); err != nil {
			b.Fatal(err)
		}
		if c, ok := comparePositions(FlavorMariaDB, Position{GTID: gtid}, Position{GTID: end.GTID}); ok && c >= 0 {
			return time.Since(t0)
		}
		if st := slaveStatus(b, native); st["Last_Error"] != "" || st["Last_IO_Error"] != "" {
			b.Fatalf("native replica: %q %q", st["Last_Error"], st["Last_IO_Error"])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pointNative empties the native replica and points it at from, with the
// given number of parallel threads (0: single-threaded), not started.
func pointNative(b *testing.B, source, native *testpeer.MariaDB, from Position, threads int) {
	native.Exec(b, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL gtid_slave_pos = ''", "DROP DATABASE IF EXISTS "+benchDB,
		fmt.Sprintf("SET GLOBAL slave_parallel_threads = %d", threads),
		"SET GLOBAL slave_parallel_mode = 'optimistic'",
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d, MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_LOG_FILE = '%s', MASTER_LOG_POS = %d, MASTER_USE_GTID = no",
			source.Port(), from.File, from.Pos))
}

// slaveStatus reads SHOW SLAVE STATUS into a map by column name.
func slaveStatus(b *testing.B, m *testpeer.MariaDB) map[string]string {
	rows, err := m.DB(b).Query("SHOW SLAVE STATUS")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	out := map[string]string{}
	if !rows.Next() {
		return out
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		b.Fatal(err)
	}
	for i, c := range cols {
		out[c] = vals[i].String
	}
	return out
}
