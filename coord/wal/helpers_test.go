package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// logBuffer captures slog output so tests can check warnings.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// env is one data directory reopened as often as a test likes.
type env struct {
	t    *testing.T
	opts Options
	logs *logBuffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	logs := &logBuffer{}
	return &env{
		t:    t,
		logs: logs,
		opts: Options{
			Dir:    t.TempDir(),
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		},
	}
}

// open opens and recovers the store, failing the test on error. The store
// is closed at the end of the test unless the test closes it first.
func (e *env) open() (*Store, *Recovery) {
	e.t.Helper()
	s, rec, err := e.tryOpen()
	if err != nil {
		e.t.Fatalf("open and recover %s: %v", e.opts.Dir, err)
	}
	return s, rec
}

// tryOpen opens and recovers the store and returns Recover's error; on
// error the store is already closed.
func (e *env) tryOpen() (*Store, *Recovery, error) {
	e.t.Helper()
	s, err := Open(e.opts)
	if err != nil {
		e.t.Fatalf("open %s: %v", e.opts.Dir, err)
	}
	rec, err := s.Recover()
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	e.t.Cleanup(func() {
		if rec.Snapshot != nil {
			rec.Snapshot.Close()
		}
		s.Close()
	})
	return s, rec, nil
}

// logDir is where the segments live.
func (e *env) logDir() string {
	if e.opts.LogDir != "" {
		return e.opts.LogDir
	}
	return e.opts.Dir
}

// segments returns the segment file paths, oldest first.
func (e *env) segments() []string {
	e.t.Helper()
	m, err := filepath.Glob(filepath.Join(e.logDir(), logPrefix+"*"))
	if err != nil {
		e.t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

// payload is the deterministic payload of a zxid in these tests.
func payload(zxid int64) []byte {
	return []byte(fmt.Sprintf("txn-%d-%s", zxid, strings.Repeat("x", int(zxid%7))))
}

// appendRange appends zxids from..to (inclusive) and syncs once.
func appendRange(t *testing.T, s *Store, from, to int64) {
	t.Helper()
	for z := from; z <= to; z++ {
		if err := s.Append(z, payload(z)); err != nil {
			t.Fatalf("append %d: %v", z, err)
		}
	}
	if err := s.Sync(); err != nil {
		t.Fatalf("sync after %d..%d: %v", from, to, err)
	}
}

// zxidRange returns from..to inclusive.
func zxidRange(from, to int64) []int64 {
	var z []int64
	for i := from; i <= to; i++ {
		z = append(z, i)
	}
	return z
}

// checkRecords fails unless recs are exactly the given zxids with the
// payloads appendRange wrote.
func checkRecords(t *testing.T, recs []Record, want []int64) {
	t.Helper()
	got := make([]int64, len(recs))
	for i, r := range recs {
		got[i] = r.Zxid
	}
	if !slices.Equal(got, want) {
		t.Fatalf("recovered zxids %v, want %v", got, want)
	}
	for _, r := range recs {
		if !bytes.Equal(r.Data, payload(r.Zxid)) {
			t.Fatalf("zxid %d: payload %q, want %q", r.Zxid, r.Data, payload(r.Zxid))
		}
	}
}

// snapshotBytes is the deterministic snapshot content of a zxid.
func snapshotBytes(zxid int64, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(int64(i)*31 + zxid)
	}
	return b
}

func writeSnapshot(t *testing.T, s *Store, zxid int64, size int) {
	t.Helper()
	want := snapshotBytes(zxid, size)
	if err := s.WriteSnapshot(zxid, func(w io.Writer) error {
		_, err := w.Write(want)
		return err
	}); err != nil {
		t.Fatalf("write snapshot %d: %v", zxid, err)
	}
}

// checkSnapshot fails unless rec holds the snapshot of zxid with the
// content writeSnapshot wrote.
func checkSnapshot(t *testing.T, rec *Recovery, zxid int64, size int) {
	t.Helper()
	if rec.SnapshotZxid != zxid {
		t.Fatalf("recovered snapshot zxid %d, want %d", rec.SnapshotZxid, zxid)
	}
	if zxid == 0 {
		if rec.Snapshot != nil {
			t.Fatalf("recovered a snapshot stream, want none")
		}
		return
	}
	got, err := io.ReadAll(rec.Snapshot)
	if err != nil {
		t.Fatalf("read recovered snapshot %d: %v", zxid, err)
	}
	if !bytes.Equal(got, snapshotBytes(zxid, size)) {
		t.Fatalf("snapshot %d: content differs (%d bytes, want %d)", zxid, len(got), size)
	}
}

// mustCorrupt fails unless err is ErrCorrupt and its message names all of
// the given fragments (typically the file and the offset).
func mustCorrupt(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got error %v, want ErrCorrupt", err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("error %q does not mention %q", err, f)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o640); err != nil {
		t.Fatal(err)
	}
}

// segmentBytes builds a segment file by hand, for damage the Store itself
// would never write.
func segmentBytes(first, prev int64, zxids ...int64) []byte {
	b := appendSegHeader(nil, segHeader{first: first, prev: prev})
	for _, z := range zxids {
		b = appendRecord(b, z, payload(z))
	}
	return b
}

// recordOffsets returns the offset of each record in a segment file.
func recordOffsets(t *testing.T, data []byte) []int64 {
	t.Helper()
	var offs []int64
	for off := int64(segHeaderSize); off < int64(len(data)); {
		_, n, why := parseRecordAt(data, off)
		if why != "" {
			t.Fatalf("record at %d: %s", off, why)
		}
		offs = append(offs, off)
		off += n
	}
	return offs
}

// quietLogger discards logs, for benchmarks and fuzzing.
var quietLogger = slog.New(slog.DiscardHandler)
