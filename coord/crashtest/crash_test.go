package crashtest

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var seedFlag = flag.Uint64("crashtest.seed", 0, "seed for the crash tests' random choices (0: from the clock); failures log the seed they used")

// testSeed returns the seed for t's random choices and logs it, so that a
// failure's load and crash points can be replayed with -crashtest.seed.
func testSeed(t *testing.T) uint64 {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -crashtest.seed=%d)", seed, seed)
	return seed
}

// TestCrashDurability crashes the server with SIGKILL under concurrent
// creates, versioned setData and setACL, deletes and multis — at random
// moments, and on every other cycle while a snapshot is being written — then
// stops it gracefully under the same load, restarting it each time on the
// same data directory and port. After every restart every acknowledged
// write must be there with the data, ACL and stat it was acknowledged with,
// no acknowledged delete may be undone and no multi half applied, and the
// clients' sessions (and so their ephemerals) must have survived while a
// closed session's ephemerals stay gone. A small --snap-count makes
// snapshots happen mid-load, so recovery is tested from snapshot plus log,
// not from the log alone, and a frequent autopurge deletes old snapshots
// and segments meanwhile, which must never take anything recovery needs.
// The log has its own directory (--data-log-dir) here; the other tests
// keep it with the snapshots.
func TestCrashDurability(t *testing.T) {
	const crashes = 4
	srv := startShepherd(t, serverOptions{snapCount: 500, autopurge: 100 * time.Millisecond, separateLog: true})
	midSnapshot := 0
	total, checked := crashUnderLoad(t, srv, testSeed(t), crashes, crashHooks{
		snapshotting: func() bool { return countTempSnapshots(t, srv.dataDir) > 0 },
		crashed: func() {
			if countTempSnapshots(t, srv.dataDir) > 0 {
				midSnapshot++
			}
		},
		snapshotted: func() bool { return countFiles(t, srv.dataDir, snapshotPrefix) > 0 },
	})
	if t.Failed() {
		return
	}
	snaps := countFiles(t, srv.dataDir, snapshotPrefix)
	segs := countFiles(t, srv.txnLogDir, segmentPrefix)
	t.Logf("%d writes acknowledged, %d with unknown outcome, %d zxids checked unique and ordered; %d of %d crashes interrupted a snapshot; %d snapshots and %d log segments left after purges",
		total.acked, total.unknown, checked, midSnapshot, crashes, snaps, segs)
	if snaps == 0 {
		t.Errorf("no snapshot.* file in %s after %d acknowledged writes with --snap-count 500: recovery was only tested from the log", srv.dataDir, total.acked)
	}
}

// snapshotBound is how long the last load may run waiting for a snapshot:
// a liveness bound, far above the second or so it takes on an idle machine.
const snapshotBound = 60 * time.Second

// crashHooks lets crashUnderLoad see into a target's data directory.
type crashHooks struct {
	// snapshotting reports whether a snapshot is being written; every
	// other crash then waits for one, to interrupt it.
	snapshotting func() bool
	// crashed runs after each crash, before the restart.
	crashed func()
	// snapshotted reports whether a finished snapshot exists. The load
	// before the graceful stop goes on until it does (within a bound), so
	// that the last recovery reads a snapshot however slowly a loaded
	// machine let the timed cycles write.
	snapshotted func() bool
}

// crashUnderLoad is the body of TestCrashDurability, for any target: cycles
// crashes, then a graceful stop, each under load. It returns the load's
// totals and how many applied zxids the ledger checked.
func crashUnderLoad(t *testing.T, srv target, seed uint64, cycles int, hooks crashHooks) (loadStats, int) {
	const (
		workers = 6
		slots   = 24
		// The ballast makes a snapshot about 4 MiB, tens of milliseconds
		// of writing, so that some crashes interrupt one.
		ballast      = 1000
		ballastBytes = 4 << 10
		minLoad      = 400 * time.Millisecond
		maxLoad      = 1500 * time.Millisecond
	)
	rng := rand.New(rand.NewPCG(seed, 0))
	f := newFleet(t, srv, workers, slots, seed)
	f.addBallast(ballast, ballastBytes)
	var total loadStats
	for cycle := 1; cycle <= cycles; cycle++ {
		f.closeSession(fmt.Sprintf("in cycle %d", cycle))
		killAt := minLoad + time.Duration(rng.Int64N(int64(maxLoad-minLoad)+1))
		inSnapshot := hooks.snapshotting != nil && cycle%2 == 0
		st := f.loadUntilKilled(cycle, func(elapsed time.Duration) bool {
			if inSnapshot {
				return elapsed >= minLoad && hooks.snapshotting()
			}
			return elapsed >= killAt
		}, maxLoad)
		when := "at a random moment"
		if inSnapshot {
			when = "once a snapshot was being written"
		}
		t.Logf("cycle %d: killed %s, after %v, with %d writes acknowledged and %d in flight", cycle, when, st.elapsed.Round(time.Millisecond), st.acked, st.unknown)
		if st.acked == 0 {
			t.Errorf("cycle %d: no write was acknowledged in %v of load; the test proves nothing", cycle, st.elapsed)
		}
		total.acked += st.acked
		total.unknown += st.unknown
		if t.Failed() {
			return total, f.ledger.count()
		}
		if hooks.crashed != nil {
			hooks.crashed()
		}
		srv.Restart(t)
		f.verifyRecovered(fmt.Sprintf("after crash %d", cycle))
		if t.Failed() {
			return total, f.ledger.count()
		}
	}
	// A graceful stop under load must keep everything as well.
	stopWhen, stopBound := func(elapsed time.Duration) bool { return elapsed >= minLoad }, maxLoad
	if hooks.snapshotted != nil {
		stopWhen = func(elapsed time.Duration) bool { return elapsed >= minLoad && hooks.snapshotted() }
		stopBound = snapshotBound
	}
	st := f.loadUntil(cycles+1, stopWhen, stopBound, func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("graceful stop under load: %v", err)
		}
	})
	t.Logf("graceful stop under load with %d writes acknowledged and %d in flight", st.acked, st.unknown)
	total.acked += st.acked
	total.unknown += st.unknown
	srv.Restart(t)
	f.verifyRecovered("after a graceful stop under load")
	return total, f.ledger.count()
}

// countTempSnapshots counts the unfinished snapshots in dir: a crash in the
// middle of writing one leaves its temporary file behind.
func countTempSnapshots(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), snapshotPrefix) && strings.HasSuffix(e.Name(), ".tmp") {
			n++
		}
	}
	return n
}

// countFiles counts the entries of dir whose names start with prefix.
func countFiles(t *testing.T, dir, prefix string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) && filepath.Ext(e.Name()) != ".tmp" {
			n++
		}
	}
	return n
}
