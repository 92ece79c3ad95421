package crashtest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCorruptOlderSegment flips a byte in the middle of a log segment that
// is not the newest, where no crash can tear anything, and checks that the
// server refuses to start with a non-zero exit and a message naming the
// file, leaves every file as it was, and, once the byte is restored, starts
// with every acknowledged write.
//
// The server runs without snapshots, so recovery replays the whole log and
// needs every segment; the segments come from crashes, since every start
// begins a new one. (Segments older than the newest snapshot are not read
// at all, so damage there cannot stop a start.)
func TestCorruptOlderSegment(t *testing.T) {
	const maxCrashes = 5
	srv := startShepherd(t, serverOptions{snapCount: noSnapshots})
	f := newFleet(t, srv, damageWorkers, damageSlots, testSeed(t))
	var segs []segment
	for crash := 1; len(segs) < 3; crash++ {
		if crash > maxCrashes {
			t.Fatalf("%d log segments after %d crashes; want 3 (does a restarted server no longer start a new segment?)", len(segs), maxCrashes)
		}
		if crash > 1 {
			srv.Restart(t)
			f.verifyRecovered(fmt.Sprintf("after crash %d", crash-1))
		}
		f.loadUntilKilled(crash, func(e time.Duration) bool { return e >= damageMinLoad }, damageMaxLoad)
		if t.Failed() {
			return
		}
		var err error
		if segs, err = listSegments(srv.txnLogDir); err != nil {
			t.Fatal(err)
		}
	}
	if n := countFiles(t, srv.dataDir, snapshotPrefix); n != 0 {
		t.Fatalf("%d snapshots with --snap-count %d; the test needs recovery to read every segment", n, noSnapshots)
	}
	victim := segs[len(segs)-2]
	if len(victim.records) < 2 {
		t.Fatalf("segment %s has %d records; want at least 2 to damage one in the middle", victim.path, len(victim.records))
	}
	off := segmentHeaderSize + (victim.dataEnd()-segmentHeaderSize)/2
	before := hashFiles(t, segs)
	flipByte(t, victim.path, off)
	damaged := hashFiles(t, segs)
	t.Logf("flipped byte %d of %s (%d records, %d segments)", off, victim.path, len(victim.records), len(segs))

	code, log, err := srv.startExpectingExit()
	if err != nil {
		t.Fatal(err)
	}
	if code == 0 {
		t.Errorf("shepherd exited with status 0 on a corrupt log; want a failure status")
	}
	if !strings.Contains(log, filepath.Base(victim.path)) {
		t.Errorf("shepherd refused to start but its output does not name the corrupt file %s (byte %d flipped):\n%s",
			filepath.Base(victim.path), off, excerpt(log, logTailLines))
	} else {
		t.Logf("refused with status %d:\n%s", code, excerpt(log, 10))
	}
	if after := hashFiles(t, segs); after != damaged {
		t.Errorf("the refused start changed the log segments: a server that will not start must not repair or remove evidence")
	}

	flipByte(t, victim.path, off)
	if got := hashFiles(t, segs); got != before {
		t.Fatalf("restoring byte %d of %s did not restore the log", off, victim.path)
	}
	srv.Restart(t)
	f.verifyRecovered("after restoring the corrupt byte")
}

// crashWithSegments starts a server with a small --snap-count, loads it
