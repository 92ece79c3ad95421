package crashtest

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestCrashDuringRecovery crashes the server under load, leaves a torn
// record at the end of its log, and then kills it again and again while it
// starts: in the middle of reading the snapshot, replaying the log or
// cutting off the torn tail. Recovery must be restartable at any point: the
// final start recovers exactly the complete records and every acknowledged
// write.
func TestCrashDuringRecovery(t *testing.T) {
	const (
		kills = 8
		// maxDelay spans a start of the race-enabled binary on this
		// test's small data directory: exec, runtime start, recovery
		// (a few milliseconds) and listening.
		maxDelay = 40 * time.Millisecond
	)
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	srv, f := crashWithSegments(t, seed, 2)
	segs, err := listSegments(srv.txnLogDir)
	if err != nil {
		t.Fatal(err)
	}
	d := appendHalfRecord(t, segs, rng)

	early := 0 // kills that landed before the server listened
	for i := range kills {
		delay := time.Duration(rng.Int64N(int64(maxDelay)))
		p, err := srv.launch()
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.done:
			t.Fatalf("start %d exited on its own: %v\n%s", i+1, p.err, srv.logTail(logTailLines))
		case <-time.After(delay): // when to crash, not synchronisation
		}
		srv.Kill()
		if !strings.Contains(srv.lastLog(), "msg=serving") {
			early++
		}
	}
	t.Logf("%d of %d kills landed before the server was serving", early, kills)
	srv.Restart(t)
	if zxid, err := serverZxid(srv.Addr()); err != nil {
		t.Errorf("srvr: %v", err)
	} else if zxid != d.lastKept {
		t.Errorf("recovered to zxid %#x, want %#x: the last complete record in the log", zxid, d.lastKept)
	}
	f.verifyRecovered("after crashes during recovery")
}
