package replication

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// BenchmarkSteadyLag measures replication lag under a constant write rate,
// side by side with MariaDB's own replication:
//
//	SHEPHERD_IT=1 go test -run '^$' -bench BenchmarkSteadyLag -benchtime 1x ./replication/
//
// For each rate in SHEPHERD_BENCH_RATES (default "200,1000" transactions a
// second) and each applier in turn (the replicator, the native replica
// single-threaded, the native replica with slave_parallel_threads=4), the
// applier is started and catches up, then the source takes sysbench
// oltp_write_only transactions (4 row changes each) at that rate for
// SHEPHERD_BENCH_SECONDS (default 10). Alongside, a probe connection
// commits one numbered row every 20 ms, noting when it sent the INSERT; a
// poller on the applier's server notes when each probe first shows there.
// A probe's lag is the difference: one clock (same machine), 2 ms poll
// resolution, and it includes the source's own commit time, which the log
// reports separately. The appliers run one at a time, so none steals the
// others' CPU; each one's copy is compared with the source afterwards.
// Metrics: the rate the source achieved, and p50, p99 and max lag in
// milliseconds for each applier.
func BenchmarkSteadyLag(b *testing.B) {
	why, ok := testpeer.MariaDBAvailable()
	testpeer.Require(b, "MariaDB", ok, why)
	var rates []int
	for _, f := range strings.Split(cmp.Or(os.Getenv("SHEPHERD_BENCH_RATES"), "200,1000"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("SHEPHERD_BENCH_RATES=%q: want positive numbers separated by commas", os.Getenv("SHEPHERD_BENCH_RATES"))
		}
		rates = append(rates, n)
	}
	seconds := envInt(b, "SHEPHERD_BENCH_SECONDS", 10)

	source, target, native, r := benchServers(b, "lag")

	// Every applier starts from before the schema and catches up on it
	// (and on the rounds before it) before the measured load begins.
	from := currentPosition(b, r)
	source.Exec(b, "CREATE DATABASE "+benchDB, createSbtest1, "CREATE TABLE sbtest.lagprobe (id INT NOT NULL PRIMARY KEY)")
	if err := seedWriteOnly(source.DB(b)); err != nil {
		b.Fatalf("seed the source: %v", err)
	}

	appliers := []struct {
		name   string
		server *testpeer.MariaDB
		start  func(b *testing.B) (stop func())
	}{
		{"shepherd", target, func(b *testing.B) func() {
			target.Exec(b, "DROP DATABASE IF EXISTS "+benchDB, "DELETE FROM shepherd.shepherd_checkpoint")
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx, from, 1, "bench", func(Progress) {}) }()
			return func() {
				cancel()
				if err := <-done; err != nil && ctx.Err() == nil {
					b.Errorf("Run: %v", err)
				}
			}
		}},
		{"native1", native, func(b *testing.B) func() { return startNative(b, source, native, from, 0) }},
		{"native4", native, func(b *testing.B) func() { return startNative(b, source, native, from, 4) }},
	}
	round := 0
	for _, rate := range rates {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for _, a := range appliers {
					// Each round's probes have ids of their own, so that an
					// applier replaying earlier rounds is never taken to
					// have caught up with this one.
					round++
					base := round * lagRoundSpan
					stop := a.start(b)
					source.Exec(b, "DELETE FROM sbtest.lagprobe", fmt.Sprintf("INSERT INTO sbtest.lagprobe (id) VALUES (%d)", base))
					waitCaughtUpTo(b, a.server, base, 1)
					res := measureLag(b, source, a.server, base, rate, time.Duration(seconds)*time.Second)
					// Let the applier finish the load and compare its copy.
					last := base + lagRoundSpan - 1
					source.Exec(b, fmt.Sprintf("INSERT INTO sbtest.lagprobe (id) VALUES (%d)", last))
					waitCaughtUpTo(b, a.server, last, len(res.lag)+2)
					assertSameData(b, source, a.server, benchDB, benchDB)
					stop()
					lag, commit := percentiles(res.lag), percentiles(res.commit)
					achieved := float64(res.txns) / float64(seconds)
					b.Logf("%s at %.0f tx/s (asked %d): %d probes; lag p50 %.1f ms, p99 %.1f ms, max %.1f ms (of which the source's own commit: p50 %.1f ms)",
						a.name, achieved, rate, len(res.lag), lag(0.5), lag(0.99), lag(1), commit(0.5))
					b.ReportMetric(achieved, a.name+"-source-tx/s")
					b.ReportMetric(lag(0.5), a.name+"-p50-ms")
					b.ReportMetric(lag(0.99), a.name+"-p99-ms")
					b.ReportMetric(lag(1), a.name+"-max-ms")
				}
			}
		})
	}
}

// percentiles sorts ds and returns its p-quantile function in ms.
func percentiles(ds []time.Duration) func(p float64) float64 {
	slices.Sort(ds)
	return func(p float64) float64 {
		return float64(ds[min(len(ds)-1, int(p*float64(len(ds))))].Microseconds()) / 1000
	}
}

// waitCaughtUpTo waits until the replica's highest probe is id and it
// holds n probe rows (none left from an earlier run).
func waitCaughtUpTo(b *testing.B, replica *testpeer.MariaDB, id, n int) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var top sql.NullInt64
		var count int
		err := replica.DB(b).QueryRow("SELECT MAX(id), COUNT(*) FROM sbtest.lagprobe").Scan(&top, &count)
		if err == nil && top.Valid && top.Int64 == int64(id) && count == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the replica did not catch up in 2m (last error: %v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

// seedWriteOnly fills sbtest1 with the rows loadWriteOnly's transactions
// update, delete and re-insert.
func seedWriteOnly(db *sql.DB) error {
	r := rand.New(rand.NewPCG(7, 7))
	for first := 1; first <= lagTableSize; first += 100 {
		q := "INSERT INTO sbtest.sbtest1 (id, k, c, pad) VALUES "
		for id := first; id < first+100 && id <= lagTableSize; id++ {
			if id > first {
				q += ","
			}
			q += sbRow(r, id)
		}
		if _, err := db.Exec(q); err != nil {
			return err
		}
	}
	return nil
}

const lagTableSize = 10000

// lagRoundSpan is the room for one round's probe ids: round r uses
// r*lagRoundSpan (its start marker), then one id a probe, then
// (r+1)*lagRoundSpan-1 (its end marker).
const lagRoundSpan = 1_000_000

// startNative points the native replica at from with the given number of
// parallel threads (0: single-threaded) and starts it.
func startNative(b *testing.B, source, native *testpeer.MariaDB, from Position, threads int) (stop func()) {
	pointNative(b, source, native, from, threads)
	native.Exec(b, "START SLAVE")
	return func() {
		if st := slaveStatus(b, native); st["Last_Error"] != "" || st["Last_IO_Error"] != "" {
			b.Errorf("native replica: %q %q", st["Last_Error"], st["Last_IO_Error"])
		}
		native.Exec(b, "STOP SLAVE")
	}
}

// lagResult is, for each probe, the time from sending its INSERT to the
// source until the replica showed it (lag), and until the source's commit
// returned (commit: the part of lag no applier can do anything about).
type lagResult struct {
	lag, commit []time.Duration
	txns        int64 // write transactions the source committed
}

// measureLag runs the constant-rate workload on source for d and returns
// the probes' lag as seen on replica.
func measureLag(b *testing.B, source, replica *testpeer.MariaDB, base, rate int, d time.Duration) lagResult {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	const writers = 4
	errs := make(chan error, writers+1)
	var txns atomic.Int64

	// The write load: rate transactions a second over four connections,
	// each paced by its own ticker and owning the ids ≡ its number
	// (mod 4), so they never deadlock one another.
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := source.DB(b)
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			tick := time.NewTicker(time.Second * writers / time.Duration(rate))
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if err := writeOnlyTxn(db, r, w, writers); err != nil {
					errs <- err
					return
				}
				txns.Add(1)
			}
		}()
	}

	// The probe: one row every 20 ms (an autocommit INSERT), the times it
	// was sent and its commit returned noted.
	var mu sync.Mutex
	var sent, committed []time.Time // [id-1]
	wg.Add(1)
	go func() {
		defer wg.Done()
		db := source.DB(b)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for id := 1; ; id++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			t0 := time.Now()
			if id >= lagRoundSpan-1 {
				errs <- fmt.Errorf("more than %d probes in a round", lagRoundSpan-2)
				return
			}
			if _, err := db.Exec("INSERT INTO sbtest.lagprobe (id) VALUES (?)", base+id); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			sent = append(sent, t0)
			committed = append(committed, time.Now())
			mu.Unlock()
		}
	}()

	// The poller: the highest probe visible on the replica, every 2 ms,
	// until the load is over and the last probe has arrived.
	loadDone := make(chan struct{})
	go func() { wg.Wait(); close(loadDone) }()
	db := replica.DB(b)
	var seen []time.Time // seen[id-1]
	deadline := time.Now().Add(d + time.Minute)
	for {
		var top sql.NullInt64
		// The database appears only once the applier has run the DDL.
		err := db.QueryRow("SELECT MAX(id) FROM sbtest.lagprobe").Scan(&top)
		now := time.Now()
		if err == nil {
			rel := int(top.Int64) - base
			if rel < 0 || rel >= lagRoundSpan-1 {
				b.Fatalf("the replica's highest probe is %d, outside this round's %d..%d", top.Int64, base, base+lagRoundSpan-2)
			}
			for len(seen) < rel {
				seen = append(seen, now)
			}
		}
		select {
		case <-loadDone:
			mu.Lock()
			all := len(committed)
			mu.Unlock()
			if len(seen) >= all {
				close(errs)
				for err := range errs {
					b.Fatalf("write load: %v", err)
				}
				if all == 0 {
					b.Fatal("no probe committed")
				}
				res := lagResult{txns: txns.Load()}
				for i := range all {
					res.lag = append(res.lag, seen[i].Sub(sent[i]))
					res.commit = append(res.commit, committed[i].Sub(sent[i]))
				}
				return res
			}
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("the replica saw %d probes in %v", len(seen), d+time.Minute)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// writeOnlyTxn is one sysbench oltp_write_only transaction over the ids
// ≡ worker (mod workers) in 1..lagTableSize: two UPDATEs, a DELETE and a
// re-INSERT of the deleted row.
func writeOnlyTxn(db *sql.DB, r *rand.Rand, worker, workers int) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	pick := func() int { return r.IntN(lagTableSize/workers)*workers + worker + 1 }
	del := pick()
	for _, q := range []string{
		fmt.Sprintf("UPDATE sbtest.sbtest1 SET k = k + 1 WHERE id = %d", pick()),
		fmt.Sprintf("UPDATE sbtest.sbtest1 SET c = '%s' WHERE id = %d", sbString(r, 10), pick()),
		fmt.Sprintf("DELETE FROM sbtest.sbtest1 WHERE id = %d", del),
		"INSERT INTO sbtest.sbtest1 (id, k, c, pad) VALUES " + sbRow(r, del),
	} {
		if _, err := tx.Exec(q); err != nil {
			tx.Rollback()
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return tx.Commit()
}
