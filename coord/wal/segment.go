package wal

import (
	"encoding/binary"
	"fmt"
)

// segmentScan is what scanSegment found in one log segment.
type segmentScan struct {
	hdr     segHeader
	records []Record
	// end is the offset just past the last valid record.
	end int64
	// torn is set when bytes after end were judged a torn tail: a write the
	// crash interrupted. It says why the first of them is not a record.
	torn string
	// zeroTail is set when everything after end is zeros: preallocated
	// space never written (or a write that left nothing but zeros).
	zeroTail bool
}

// resyncWindow bounds how far past the last good zxid a record found while
// looking for valid data after a damaged one may be. Within one segment
// zxids only grow by the transaction counter, so real records sit far inside
// the window, while random bytes almost never land in it; this keeps the
// search linear on garbage instead of checksumming megabytes per offset.
const resyncWindow = int64(1) << 40

// scanSegment parses a whole segment file. path is used in errors only.
//
// A record that does not parse ends the scan. If last is set (the newest
// segment, the only one a crash can leave half-written or with unused
// preallocated space), the rest is all zeros (zeroTail) or no valid record
// follows the damage (torn): the scan succeeds with the records before it.
// Anything else is ErrCorrupt.
func scanSegment(path string, data []byte, first int64, last bool) (segmentScan, error) {
	var sc segmentScan
	hdr, err := parseSegHeader(data)
	if err != nil {
		return sc, corruptf(path, 0, "%v", err)
	}
	if hdr.first != first {
		return sc, corruptf(path, 0, "header says the first zxid is %#x but the file name says %#x", hdr.first, first)
	}
	if hdr.first <= 0 || hdr.prev < 0 || hdr.prev >= hdr.first {
		return sc, corruptf(path, 0, "header zxids out of range: first %#x, follows %#x", hdr.first, hdr.prev)
	}
	sc.hdr = hdr
	prev := hdr.prev
	off := int64(segHeaderSize)
	size := int64(len(data))
	for off < size {
		zxid, n, why := parseRecordAt(data, off)
		if why == "" && zxid <= prev {
			// A record with a valid checksum is not a torn write.
			return sc, corruptf(path, off, "zxid %#x does not exceed the previous zxid %#x", zxid, prev)
		}
		if why == "" && len(sc.records) == 0 && zxid != first {
			return sc, corruptf(path, off, "first record has zxid %#x but the segment is named for %#x", zxid, first)
		}
		if why != "" {
			if !last {
				return sc, corruptf(path, off, "%s, in a segment that is not the newest", why)
			}
			if allZero(data[off:]) {
				sc.end, sc.zeroTail = off, true
				return sc, nil
			}
			switch at, z, found := findValidRecord(data, off+1, prev); {
			case found:
				return sc, corruptf(path, off, "%s, yet a valid record (zxid %#x) follows at offset %d", why, z, at)
			case at >= 0:
				return sc, corruptf(path, off, "%s, and the search for valid records after it gave up at offset %d; "+
					"inspect the file to decide whether it is a torn tail", why, at)
			}
			sc.end, sc.torn = off, why
			return sc, nil
		}
		sc.records = append(sc.records, Record{Zxid: zxid, Data: data[off+recHeaderSize : off+n : off+n]})
		prev = zxid
		off += n
	}
	sc.end = off
	return sc, nil
}

// parseRecordAt decodes the record at off, returning its zxid and total
// length, or a description of why the bytes there are not a valid record.
// It never checks zxid order; the caller knows the previous zxid.
func parseRecordAt(data []byte, off int64) (zxid, n int64, why string) {
	rest := int64(len(data)) - off
	if rest < recHeaderSize {
		return 0, 0, fmt.Sprintf("record header cut short (%d of %d bytes)", rest, recHeaderSize)
	}
	h := data[off:]
	length := int64(binary.BigEndian.Uint32(h[0:4]))
	zxid = int64(binary.BigEndian.Uint64(h[4:12]))
	sum := binary.BigEndian.Uint32(h[12:16])
	if length > MaxRecordBytes {
		return 0, 0, fmt.Sprintf("record length %d exceeds the limit %d", length, MaxRecordBytes)
	}
	if length > rest-recHeaderSize {
		return 0, 0, fmt.Sprintf("record cut short (%d of %d payload bytes)", rest-recHeaderSize, length)
	}
	if recordCRC(h[4:12], h[recHeaderSize:recHeaderSize+length]) != sum {
		return 0, 0, "record checksum mismatch"
	}
	return zxid, recHeaderSize + length, ""
}

// resyncBudget bounds the bytes findValidRecord checksums. Real torn tails
// need a tiny fraction of it; only deliberately crafted garbage (a plausible
// header every few bytes) could make the search quadratic.
const resyncBudget = 1 << 30

// findValidRecord looks for a valid record starting at any offset from
// `from` on, with a zxid above prev (and within resyncWindow of it). Finding
// one means the damage before it is not a torn tail but lost data. If the
// search exceeds resyncBudget it stops, reporting the offset it reached
// with found false; if it finds nothing, at is -1.
func findValidRecord(data []byte, from, prev int64) (at, zxid int64, found bool) {
	budget := int64(resyncBudget)
	for off := from; off+recHeaderSize <= int64(len(data)); off++ {
		h := data[off:]
		z := int64(binary.BigEndian.Uint64(h[4:12]))
		if z <= prev || z-prev > resyncWindow {
			continue
		}
		length := int64(binary.BigEndian.Uint32(h[0:4]))
		if length > MaxRecordBytes || length > int64(len(h))-recHeaderSize {
			continue
		}
		if budget -= length; budget < 0 {
			return off, 0, false
		}
		if zxid, _, why := parseRecordAt(data, off); why == "" {
			return off, zxid, true
		}
	}
	return -1, 0, false
}
