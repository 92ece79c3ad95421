package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAppendSyncRecover(t *testing.T) {
	e := newEnv(t)
	s, rec := e.open()
	if rec.SnapshotZxid != 0 || rec.Snapshot != nil || len(rec.Records) != 0 {
		t.Fatalf("fresh directory recovered %+v, want nothing", rec)
	}
	appendRange(t, s, 1, 10)
	appendRange(t, s, 11, 25)
	if got := s.LastZxid(); got != 25 {
		t.Fatalf("LastZxid = %d, want 25", got)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	s, rec = e.open()
	checkRecords(t, rec.Records, zxidRange(1, 25))
	if got := s.LastZxid(); got != 25 {
		t.Fatalf("LastZxid after recovery = %d, want 25", got)
	}
	// A restart continues in a new segment named by its first zxid.
	appendRange(t, s, 26, 30)
	s.Close()
	if segs := e.segments(); len(segs) != 2 || filepath.Base(segs[1]) != "log.000000000000001a" {
		t.Fatalf("segments %v, want two, the second log.000000000000001a", segs)
	}
	_, rec = e.open()
	checkRecords(t, rec.Records, zxidRange(1, 30))
}

func TestCloseSyncsBufferedRecords(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	for z := int64(1); z <= 5; z++ {
		if err := s.Append(z, payload(z)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	_, rec := e.open()
	checkRecords(t, rec.Records, zxidRange(1, 5))
}

func TestAppendRejects(t *testing.T) {
	e := newEnv(t)
	s, err := Open(e.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(1, nil); !errors.Is(err, ErrNotRecovered) {
		t.Fatalf("Append before Recover: %v, want ErrNotRecovered", err)
	}
	if err := s.Roll(); !errors.Is(err, ErrNotRecovered) {
		t.Fatalf("Roll before Recover: %v, want ErrNotRecovered", err)
	}
	if _, err := s.Recover(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recover(); !errors.Is(err, ErrNotRecovered) {
		t.Fatalf("second Recover: %v, want ErrNotRecovered", err)
	}
	if err := s.Append(5, []byte("a")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		zxid int64
		size int
		want error
	}{
		{"zero zxid", 0, 1, ErrZxidOrder},
		{"same zxid", 5, 1, ErrZxidOrder},
		{"older zxid", 4, 1, ErrZxidOrder},
		{"too large", 6, MaxRecordBytes + 1, ErrTooLarge},
	}
	for _, tt := range tests {
		if err := s.Append(tt.zxid, make([]byte, tt.size)); !errors.Is(err, tt.want) {
			t.Errorf("%s: Append(%d, %d bytes) = %v, want %v", tt.name, tt.zxid, tt.size, err, tt.want)
		}
	}
	if err := s.Append(6, make([]byte, MaxRecordBytes)); err != nil {
		t.Fatalf("Append of exactly MaxRecordBytes: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"Append":        func() error { return s.Append(7, nil) },
		"Sync":          func() error { return s.Sync() },
		"Roll":          func() error { return s.Roll() },
		"Purge":         func() error { return s.Purge(3) },
		"WriteSnapshot": func() error { return s.WriteSnapshot(6, nil) },
	} {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

func TestOpenOptions(t *testing.T) {
	if _, err := Open(Options{}); err == nil || !strings.Contains(err.Error(), "Dir") {
		t.Fatalf("Open without Dir = %v, want an error naming Dir", err)
	}
	if _, err := Open(Options{Dir: t.TempDir(), SegmentBytes: -1}); err == nil || !strings.Contains(err.Error(), "SegmentBytes") {
		t.Fatalf("Open with negative SegmentBytes = %v, want an error naming SegmentBytes", err)
	}
	// Missing directories are created, nested.
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := Open(Options{Dir: dir, LogDir: filepath.Join(dir, "log")})
	if err != nil {
		t.Fatalf("Open creating directories: %v", err)
	}
	s.Close()
}

func TestLockExcludesSecondStore(t *testing.T) {
	e := newEnv(t)
	e.opts.LogDir = filepath.Join(t.TempDir(), "txlog")
	s, _ := e.open()

	for _, opts := range []Options{
		{Dir: e.opts.Dir},
		{Dir: t.TempDir(), LogDir: e.opts.LogDir},
	} {
		_, err := Open(opts)
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("second Open(%+v) = %v, want ErrLocked", opts, err)
		}
	}
	_, err := Open(Options{Dir: e.opts.Dir})
	if !strings.Contains(err.Error(), e.opts.Dir) {
		t.Fatalf("lock error %q does not name the directory %s", err, e.opts.Dir)
	}
	s.Close()
	s2, err := Open(e.opts)
	if err != nil {
		t.Fatalf("Open after the first store closed: %v", err)
	}
	s2.Close()
}

func TestSameDirUnderTwoNames(t *testing.T) {
	dir := t.TempDir()
	// LogDir spelled differently but the same directory must not deadlock
	// on its own lock.
	s, err := Open(Options{Dir: dir, LogDir: dir + "/."})
	if err != nil {
		t.Fatalf("Open with LogDir = Dir/.: %v", err)
	}
	s.Close()
}

func TestSeparateLogDir(t *testing.T) {
	e := newEnv(t)
	e.opts.LogDir = filepath.Join(t.TempDir(), "txlog")
	s, _ := e.open()
	appendRange(t, s, 1, 3)
	writeSnapshot(t, s, 3, 100)
	s.Close()
	if segs := e.segments(); len(segs) != 1 {
		t.Fatalf("segments in LogDir: %v, want one", segs)
	}
	if m, _ := filepath.Glob(filepath.Join(e.opts.Dir, logPrefix+"*")); len(m) != 0 {
		t.Fatalf("log segments in Dir: %v, want none", m)
	}
	if _, err := os.Stat(filepath.Join(e.opts.Dir, snapName(3))); err != nil {
		t.Fatalf("snapshot not in Dir: %v", err)
	}
	_, rec := e.open()
	checkSnapshot(t, rec, 3, 100)
	checkRecords(t, rec.Records, nil)
}

func TestSegmentRolling(t *testing.T) {
	e := newEnv(t)
	e.opts.SegmentBytes = 200
	s, _ := e.open()
	for z := int64(1); z <= 60; z += 3 {
		appendRange(t, s, z, z+2)
	}
	st := s.Stats()
	s.Close()
	segs := e.segments()
	if len(segs) < 5 {
		t.Fatalf("%d segments with SegmentBytes=200, want many", len(segs))
	}
	if st.Segments != int64(len(segs)) {
		t.Fatalf("Stats.Segments = %d, %d files on disk", st.Segments, len(segs))
	}
	for _, p := range segs[:len(segs)-1] {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		// A segment rolls once it has passed the limit: at most one record beyond it.
		if fi.Size() < 200 || fi.Size() > 200+recHeaderSize+int64(len(payload(6))) {
			t.Fatalf("%s has %d bytes, want just past 200", p, fi.Size())
		}
	}
	_, rec := e.open()
	checkRecords(t, rec.Records, zxidRange(1, 60))
}

func TestRollStartsSegmentAtNextAppend(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	appendRange(t, s, 1, 5)
	if err := s.Roll(); err != nil {
		t.Fatal(err)
	}
	if n := len(e.segments()); n != 1 {
		t.Fatalf("Roll created a file before the next Append: %d segments", n)
	}
	if err := s.Roll(); err != nil { // rolling twice still makes one segment
		t.Fatal(err)
	}
	appendRange(t, s, 6, 9)
	s.Close()
	segs := e.segments()
	if len(segs) != 2 || filepath.Base(segs[1]) != logName(6) {
		t.Fatalf("segments %v, want log.…1 and %s", segs, logName(6))
	}
	h, err := readSegHeader(segs[1])
	if err != nil || h.first != 6 || h.prev != 5 {
		t.Fatalf("second segment header %+v (%v), want first 6 prev 5", h, err)
	}
	_, rec := e.open()
	checkRecords(t, rec.Records, zxidRange(1, 9))
}

func TestStats(t *testing.T) {
	e := newEnv(t)
	e.opts.NoSync = true
	s, _ := e.open()
	appendRange(t, s, 1, 4)
	appendRange(t, s, 5, 5)
	if err := s.Sync(); err != nil { // nothing buffered: not counted
		t.Fatal(err)
	}
	writeSnapshot(t, s, 5, 10)
	st := s.Stats()
	wantBytes := int64(segHeaderSize)
	for z := int64(1); z <= 5; z++ {
		wantBytes += recHeaderSize + int64(len(payload(z)))
	}
	want := Stats{Appends: 5, Syncs: 2, Bytes: wantBytes, Segments: 1, Snapshots: 1, LastSnapshotZxid: 5}
	st.SyncNanos = 0
	if st != want {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
	if s.Stats().SyncNanos <= 0 {
		t.Fatalf("SyncNanos not counted")
	}
	s.Close()
	s, _ = e.open()
	if got := s.Stats(); got.LastSnapshotZxid != 5 || got.Segments != 1 || got.Appends != 0 {
		t.Fatalf("Stats after recovery = %+v, want LastSnapshotZxid 5, Segments 1, Appends 0", got)
	}
}

func TestFailedSyncIsSticky(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	appendRange(t, s, 1, 2)
	// Pull the file out from under the store, as a failing disk would.
	s.syncMu.Lock()
	s.file.Close()
	s.syncMu.Unlock()
	if err := s.Append(3, payload(3)); err != nil {
		t.Fatal(err)
	}
	err := s.Sync()
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("Sync on a broken file = %v, want ErrFailed", err)
	}
	for name, call := range map[string]func() error{
		"Append": func() error { return s.Append(4, nil) },
		"Sync":   func() error { return s.Sync() },
		"Roll":   func() error { return s.Roll() },
	} {
		if err := call(); !errors.Is(err, ErrFailed) {
			t.Errorf("%s after a failed Sync = %v, want ErrFailed", name, err)
		}
	}
	if !strings.Contains(e.logs.String(), "log write failed") {
		t.Errorf("no error logged for the failed write; logs:\n%s", e.logs)
	}
	s.Close()
	_, rec := e.open()
	checkRecords(t, rec.Records, zxidRange(1, 2))
}

func TestRecordPayloadsAreCopied(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	buf := []byte("first")
	if err := s.Append(1, buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXX") // the caller reuses its buffer before Sync
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, rec := e.open()
	if len(rec.Records) != 1 || string(rec.Records[0].Data) != "first" {
		t.Fatalf("recovered %q, want the payload as it was at Append", fmt.Sprint(rec.Records))
	}
}

// crashImage copies the data files of a store that is still open, as a
// crash would leave them, into a fresh environment.
func crashImage(t *testing.T, e *env) *env {
	t.Helper()
	img := newEnv(t)
	entries, err := os.ReadDir(e.opts.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range entries {
		if de.Name() != lockName {
			writeFile(t, filepath.Join(img.opts.Dir, de.Name()), readFile(t, filepath.Join(e.opts.Dir, de.Name())))
		}
	}
	return img
}

func TestPreallocation(t *testing.T) {
	e := newEnv(t)
	e.opts.SegmentBytes = 256 << 10
	s, _ := e.open()
	appendRange(t, s, 1, 10)
	seg := e.segments()[0]
	written := s.Stats().Bytes
	fi, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() <= written {
		t.Fatalf("segment is %d bytes with %d written: not preallocated (does this filesystem support fallocate?)", fi.Size(), written)
	}

	// A crash leaves the zeros; recovery trims them quietly.
	img := crashImage(t, e)
	s2, rec := img.open()
	checkRecords(t, rec.Records, zxidRange(1, 10))
	if logs := img.logs.String(); strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "preallocated space") {
		t.Fatalf("recovery of a preallocated tail should trim it at info level; logs:\n%s", logs)
	}
	s2.Close()
	if fi, _ := os.Stat(filepath.Join(img.opts.Dir, filepath.Base(seg))); fi.Size() != written {
		t.Fatalf("after recovery the segment is %d bytes, want the %d written", fi.Size(), written)
	}

	// Rolling trims the old segment before the new one exists, and Close
	// trims the newest, so only the newest segment of a crashed store ever
	// ends in zeros.
	if err := s.Roll(); err != nil {
		t.Fatal(err)
	}
	appendRange(t, s, 11, 12)
	if fi, _ := os.Stat(seg); fi.Size() != written {
		t.Fatalf("rolled-away segment is %d bytes, want %d", fi.Size(), written)
	}
	s.Close()
	for _, p := range e.segments() {
		data := readFile(t, p)
		if offs := recordOffsets(t, data); len(offs) == 0 {
			t.Fatalf("%s: no records", p)
		}
	}
}
