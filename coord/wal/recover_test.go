package wal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oneSegment writes zxids 1..n through the Store and returns the path and
// bytes of the single segment.
func oneSegment(t *testing.T, e *env, n int64) (string, []byte) {
	t.Helper()
	s, _ := e.open()
	appendRange(t, s, 1, n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	segs := e.segments()
	if len(segs) != 1 {
		t.Fatalf("want one segment, have %v", segs)
	}
	return segs[0], readFile(t, segs[0])
}

// checkTornTail reopens after damage that recovery must treat as a torn
// tail: it succeeds with want, warns naming the file and offset, truncates
// the file there, and a second recovery finds nothing more to repair. A
// tail of nothing but zeros is unused preallocated space: trimmed the same
// way, but logged at info level.
func checkTornTail(t *testing.T, e *env, path string, offset int64, want []int64) {
	t.Helper()
	zeros := allZero(readFile(t, path)[offset:])
	s, rec, err := e.tryOpen()
	if err != nil {
		t.Fatalf("recover after torn tail at %d: %v", offset, err)
	}
	checkRecords(t, rec.Records, want)
	level, msg := "level=WARN", "torn tail"
	if zeros {
		level, msg = "level=INFO", "preallocated space"
	}
	logs := e.logs.String()
	if !strings.Contains(logs, level) || !strings.Contains(logs, msg) ||
		!strings.Contains(logs, "file="+path) || !strings.Contains(logs, fmt.Sprintf("offset=%d", offset)) {
		t.Fatalf("no %s %q log naming %s at offset %d; logs:\n%s", level, msg, path, offset, logs)
	}
	s.Close()
	if fi, err := os.Stat(path); err != nil || fi.Size() != offset {
		t.Fatalf("after recovery %s: %v, size %v, want truncated to %d", path, err, fi.Size(), offset)
	}
	before := len(e.logs.String())
	s, rec = e.open()
	checkRecords(t, rec.Records, want)
	if again := e.logs.String()[before:]; strings.Contains(again, "torn") || strings.Contains(again, "trimming") {
		t.Fatalf("second recovery repaired again:\n%s", again)
	}
	// And the store keeps working after the repair.
	next := int64(1)
	if len(want) > 0 {
		next = want[len(want)-1] + 1
	}
	appendRange(t, s, next, next+1)
	s.Close()
	_, rec = e.open()
	checkRecords(t, rec.Records, append(want, next, next+1))
}

func TestTornTailCutAtEveryByte(t *testing.T) {
	e := newEnv(t)
	path, data := oneSegment(t, e, 4)
	offs := recordOffsets(t, data)
	last := offs[len(offs)-1]
	// Cutting exactly at the record boundary leaves a clean file; every cut
	// after it leaves part of the record.
	for cut := last + 1; cut < int64(len(data)); cut++ {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			e := newEnv(t)
			p := filepath.Join(e.opts.Dir, filepath.Base(path))
			writeFile(t, p, data[:cut])
			checkTornTail(t, e, p, last, zxidRange(1, 3))
		})
	}
}

func TestTornTailDamagedLastRecordAtEveryByte(t *testing.T) {
	e := newEnv(t)
	path, data := oneSegment(t, e, 4)
	offs := recordOffsets(t, data)
	last := offs[len(offs)-1]
	for i := last; i < int64(len(data)); i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e := newEnv(t)
			p := filepath.Join(e.opts.Dir, filepath.Base(path))
			bad := bytes.Clone(data)
			bad[i] ^= 0x41
			writeFile(t, p, bad)
			checkTornTail(t, e, p, last, zxidRange(1, 3))
		})
	}
}

func TestTornTailShapes(t *testing.T) {
	e := newEnv(t)
	path, data := oneSegment(t, e, 3)
	end := int64(len(data))
	tests := []struct {
		name string
		tail []byte // appended to the intact segment
	}{
		{"zero-filled tail, as preallocation leaves", make([]byte, 4096)},
		{"half a record header", []byte{0, 0, 0, 9, 0, 0}},
		{"garbage", []byte("this is not a record, just leftovers of a torn write")},
		{"record with a bad checksum", func() []byte {
			r := appendRecord(nil, 4, payload(4))
			r[recHeaderSize] ^= 1
			return r
		}()},
		{"impossible length", []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 4, 1, 2, 3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			p := filepath.Join(e.opts.Dir, filepath.Base(path))
			writeFile(t, p, append(bytes.Clone(data), tt.tail...))
			checkTornTail(t, e, p, end, zxidRange(1, 3))
		})
	}
}

func TestTornFirstRecordRemovesEmptySegment(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	appendRange(t, s, 1, 3)
	s.Close()
	// A restart appended zxid 4 into a new segment, and crashed mid-write.
	p := filepath.Join(e.opts.Dir, logName(4))
	full := segmentBytes(4, 3, 4)
	writeFile(t, p, full[:len(full)-2])
	s, rec := e.open()
	checkRecords(t, rec.Records, zxidRange(1, 3))
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("segment without a complete record still exists: %v", err)
	}
	// The same zxid can be appended again into a segment of the same name.
	appendRange(t, s, 4, 5)
	s.Close()
	_, rec = e.open()
	checkRecords(t, rec.Records, zxidRange(1, 5))
}

func TestTornSegmentHeader(t *testing.T) {
	hdr := segmentBytes(4, 3)
	for _, content := range [][]byte{nil, hdr[:10], hdr[:segHeaderSize-1], make([]byte, 200)} {
		t.Run(fmt.Sprintf("%d bytes", len(content)), func(t *testing.T) {
			e := newEnv(t)
			s, _ := e.open()
			appendRange(t, s, 1, 3)
			s.Close()
			p := filepath.Join(e.opts.Dir, logName(4))
			writeFile(t, p, content)
			_, rec := e.open()
			checkRecords(t, rec.Records, zxidRange(1, 3))
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Fatalf("half-created segment still exists: %v", err)
			}
			if !strings.Contains(e.logs.String(), "file="+p) {
				t.Fatalf("no log naming %s:\n%s", p, e.logs)
			}
		})
	}
}

// checkCorrupt reopens after damage recovery must refuse: ErrCorrupt naming
// the file and offset, and no file changed.
func checkCorrupt(t *testing.T, e *env, path string, offset int64) {
	t.Helper()
	before := snapshotDir(t, e)
	_, _, err := e.tryOpen()
	mustCorrupt(t, err, path, fmt.Sprintf("offset %d", offset), "backup")
	if after := snapshotDir(t, e); after != before {
		t.Fatalf("recovery changed files while refusing:\nbefore %s\nafter  %s", before, after)
	}
}

// snapshotDir describes every file in the test's directories with a digest
// of its content.
func snapshotDir(t *testing.T, e *env) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range []string{e.opts.Dir, e.logDir()} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range entries {
			if de.Name() == lockName {
				continue
			}
			fmt.Fprintf(&b, "%s:%x ", de.Name(), readFile(t, filepath.Join(dir, de.Name())))
		}
	}
	return b.String()
}

func TestCorruptMiddleRecordAtEveryByte(t *testing.T) {
	e := newEnv(t)
	path, data := oneSegment(t, e, 5)
	offs := recordOffsets(t, data)
	for i := offs[2]; i < offs[3]; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e := newEnv(t)
			p := filepath.Join(e.opts.Dir, filepath.Base(path))
			bad := bytes.Clone(data)
			bad[i] ^= 0x41
			writeFile(t, p, bad)
			checkCorrupt(t, e, p, offs[2])
		})
	}
}

func TestCorruptSegmentHeaderAtEveryByte(t *testing.T) {
	e := newEnv(t)
	path, data := oneSegment(t, e, 2)
	for i := 0; i < segHeaderSize; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e := newEnv(t)
			p := filepath.Join(e.opts.Dir, filepath.Base(path))
			bad := bytes.Clone(data)
			bad[i] ^= 0x41
			writeFile(t, p, bad)
			checkCorrupt(t, e, p, 0)
		})
	}
}

// twoSegments writes zxids 1..5 and 6..10 in two segments.
func twoSegments(t *testing.T, e *env) []string {
	t.Helper()
	s, _ := e.open()
	appendRange(t, s, 1, 5)
	if err := s.Roll(); err != nil {
		t.Fatal(err)
	}
	appendRange(t, s, 6, 10)
	s.Close()
	segs := e.segments()
	if len(segs) != 2 {
		t.Fatalf("want two segments, have %v", segs)
	}
	return segs
}

func TestCorruptOlderSegment(t *testing.T) {
	tests := []struct {
		name   string
		damage func(data []byte) ([]byte, int64) // returns the damaged file and the offset to report
	}{
		{"torn-looking tail", func(d []byte) ([]byte, int64) {
			return d[:len(d)-3], recordOffsetsNoT(d)[4]
		}},
		{"bad checksum in its last record", func(d []byte) ([]byte, int64) {
			off := recordOffsetsNoT(d)[4]
			d = bytes.Clone(d)
			d[len(d)-1] ^= 1
			return d, off
		}},
		{"trailing zeros", func(d []byte) ([]byte, int64) {
			return append(bytes.Clone(d), make([]byte, 64)...), int64(len(d))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			segs := twoSegments(t, e)
			bad, off := tt.damage(readFile(t, segs[0]))
			writeFile(t, segs[0], bad)
			checkCorrupt(t, e, segs[0], off)
		})
	}
}

// recordOffsetsNoT is recordOffsets for intact data, without a *testing.T.
func recordOffsetsNoT(data []byte) []int64 {
	var offs []int64
	for off := int64(segHeaderSize); off < int64(len(data)); {
		_, n, why := parseRecordAt(data, off)
		if why != "" {
			break
		}
		offs = append(offs, off)
		off += n
	}
	return offs
}

func TestCorruptGapBetweenSegments(t *testing.T) {
	e := newEnv(t)
	s, _ := e.open()
	for z := int64(1); z <= 9; z += 3 {
		appendRange(t, s, z, z+2)
		if err := s.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	segs := e.segments()
	if len(segs) != 3 {
		t.Fatalf("want three segments, have %v", segs)
	}
	if err := os.Remove(segs[1]); err != nil {
		t.Fatal(err)
	}
	checkCorrupt(t, e, segs[2], 0)
	_, _, err := e.tryOpen()
	mustCorrupt(t, err, "gap")
}

func TestCorruptZxidOrder(t *testing.T) {
	tests := []struct {
		name  string
		files map[int64][]byte // first zxid -> segment content
		bad   int64            // segment to name in the error
		off   int64
	}{
		{
			name: "next segment overlaps the previous one",
			files: map[int64][]byte{
				1: segmentBytes(1, 0, 1, 2, 3, 4, 5),
				3: segmentBytes(3, 2, 3, 6),
			},
			bad: 3,
		},
		{
			name: "next segment claims to follow a zxid before the previous one's last",
			files: map[int64][]byte{
				1: segmentBytes(1, 0, 1, 2, 3),
				6: segmentBytes(6, 2, 6, 7),
			},
			bad: 6,
		},
		{
			name:  "zxid repeats inside the newest segment, even at its end",
			files: map[int64][]byte{1: segmentBytes(1, 0, 1, 2, 3, 3)},
			bad:   1,
			off:   int64(len(segmentBytes(1, 0, 1, 2, 3))),
		},
		{
			name:  "zxid goes back inside a segment",
			files: map[int64][]byte{1: segmentBytes(1, 0, 1, 5, 4, 6)},
			bad:   1,
			off:   int64(len(segmentBytes(1, 0, 1, 5))),
		},
		{
			name:  "first record does not match the file name",
			files: map[int64][]byte{1: segmentBytes(1, 0, 2, 3)},
			bad:   1,
			off:   segHeaderSize,
		},
		{
			name:  "header does not match the file name",
			files: map[int64][]byte{1: segmentBytes(2, 0, 2, 3)},
			bad:   1,
		},
		{
			name:  "log does not start at the beginning and there is no snapshot",
			files: map[int64][]byte{5: segmentBytes(5, 4, 5, 6)},
			bad:   5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			for first, content := range tt.files {
				writeFile(t, filepath.Join(e.opts.Dir, logName(first)), content)
			}
			checkCorrupt(t, e, filepath.Join(e.opts.Dir, logName(tt.bad)), tt.off)
		})
	}
}

func TestIgnoresUnrelatedAndOldFiles(t *testing.T) {
	e := newEnv(t)
	segs := twoSegments(t, e)
	s, _ := e.open()
	writeSnapshot(t, s, 10, 50)
	s.Close()
	// An operator moved a damaged copy aside, and the oldest segment, which
	// recovery from snapshot 10 does not need, rotted.
	writeFile(t, segs[1]+".bad", []byte("garbage"))
	writeFile(t, filepath.Join(e.opts.Dir, "README"), []byte("notes"))
	writeFile(t, segs[0], []byte("rotten"))
	_, rec := e.open()
	checkSnapshot(t, rec, 10, 50)
	checkRecords(t, rec.Records, nil)
}

func TestResyncSearchIsBounded(t *testing.T) {
	// Crafted garbage after a damaged record: a plausible 1 MiB record
	// header every 16 bytes would make an unbounded search for valid data
	// checksum terabytes. Recovery must give up quickly and refuse.
	e := newEnv(t)
	p := filepath.Join(e.opts.Dir, logName(1))
	data := segmentBytes(1, 0, 1, 2, 3)
	bad := int64(len(data))
	for len(data) < 3<<20 {
		data = append(data, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 2, 3, 4)
	}
	writeFile(t, p, data)
	_, _, err := e.tryOpen()
	mustCorrupt(t, err, p, fmt.Sprintf("offset %d", bad), "gave up")
}
