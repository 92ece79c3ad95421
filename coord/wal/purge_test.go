package wal

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// snapshotZxids lists the snapshot files in the test's Dir.
func snapshotZxids(t *testing.T, e *env) []int64 {
	t.Helper()
	z, err := listZxidFiles(e.opts.Dir, parseSnapName)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func segmentFirsts(t *testing.T, e *env) []int64 {
	t.Helper()
	z, err := listZxidFiles(e.logDir(), parseLogName)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// snapshotEvery10 logs 1..n, rolling and snapshotting after every 10th
// zxid, the way the server does.
func snapshotEvery10(t *testing.T, s *Store, from, n int64) {
	t.Helper()
	for z := from; z <= n; z += 10 {
		appendRange(t, s, z, z+9)
		if err := s.Roll(); err != nil {
			t.Fatal(err)
		}
		writeSnapshot(t, s, z+9, 100)
	}
}

func TestPurge(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	snapshotEvery10(t, s, 1, 60)
	appendRange(t, s, 61, 65)
	if err := s.Purge(3); err != nil {
		t.Fatalf("purge: %v", err)
	}
	if got, want := snapshotZxids(t, e), []int64{40, 50, 60}; !slices.Equal(got, want) {
		t.Fatalf("snapshots after purge %v, want %v", got, want)
	}
	// Recovering from snapshot 40 needs the segment starting at 41 and on.
	if got, want := segmentFirsts(t, e), []int64{41, 51, 61}; !slices.Equal(got, want) {
		t.Fatalf("segments after purge %v, want %v", got, want)
	}
	if st := s.Stats(); st.Segments != 3 {
		t.Fatalf("Stats.Segments = %d after purge, want 3", st.Segments)
	}
	if !strings.Contains(e.logs.String(), "purged") {
		t.Fatalf("purge not logged:\n%s", e.logs)
	}
	// Purging again changes nothing.
	if err := s.Purge(3); err != nil {
		t.Fatal(err)
	}
	if got := segmentFirsts(t, e); len(got) != 3 {
		t.Fatalf("second purge removed more: %v", got)
	}
	s.Close()

	// The oldest kept snapshot really is enough: without the two newer
	// ones, recovery starts from it and the kept log.
	for _, z := range []int64{50, 60} {
		if err := os.Remove(filepath.Join(e.opts.Dir, snapName(z))); err != nil {
			t.Fatal(err)
		}
	}
	_, rec := e.open()
	checkSnapshot(t, rec, 40, 100)
	checkRecords(t, rec.Records, zxidRange(41, 65))
}

func TestPurgeWithoutRoll(t *testing.T) {
	// Snapshots taken mid-segment keep the segment that holds them.
	e := newEnv(t)
	e.opts.SegmentBytes = 300
	s, _ := e.open()
	for z := int64(1); z <= 50; z += 5 {
		appendRange(t, s, z, z+4)
		writeSnapshot(t, s, z+2, 10)
	}
	if err := s.Purge(4); err != nil {
		t.Fatal(err)
	}
	snaps := snapshotZxids(t, e)
	if len(snaps) != 4 {
		t.Fatalf("snapshots after Purge(4): %v", snaps)
	}
	oldest := snaps[0]
	segs := segmentFirsts(t, e)
	if segs[0] > oldest+1 {
		t.Fatalf("purge dropped records after snapshot %d: segments %v", oldest, segs)
	}
	if len(segs) > 3 {
		t.Fatalf("purge kept %v, more than the segments after snapshot %d", segs, oldest)
	}
	s.Close()
	for _, z := range snaps[1:] {
		os.Remove(filepath.Join(e.opts.Dir, snapName(z)))
	}
	_, rec := e.open()
	checkSnapshot(t, rec, oldest, 10)
	checkRecords(t, rec.Records, zxidRange(oldest+1, 50))
}

func TestPurgeKeepsEverythingWithFewSnapshots(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	appendRange(t, s, 1, 5)
	if err := s.Purge(3); err != nil { // no snapshot at all
		t.Fatal(err)
	}
	snapshotEvery10(t, s, 6, 25)
	if err := s.Purge(3); err != nil {
		t.Fatal(err)
	}
	if got := snapshotZxids(t, e); !slices.Equal(got, []int64{15, 25}) {
		t.Fatalf("snapshots %v, want both kept", got)
	}
	// Only what precedes the oldest snapshot may go.
	if got := segmentFirsts(t, e); !slices.Equal(got, []int64{16}) {
		t.Fatalf("segments %v, want [16]", got)
	}
}

func TestPurgeRetainMinimum(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	for _, n := range []int{-1, 0, 2} {
		if err := s.Purge(n); err == nil || !strings.Contains(err.Error(), "at least 3") {
			t.Fatalf("Purge(%d) = %v, want an error about the minimum of 3", n, err)
		}
	}
}

func TestPurgeDoesNotCountDamagedSnapshots(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	snapshotEvery10(t, s, 1, 40)
	s.Close()
	path := filepath.Join(e.opts.Dir, snapName(40))
	writeFile(t, path, []byte("rotten"))
	s, rec := e.open()
	checkSnapshot(t, rec, 30, 100)
	rec.Snapshot.Close()
	if err := s.Purge(3); err != nil {
		t.Fatal(err)
	}
	// 40 is damaged, so the three kept are 10, 20 and 30; 40 stays (it is
	// newer than all of them) until newer good snapshots push it out.
	if got := snapshotZxids(t, e); !slices.Equal(got, []int64{10, 20, 30, 40}) {
		t.Fatalf("snapshots %v, want [10 20 30 40]", got)
	}
	snapshotEvery10(t, s, 41, 70)
	if err := s.Purge(3); err != nil {
		t.Fatal(err)
	}
	if got := snapshotZxids(t, e); !slices.Equal(got, []int64{50, 60, 70}) {
		t.Fatalf("snapshots %v, want [50 60 70]", got)
	}
}
