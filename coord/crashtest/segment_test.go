package crashtest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// This file reads the server's log segments as documented in coord/wal, to
// find record boundaries worth damaging. It checks no checksums: it only
// needs to know where each complete record starts and ends.
//
//	segment: header[36] record*
//	header:  magic "SHEPLOG\x00", version u32, reserved u32, first i64, prev i64, crc u32
//	record:  length u32, zxid i64, crc u32, payload[length]
const (
	segmentHeaderSize = 36
	recordHeaderSize  = 16
	segmentPrefix     = "log."
)

var segmentMagic = []byte("SHEPLOG\x00")

// segment is one log segment file.
type segment struct {
	path    string
	first   int64 // from the file name
	size    int64
	records []recordSpan
}

// recordSpan is where one complete record lies in its segment.
type recordSpan struct {
	zxid     int64
	off, end int64
}

// dataEnd is the offset just past the last complete record, or past the
// header when there is none.
func (s segment) dataEnd() int64 {
	if len(s.records) == 0 {
		return min(s.size, segmentHeaderSize)
	}
	return s.records[len(s.records)-1].end
}

// lastZxid is the zxid of the last complete record, or 0.
func (s segment) lastZxid() int64 {
	if len(s.records) == 0 {
		return 0
	}
	return s.records[len(s.records)-1].zxid
}

// listSegments parses every log segment under dir, in zxid order.
func listSegments(dir string) ([]segment, error) {
	var segs []segment
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		first, ok := parseSegmentName(d.Name())
		if !ok {
			return nil
		}
		s, err := readSegment(path, first)
		if err != nil {
			return err
		}
		segs = append(segs, s)
		return nil
	})
	sort.Slice(segs, func(i, j int) bool { return segs[i].first < segs[j].first })
	return segs, err
}

// parseSegmentName accepts log.<16 hex digits> and returns the zxid.
func parseSegmentName(name string) (int64, bool) {
	hex, ok := strings.CutPrefix(name, segmentPrefix)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(hex, 16, 63)
	return int64(v), err == nil
}

// segmentName is the file name of a segment whose first zxid is first.
func segmentName(first int64) string { return fmt.Sprintf("%s%016x", segmentPrefix, uint64(first)) }

// readSegment finds the complete records of a segment, reading only their
// headers. Parsing stops at the first record that is cut short or whose
// zxid does not grow (the zero-filled preallocated tail, or a torn write):
// what follows is not a record.
func readSegment(path string, first int64) (segment, error) {
	f, err := os.Open(path)
	if err != nil {
		return segment{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return segment{}, err
	}
	s := segment{path: path, first: first, size: info.Size()}
	r := bufio.NewReader(f)
	head := make([]byte, segmentHeaderSize)
	if _, err := io.ReadFull(r, head); err != nil {
		return s, nil // a segment whose header a crash cut short
	}
	if !bytes.Equal(head[:len(segmentMagic)], segmentMagic) {
		return s, fmt.Errorf("%s: no log segment magic %q (has the format in coord/wal changed?)", path, segmentMagic)
	}
	prev := int64(0)
	for off := int64(segmentHeaderSize); off+recordHeaderSize <= s.size; {
		if _, err := io.ReadFull(r, head[:recordHeaderSize]); err != nil {
			return s, fmt.Errorf("%s: read record header at %d: %w", path, off, err)
		}
		length := int64(binary.BigEndian.Uint32(head))
		zxid := int64(binary.BigEndian.Uint64(head[4:]))
		end := off + recordHeaderSize + length
		if zxid <= prev || end > s.size {
			break
		}
		if len(s.records) == 0 && zxid != first {
			return s, fmt.Errorf("%s: first record has zxid %#x, the name says %#x (has the format in coord/wal changed?)", path, zxid, first)
		}
		if _, err := r.Discard(int(length)); err != nil {
			return s, fmt.Errorf("%s: skip record %#x at %d: %w", path, zxid, off, err)
		}
		s.records = append(s.records, recordSpan{zxid: zxid, off: off, end: end})
		prev, off = zxid, end
	}
	return s, nil
}
