package replication

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// BenchmarkApply measures how fast the replicator applies a binlog, and
// at what CPU cost, side by side with MariaDB's own replication applying
// the same binlog:
//
//	SHEPHERD_IT=1 go test -run '^$' -bench BenchmarkApply -benchtime 1x ./replication/
//	… -bench 'BenchmarkApply/mixed/relaxed'      # one workload, one set-up
//
// For each workload a source is loaded by 4 connections; then, for each
// target set-up, two fresh servers — a target for the replicator and a
// native replica, started with the same options — apply the binlog from
// the position before the workload, timed from the applier's start to its
// commit of the last transaction. Each round runs the replicator, the
// native replica single-threaded and with slave_parallel_threads=4
// (optimistic), in an order that rotates from round to round, so that a
// load that comes and goes on the machine falls on all of them; a
// set-up runs SHEPHERD_BENCH_ROUNDS rounds (default 3) and reports
// medians.
//
// Set-ups (both with a 1 GiB buffer pool and 256 MiB redo log):
//
//   - durable: innodb_flush_log_at_trx_commit=1, a binlog with
//     sync_binlog=1, log_slave_updates on (the native replica writes its
//     own binlog, as the replicator's target does);
//   - relaxed: innodb_flush_log_at_trx_commit=2, no binlog (so also no
//     sync_binlog), the usual throwaway read replica.
//
// Workloads:
//
//   - mixed: SHEPHERD_BENCH_MIXED_ROWS row changes (default 650000),
//     rounded down to a multiple of 520: 10 parts inserts, 2 updates, 1 delete, over four sysbench tables, a
//     table with a composite key and a 19-column table of most types;
//   - insert: SHEPHERD_BENCH_ROWS rows (default 100000) into sbtest1, 10
//     per transaction;
//   - write_only: a quarter as many transactions of sysbench's
//     oltp_write_only shape — two UPDATEs, a DELETE and an INSERT by key.
//
// SHEPHERD_BENCH_BATCH_ROWS sets the replicator's Config.BatchRows (1:
// every source transaction committed on its own).
// SHEPHERD_BENCH_DECODER=go-mysql decodes rows with go-mysql alone, not
// the fast path for common column types (rowdecode.go), to compare.
//
// Metrics, medians over the rounds: rows/s of each applier, the
// replicator's ratio to each native mode (median of the per-round ratios;
// above 1 means faster), and CPU-seconds per million row changes — of the
// benchmark process (the replicator; the rest of the process idles) and
// its target, and of the native replica's server — read from
// /proc/<pid>/stat before and after the measured window. The log has
// the spread, then every round's numbers, and with -test.v or
// SHEPHERD_BENCH_PROFILE each run's server counters.
func BenchmarkApply(b *testing.B) {
	why, ok := testpeer.MariaDBAvailable()
	testpeer.Require(b, "MariaDB", ok, why)
	rows := envInt(b, "SHEPHERD_BENCH_ROWS", 100000)
	mixed := envInt(b, "SHEPHERD_BENCH_MIXED_ROWS", 650000)
	rounds := envInt(b, "SHEPHERD_BENCH_ROUNDS", 3)
	for _, w := range []benchWorkload{
		{name: "mixed", rows: mixed / 520 * 520, create: createMixed, load: loadMixed},
		{name: "insert", rows: rows, create: []string{createSbtest(1)}, load: loadInserts},
		{name: "write_only", rows: rows / 4 * 4, create: []string{createSbtest(1)}, load: loadWriteOnly},
	} {
		b.Run(w.name, func(b *testing.B) {
			source := testpeer.StartMariaDB(b, testpeer.MariaDBOptions{ExtraArgs: benchSourceArgs})
			var start, end Position
			loaded := false
			for _, s := range benchSetups {
				b.Run(s.name, func(b *testing.B) {
					target, native, r := benchPair(b, source, "bench", s)
					if !loaded {
						// The first set-up's replicator reads the source's
						// positions; the load is written once for both.
						start = currentPosition(b, r)
						if err := prepareBench(b, source, w); err != nil {
							b.Fatalf("load the source: %v", err)
						}
						end = currentPosition(b, r)
						loaded = true
						b.Logf("%s: %d row changes, binlog %s to %s", w.name, w.rows, start, end)
					}
					benchApply(b, w, rounds, source, target, native, r, start, end)
				})
			}
		})
	}
}

type benchWorkload struct {
	name   string
	rows   int      // row changes the workload logs
	create []string // its tables, in benchDB
	load   func(db *sql.DB, worker, workers, rows int) error
}

// benchSetup is how the servers an applier writes into are configured.
type benchSetup struct {
	name string
	args []string
}

// benchCommonArgs size the servers of the apply benchmarks: the working
// set (about 300 MB for the mixed workload) fits the buffer pool, and the
// redo log is large enough that checkpoints do not throttle either applier.
var benchCommonArgs = []string{"--innodb-buffer-pool-size=1G", "--innodb-log-file-size=256M", "--innodb-log-buffer-size=16M"}

var benchSetups = []benchSetup{
	{"durable", append([]string{"--innodb-flush-log-at-trx-commit=1", "--sync-binlog=1", "--log-slave-updates=ON"}, benchCommonArgs...)},
	{"relaxed", append([]string{"--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0", "--skip-log-bin"}, benchCommonArgs...)},
}

// benchSourceArgs: the source only has to write the workload quickly; its
// settings are the same for every applier.
var benchSourceArgs = append([]string{"--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0"}, benchCommonArgs...)

const benchDB = "sbtest"

// applierRun is one measured run of one applier.
type applierRun struct {
	elapsed time.Duration
	// cpu is the CPU time of the applier's side: the replicator's process
	// and its target, or the native replica's server.
	core, server time.Duration
}

func benchApply(b *testing.B, w benchWorkload, rounds int, source, target, native *testpeer.MariaDB, r *Replicator, start, end Position) {
	appliers := []struct {
		name string
		run  func() applierRun
	}{
		{"shepherd", func() applierRun { return timeShepherd(b, r, target, start, end) }},
		{"native1", func() applierRun { return timeNative(b, source, native, start, end, 0) }},
		{"native4", func() applierRun { return timeNative(b, source, native, start, end, 4) }},
	}
	runs := map[string][]applierRun{}
	var details []string
	for i := 0; i < b.N*rounds; i++ {
		for j := range appliers {
			a := appliers[(i+j)%len(appliers)]
			res := a.run()
			runs[a.name] = append(runs[a.name], res)
			details = append(details, fmt.Sprintf("round %d %s: %.2f s, %.0f rows/s, CPU-s per million rows: core %.2f, server %.2f",
				i+1, a.name, res.elapsed.Seconds(), float64(w.rows)/res.elapsed.Seconds(),
				perMillion(res.core, w.rows), perMillion(res.server, w.rows)))
		}
	}
	// The testing package keeps only the first lines of a benchmark's
	// log: the spread comes first, the rounds after it.
	for _, a := range appliers {
		rs := runs[a.name]
		spread := func(f func(applierRun) float64) string {
			lo, hi := f(rs[0]), f(rs[0])
			for _, x := range rs {
				lo, hi = min(lo, f(x)), max(hi, f(x))
			}
			return fmt.Sprintf("%.4g (%.4g–%.4g)", median(rs, f), lo, hi)
		}
		b.Logf("%s, median (range) of %d: rows/s %s; CPU-s per million rows: core %s, server %s", a.name, len(rs),
			spread(func(x applierRun) float64 { return float64(w.rows) / x.elapsed.Seconds() }),
			spread(func(x applierRun) float64 { return perMillion(x.core, w.rows) }),
			spread(func(x applierRun) float64 { return perMillion(x.server, w.rows) }))
	}
	for _, d := range details {
		b.Log(d)
	}
	rate := func(name string) float64 {
		return median(runs[name], func(x applierRun) float64 { return float64(w.rows) / x.elapsed.Seconds() })
	}
	ratio := func(name string) float64 {
		var rs []float64
		for i, x := range runs[name] {
			rs = append(rs, x.elapsed.Seconds()/runs["shepherd"][i].elapsed.Seconds())
		}
		return median(rs, func(x float64) float64 { return x })
	}
	cpu := func(name string, f func(applierRun) time.Duration) float64 {
		return median(runs[name], func(x applierRun) float64 { return perMillion(f(x), w.rows) })
	}
	server := func(x applierRun) time.Duration { return x.server }
	b.ReportMetric(rate("shepherd"), "shepherd-rows/s")
	b.ReportMetric(rate("native1"), "native1-rows/s")
	b.ReportMetric(rate("native4"), "native4-rows/s")
	b.ReportMetric(ratio("native1"), "x-native1")
	b.ReportMetric(ratio("native4"), "x-native4")
	b.ReportMetric(cpu("shepherd", func(x applierRun) time.Duration { return x.core }), "core-cpus/Mrows")
	b.ReportMetric(cpu("shepherd", server), "target-cpus/Mrows")
	b.ReportMetric(cpu("shepherd", func(x applierRun) time.Duration { return x.core + x.server }), "shepherd-cpus/Mrows")
	b.ReportMetric(cpu("native1", server), "native1-cpus/Mrows")
	b.ReportMetric(cpu("native4", server), "native4-cpus/Mrows")
	assertSameData(b, source, target, benchDB, benchDB)
	assertSameData(b, source, native, benchDB, benchDB)
}

func perMillion(d time.Duration, rows int) float64 { return d.Seconds() * 1e6 / float64(rows) }

func median[T any](xs []T, f func(T) float64) float64 {
	vs := make([]float64, len(xs))
	for i, x := range xs {
		vs[i] = f(x)
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return 0
	}
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// benchServers starts the three servers of the steady-lag benchmark — a
// source, a target for the replicator, and a native replica, all with
// log_slave_updates on so that both appliers write their own binlog, and
// innodb_flush_log_at_trx_commit=1 — and opens a replicator for task from
// the source to the target.
func benchServers(b *testing.B, task string) (source, target, native *testpeer.MariaDB, r *Replicator) {
	s := benchSetup{"lag", []string{"--log-slave-updates=ON", "--innodb-buffer-pool-size=256M"}}
	source = testpeer.StartMariaDB(b, testpeer.MariaDBOptions{ExtraArgs: s.args})
	target, native, r = benchPair(b, source, task, s)
	return source, target, native, r
}

// benchPair starts a target and a native replica configured as s, and
// opens a replicator for task from source to the target.
func benchPair(b *testing.B, source *testpeer.MariaDB, task string, s benchSetup) (target, native *testpeer.MariaDB, r *Replicator) {
	opts := testpeer.MariaDBOptions{ExtraArgs: s.args}
	target = testpeer.StartMariaDB(b, opts)
	native = testpeer.StartMariaDB(b, opts)
	cfg := Config{Task: task, Source: endpoint(source), Target: endpoint(target), Include: []string{benchDB},
		BatchRows: envInt(b, "SHEPHERD_BENCH_BATCH_ROWS", DefaultBatchRows),
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	switch d := os.Getenv("SHEPHERD_BENCH_DECODER"); d {
	case "go-mysql":
		cfg.goMySQLRows = true
	case "", "fast":
	default:
		b.Fatalf("SHEPHERD_BENCH_DECODER=%q: want fast (the default) or go-mysql", d)
	}
	return target, native, openReplicator(b, cfg)
}

// createSbtest is sysbench's table sbtest<n>.
func createSbtest(n int) string {
	return fmt.Sprintf(`CREATE TABLE sbtest.sbtest%d (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL DEFAULT 0,
	c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))`, n)
}

// createSbtest1 is sysbench's first table.
var createSbtest1 = createSbtest(1)

// prepareBench creates the workload's tables and runs it with 4
// connections.
func prepareBench(b *testing.B, source *testpeer.MariaDB, w benchWorkload) error {
	db := source.DB(b)
	source.Exec(b, append([]string{"CREATE DATABASE " + benchDB}, w.create...)...)
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
func timeShepherd(b *testing.B, r *Replicator, target *testpeer.MariaDB, start, end Position) applierRun {
	b.StopTimer()
	target.Exec(b, "DROP DATABASE IF EXISTS "+benchDB, "DELETE FROM shepherd.shepherd_checkpoint")
	b.StartTimer()
	status0 := globalStatus(b, target)
	stopProfile := startProfiles(b, "shepherd", target, true)
	core0, server0 := cpuTime(b, os.Getpid()), cpuTime(b, target.PID())
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
		if c, ok := ComparePositions(FlavorMariaDB, at, end); ok && c >= 0 {
			res := applierRun{elapsed: time.Since(t0), core: cpuTime(b, os.Getpid()) - core0, server: cpuTime(b, target.PID()) - server0}
			stopProfile()
			logStatusDelta(b, "shepherd's target", status0, globalStatus(b, target))
			return res
		}
		select {
		case err := <-done:
			b.Fatalf("Run: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// timeNative points the native replica at start and times it to end. It
// waits with MASTER_GTID_WAIT, which costs the replica nothing while it
// applies.
func timeNative(b *testing.B, source, native *testpeer.MariaDB, start, end Position, threads int) applierRun {
	b.StopTimer()
	pointNative(b, source, native, start, threads)
	b.StartTimer()
	name := fmt.Sprintf("native%d", max(threads, 1))
	status0 := globalStatus(b, native)
	stopProfile := startProfiles(b, name, native, false)
	server0 := cpuTime(b, native.PID())
	t0 := time.Now()
	native.Exec(b, "START SLAVE")
	for {
		var reached int
		if err := native.DB(b).QueryRow("SELECT MASTER_GTID_WAIT(?, 1)", end.GTID).Scan(&reached); err != nil {
			b.Fatal(err)
		}
		if reached == 0 {
			res := applierRun{elapsed: time.Since(t0), server: cpuTime(b, native.PID()) - server0}
			stopProfile()
			logStatusDelta(b, name, status0, globalStatus(b, native))
			return res
		}
		if st := slaveStatus(b, native); st["Last_Error"] != "" || st["Last_IO_Error"] != "" {
			b.Fatalf("native replica: %q %q", st["Last_Error"], st["Last_IO_Error"])
		}
	}
}

// pointNative empties the native replica and points it at from, with the
// given number of parallel threads (0: single-threaded), not started.
// Parallel mode gets MariaDB's usual catch-up tuning: optimistic, with a
// queue large enough that the workers are not starved.
func pointNative(b *testing.B, source, native *testpeer.MariaDB, from Position, threads int) {
	native.Exec(b, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL gtid_slave_pos = ''", "DROP DATABASE IF EXISTS "+benchDB,
		fmt.Sprintf("SET GLOBAL slave_parallel_threads = %d", threads),
		"SET GLOBAL slave_parallel_mode = 'optimistic'",
		"SET GLOBAL slave_parallel_max_queued = 16777216",
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d, MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_LOG_FILE = '%s', MASTER_LOG_POS = %d, MASTER_USE_GTID = no",
			source.Port(), from.File, from.Pos))
}

// cpuTime is the user and system CPU time a process has used so far.
func cpuTime(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("CPU time of process %d (the benchmark needs Linux's /proc): %v", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, in USER_HZ (100 on Linux).
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: cannot read utime and stime from %q", pid, raw)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
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

// globalStatus reads the server's statement and handler counters.
func globalStatus(b *testing.B, m *testpeer.MariaDB) map[string]int64 {
	rows, err := m.DB(b).Query("SHOW GLOBAL STATUS WHERE Variable_name LIKE 'Com\\_%' OR Variable_name LIKE 'Handler\\_%' OR Variable_name IN ('Questions', 'Bytes_received', 'Innodb_data_fsyncs', 'Innodb_os_log_fsyncs', 'Binlog_commits', 'Binlog_group_commits')")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var v sql.NullInt64
		if err := rows.Scan(&name, &v); err != nil {
			b.Fatal(err)
		}
		out[name] = v.Int64
	}
	return out
}

// logStatusDelta logs the counters that moved in a measured window: what
// statements and storage-engine calls each applier cost its server.
func logStatusDelta(b *testing.B, who string, before, after map[string]int64) {
	if os.Getenv("SHEPHERD_BENCH_PROFILE") == "" && !testing.Verbose() {
		return
	}
	var moved []string
	for name, v := range after {
		if d := v - before[name]; d > 0 {
			moved = append(moved, fmt.Sprintf("%s=%d", name, d))
		}
	}
	slices.Sort(moved)
	b.Logf("%s server counters: %s", who, strings.Join(moved, " "))
}

// startProfiles, when SHEPHERD_BENCH_PROFILE names a directory, records
// the first measured run of each applier: perf's CPU samples of its
// server and, for the replicator, a Go CPU profile of the benchmark
// process. The returned function stops them.
func startProfiles(b *testing.B, who string, server *testpeer.MariaDB, goProfile bool) (stop func()) {
	dir := os.Getenv("SHEPHERD_BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	base := filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "_")+"-"+who)
	if _, err := os.Stat(base + ".perf"); err == nil {
		return func() {} // a later round
	}
	perf := exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-p", strconv.Itoa(server.PID()), "-o", base+".perf")
	if err := perf.Start(); err != nil {
		b.Logf("perf record: %v (no server profile)", err)
		perf = nil
	}
	var f *os.File
	if goProfile {
		var err error
		if f, err = os.Create(base + ".cpu.pprof"); err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
	}
	return func() {
		if f != nil {
			pprof.StopCPUProfile()
			f.Close()
		}
		if perf != nil {
			perf.Process.Signal(os.Interrupt)
			perf.Wait()
		}
	}
}
