package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSnapshotRecovery(t *testing.T) {
	tests := []struct {
		name string
		size int
	}{
		{"empty stream", 0},
		{"one byte", 1},
		{"exactly one chunk", snapChunkSize},
		{"several chunks", 3*snapChunkSize + 123},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			s, _ := e.open()
			appendRange(t, s, 1, 10)
			if err := s.Roll(); err != nil {
				t.Fatal(err)
			}
			writeSnapshot(t, s, 10, tt.size)
			appendRange(t, s, 11, 15)
			s.Close()
			_, rec := e.open()
			checkSnapshot(t, rec, 10, tt.size)
			checkRecords(t, rec.Records, zxidRange(11, 15))
		})
	}
}

func TestSnapshotInTheMiddleOfASegment(t *testing.T) {
	// The tree's zxid may lag the log: a snapshot at 7 while the segment
	// runs 1..10 must recover 8..10 from the same segment.
	e := newEnv(t)
	s, _ := e.open()
	appendRange(t, s, 1, 10)
	writeSnapshot(t, s, 7, 64)
	s.Close()
	_, rec := e.open()
	checkSnapshot(t, rec, 7, 64)
	checkRecords(t, rec.Records, zxidRange(8, 10))
}

func TestSnapshotAheadOfTheLog(t *testing.T) {
	// A snapshot newer than every logged record (e.g. restored from a
	// backup without logs) is a valid starting point; the log continues
	// after it, and only the snapshot bridges the hole.
	e := newEnv(t)
	s, _ := e.open()
	appendRange(t, s, 1, 10)
	writeSnapshot(t, s, 15, 64)
	s.Close()
	s, rec := e.open()
	checkSnapshot(t, rec, 15, 64)
	checkRecords(t, rec.Records, nil)
	if got := s.LastZxid(); got != 15 {
		t.Fatalf("LastZxid = %d, want the snapshot's 15", got)
	}
	if err := s.Append(15, nil); !errors.Is(err, ErrZxidOrder) {
		t.Fatalf("Append(15) after snapshot 15 = %v, want ErrZxidOrder", err)
	}
	appendRange(t, s, 16, 20)
	s.Close()
	s, rec = e.open()
	checkSnapshot(t, rec, 15, 64)
	checkRecords(t, rec.Records, zxidRange(16, 20))
	rec.Snapshot.Close()
	s.Close()

	// Without that snapshot nothing covers 11..15: refuse, naming the gap.
	if err := os.Rename(filepath.Join(e.opts.Dir, snapName(15)), filepath.Join(e.opts.Dir, "moved-aside")); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.tryOpen()
	mustCorrupt(t, err, logName(16), "gap")
}

// damagedSnapshotSetup logs 1..30 with snapshots at 10 and 20 and returns
// the path of the snapshot at 20.
func damagedSnapshotSetup(t *testing.T, e *env) string {
	t.Helper()
	s, _ := e.open()
	appendRange(t, s, 1, 10)
	writeSnapshot(t, s, 10, 2*snapChunkSize+10)
	appendRange(t, s, 11, 20)
	writeSnapshot(t, s, 20, 2*snapChunkSize+20)
	appendRange(t, s, 21, 30)
	s.Close()
	return filepath.Join(e.opts.Dir, snapName(20))
}

func TestDamagedSnapshotFallsBack(t *testing.T) {
	e := newEnv(t)
	path := damagedSnapshotSetup(t, e)
	good := readFile(t, path)
	n := int64(len(good))
	tests := []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"bad magic", flipAt(0)},
		{"bad header zxid", flipAt(20)},
		{"bad header checksum", flipAt(snapHeaderSize - 1)},
		{"bad byte in the first chunk", flipAt(snapHeaderSize + snapChunkHdr + 5)},
		{"bad chunk length", flipAt(snapHeaderSize + 1)},
		{"bad byte in the last chunk", flipAt(n - snapEndSize - 3)},
		{"bad end marker total", flipAt(n - 1)},
		{"bad end marker checksum", flipAt(n - 10)},
		{"cut before the end marker", func(b []byte) []byte { return b[:n-snapEndSize] }},
		{"cut inside the end marker", func(b []byte) []byte { return b[:n-4] }},
		{"cut inside a chunk", func(b []byte) []byte { return b[:snapHeaderSize+1000] }},
		{"cut to the header", func(b []byte) []byte { return b[:snapHeaderSize] }},
		{"empty file", func(b []byte) []byte { return nil }},
		{"data after the end marker", func(b []byte) []byte { return append(b, 0) }},
		{"chunks swapped", func(b []byte) []byte {
			// Both chunks are full-sized, so swapping them keeps every
			// length valid; only the sequence number in the crc notices.
			c := bytes.Clone(b)
			a := c[snapHeaderSize : snapHeaderSize+snapChunkHdr+snapChunkSize]
			z := c[snapHeaderSize+snapChunkHdr+snapChunkSize : snapHeaderSize+2*(snapChunkHdr+snapChunkSize)]
			tmp := bytes.Clone(a)
			copy(a, z)
			copy(z, tmp)
			return c
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			path := damagedSnapshotSetup(t, e)
			writeFile(t, path, tt.damage(bytes.Clone(good)))
			s, rec := e.open()
			checkSnapshot(t, rec, 10, 2*snapChunkSize+10)
			checkRecords(t, rec.Records, zxidRange(11, 30))
			if logs := e.logs.String(); !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, path) {
				t.Fatalf("no warning naming %s; logs:\n%s", path, logs)
			}
			if got := s.LastZxid(); got != 30 {
				t.Fatalf("LastZxid = %d, want 30", got)
			}
		})
	}
}

func flipAt(i int64) func([]byte) []byte {
	return func(b []byte) []byte {
		b[i] ^= 0x10
		return b
	}
}

func TestAllSnapshotsDamagedFallsBackToFullLog(t *testing.T) {
	e := newEnv(t)
	path := damagedSnapshotSetup(t, e)
	writeFile(t, path, []byte("junk"))
	older := filepath.Join(e.opts.Dir, snapName(10))
	writeFile(t, older, []byte("junk"))
	_, rec := e.open()
	checkSnapshot(t, rec, 0, 0)
	checkRecords(t, rec.Records, zxidRange(1, 30))
}

func TestDamagedSnapshotWithoutCoveringLog(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	appendRange(t, s, 1, 10)
	if err := s.Roll(); err != nil {
		t.Fatal(err)
	}
	writeSnapshot(t, s, 10, 100)
	appendRange(t, s, 11, 20)
	s.Close()
	// The log before the snapshot was purged; then the snapshot rotted.
	if err := os.Remove(filepath.Join(e.opts.Dir, logName(1))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.opts.Dir, snapName(10))
	b := readFile(t, path)
	b[snapHeaderSize+snapChunkHdr] ^= 1
	writeFile(t, path, b)
	checkCorrupt(t, e, filepath.Join(e.opts.Dir, logName(11)), 0)
	_, _, err := e.tryOpen()
	mustCorrupt(t, err, "damaged")
}

func TestSnapshotCallbackError(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	boom := errors.New("tree walk failed")
	err := s.WriteSnapshot(5, func(w io.Writer) error {
		if _, err := w.Write(make([]byte, 3*snapChunkSize)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "0x5") {
		t.Fatalf("WriteSnapshot = %v, want the callback's error with the zxid", err)
	}
	entries, _ := os.ReadDir(e.opts.Dir)
	for _, de := range entries {
		if strings.HasPrefix(de.Name(), snapPrefix) {
			t.Fatalf("failed snapshot left %s behind", de.Name())
		}
	}
	if st := s.Stats(); st.Snapshots != 0 {
		t.Fatalf("failed snapshot counted: %+v", st)
	}
}

func TestUnfinishedSnapshotIsRemoved(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	appendRange(t, s, 1, 3)
	s.Close()
	tmp := filepath.Join(e.opts.Dir, snapName(3)+".123456"+tmpSuffix)
	// A crash mid-snapshot: a well-formed prefix under the temporary name.
	writeFile(t, tmp, appendSnapHeader(nil, 3))
	_, rec := e.open()
	checkSnapshot(t, rec, 0, 0)
	checkRecords(t, rec.Records, zxidRange(1, 3))
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("temporary snapshot %s not removed: %v", tmp, err)
	}
}

func TestSnapshotReaderReportsDamageWhileStreaming(t *testing.T) {
	// Recover verifies before it hands out the stream; if the file changes
	// afterwards, the stream itself must still refuse bad data.
	e := newEnv(t)
	s, _ := e.open()
	writeSnapshot(t, s, 1, 3*snapChunkSize)
	path := filepath.Join(e.opts.Dir, snapName(1))
	b := readFile(t, path)
	b[snapHeaderSize+2*(snapChunkHdr+snapChunkSize)+snapChunkHdr+7] ^= 1
	writeFile(t, path, b)
	sr, err := openSnapshot(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	got, err := io.ReadAll(sr)
	mustCorrupt(t, err, path, fmt.Sprintf("offset %d", snapHeaderSize+2*(snapChunkHdr+snapChunkSize)))
	if len(got) != 2*snapChunkSize {
		t.Fatalf("read %d bytes before the damaged chunk, want %d", len(got), 2*snapChunkSize)
	}
	if _, err := sr.Read(make([]byte, 1)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read after damage = %v, want the same ErrCorrupt again", err)
	}
}

func TestSnapshotRejectsNegativeZxid(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	if err := s.WriteSnapshot(-1, func(io.Writer) error { return nil }); err == nil {
		t.Fatal("WriteSnapshot(-1) succeeded")
	}
}
