package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// File names. Zxids in names are 16 lowercase hex digits so that a plain
// directory listing sorts them in zxid order.
const (
	logPrefix  = "log."
	snapPrefix = "snapshot."
	tmpSuffix  = ".tmp"
	lockName   = "LOCK"
)

// FormatVersion is the version written in every log segment and snapshot
// header. Readers refuse versions they do not know.
const FormatVersion = 1

// MaxRecordBytes bounds one log record's payload. ZooKeeper's default
// jute.maxbuffer is 1 MiB, so this leaves ample room while letting recovery
// reject absurd length prefixes without allocating them.
const MaxRecordBytes = 16 << 20

var (
	logMagic   = [8]byte{'S', 'H', 'E', 'P', 'L', 'O', 'G', 0}
	snapMagic  = [8]byte{'S', 'H', 'E', 'P', 'S', 'N', 'A', 'P'}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// Log segment layout, all integers big-endian:
//
//	header: magic[8] version u32 reserved u32 first i64 prev i64 crc u32
//	record: length u32 zxid i64 crc u32 payload[length]
//
// The header crc covers the 32 bytes before it; a record crc covers its
// zxid and payload. first is the zxid of the segment's first record (and
// its file name); prev is the last zxid the store held when the segment was
// started, so a missing segment shows up as a hole between one segment's
// last record and the next one's prev.
const (
	segHeaderSize = 36
	recHeaderSize = 16
)

type segHeader struct {
	first int64
	prev  int64
}

func appendSegHeader(b []byte, h segHeader) []byte {
	start := len(b)
	b = append(b, logMagic[:]...)
	b = binary.BigEndian.AppendUint32(b, FormatVersion)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(h.first))
	b = binary.BigEndian.AppendUint64(b, uint64(h.prev))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// parseSegHeader decodes a segment header, or says why it is not one.
func parseSegHeader(b []byte) (segHeader, error) {
	if len(b) < segHeaderSize {
		return segHeader{}, fmt.Errorf("header cut short at %d of %d bytes", len(b), segHeaderSize)
	}
	if [8]byte(b[:8]) != logMagic {
		return segHeader{}, fmt.Errorf("not a log segment (bad magic %q)", b[:8])
	}
	if crc32.Checksum(b[:32], castagnoli) != binary.BigEndian.Uint32(b[32:36]) {
		return segHeader{}, fmt.Errorf("header checksum mismatch")
	}
	if v := binary.BigEndian.Uint32(b[8:12]); v != FormatVersion {
		return segHeader{}, fmt.Errorf("unsupported format version %d (this build reads %d)", v, FormatVersion)
	}
	return segHeader{
		first: int64(binary.BigEndian.Uint64(b[16:24])),
		prev:  int64(binary.BigEndian.Uint64(b[24:32])),
	}, nil
}

// recordCRC is the checksum stored in a record: CRC32C over the record's
// 8-byte big-endian zxid field followed by the payload. It takes the zxid
// as encoded bytes so that neither writing nor reading allocates.
func recordCRC(zxidField, data []byte) uint32 {
	return crc32.Update(crc32.Checksum(zxidField, castagnoli), castagnoli, data)
}

func appendRecord(b []byte, zxid int64, data []byte) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = binary.BigEndian.AppendUint64(b, uint64(zxid))
	b = binary.BigEndian.AppendUint32(b, recordCRC(b[start+4:start+12], data))
	return append(b, data...)
}

func logName(first int64) string           { return fmt.Sprintf("%s%016x", logPrefix, uint64(first)) }
func snapName(zxid int64) string           { return fmt.Sprintf("%s%016x", snapPrefix, uint64(zxid)) }
func parseLogName(n string) (int64, bool)  { return parseZxidName(n, logPrefix) }
func parseSnapName(n string) (int64, bool) { return parseZxidName(n, snapPrefix) }

// parseZxidName accepts exactly prefix + 16 hex digits of a non-negative
// zxid, so renamed-aside files ("log.0000000000000001.bad") are ignored.
func parseZxidName(n, prefix string) (int64, bool) {
	hex, ok := strings.CutPrefix(n, prefix)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(hex, 16, 64)
	if err != nil || int64(v) < 0 {
		return 0, false
	}
	return int64(v), true
}
