package crashtest

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// snapshotPrefix starts the name of a snapshot file; the rest is the zxid
// in 16 hex digits, as for log segments.
const snapshotPrefix = "snapshot."

// TestDamagedSnapshot crashes the server under load, flips a byte in the
// middle of its newest snapshot (or of every snapshot), and checks that the
// server warns naming the damaged file, falls back to an older snapshot (or
// to the whole log, which is kept when nothing purges it), and keeps every
// acknowledged write.
func TestDamagedSnapshot(t *testing.T) {
	const minSnapshots = 2
	tests := []struct {
		name  string
		every bool
	}{
		{"newest snapshot", false},
		{"every snapshot", true},
	}
	seed := testSeed(t)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := startShepherd(t, serverOptions{snapCount: damageSnapCount})
			f := newFleet(t, srv, damageWorkers, damageSlots, seed+uint64(i))
			enough := func(elapsed time.Duration) bool {
				return elapsed >= damageMinLoad && len(listSnapshots(t, srv.dataDir)) >= minSnapshots
			}
			st := f.loadUntilKilled(1, enough, damageMaxLoad)
			if t.Failed() {
				return
			}
			snaps := listSnapshots(t, srv.dataDir)
			if len(snaps) < minSnapshots {
				t.Fatalf("%d snapshots after %d acknowledged writes with --snap-count %d; want %d", len(snaps), st.acked, damageSnapCount, minSnapshots)
			}
			victims := snaps[len(snaps)-1:]
			if tc.every {
				victims = snaps
			}
			for _, path := range victims {
				info, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				flipByte(t, path, info.Size()/2)
			}
			t.Logf("flipped the middle byte of %d of %d snapshots after %d acknowledged writes", len(victims), len(snaps), st.acked)

			srv.Restart(t)
			log := srv.lastLog()
			for _, path := range victims {
				requireWarning(t, log, filepath.Base(path))
			}
			f.verifyRecovered("after recovering past damaged snapshots")
		})
	}
}

// listSnapshots returns the paths of the complete snapshots in dir, oldest
// first.
func listSnapshots(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	var paths []string
	for _, e := range ents {
		if rest, ok := strings.CutPrefix(e.Name(), snapshotPrefix); ok && len(rest) == 16 {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(paths) // fixed-width hex zxids sort as numbers
	return paths
}
