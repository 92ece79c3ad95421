// Package wal is the durable store of the coordination server: a
// write-ahead transaction log and snapshot files.
//
// It knows nothing about the data tree or the ZooKeeper protocol: records
// and snapshots are opaque bytes tagged with zxids. The server appends each
// transaction, calls Sync once per batch (group commit: one write and one
// fdatasync for many client writes) and acknowledges the batch only after
// Sync returns. Every so often it calls Roll and then WriteSnapshot from a
// background goroutine while appends continue, and Purge to drop files no
// longer needed. On start it calls Recover and rebuilds its state from the
// newest valid snapshot plus the log records after it.
//
// # Durability contract
//
// A record is durable once Sync returns nil after its Append: it survives
// kill -9 and power loss (given a disk that honours flushes). Records not yet
// synced may be lost, but only as a suffix: recovery never returns a record
// without every record before it. A snapshot is durable once WriteSnapshot
// returns nil; until then a crash leaves no trace of it but a temporary file
// that the next Recover deletes. After any failed write or fsync the Store
// refuses further work (ErrFailed): the kernel may have dropped the dirty
// pages, so a retry could report success for data that is gone.
//
// # Files
//
// Dir holds snapshot.<zxid> files and, unless LogDir is set, the log
// segments log.<zxid>; zxids in names are 16 hex digits, so a listing sorts
// in zxid order. Dir (and LogDir) also hold LOCK: Open takes an exclusive
// flock on it, so two servers cannot use one directory; it contains the
// holder's pid as a hint. Files with other names, such as a segment renamed
// to log.<zxid>.bad, are ignored. All integers are big-endian; checksums are
// CRC32C (Castagnoli); FormatVersion is 1.
//
// A log segment is named for the zxid of its first record:
//
//	header (36 bytes): "SHEPLOG\x00" version:u32 reserved:u32 first:i64 prev:i64 crc:u32
//	record (16+n):     length:u32 zxid:i64 crc:u32 payload[length]
//
// The header crc covers the 32 bytes before it; a record's crc covers its
// zxid and payload. prev is the last zxid the store held when the segment
// was started (a logged zxid, or a snapshot's). Zxids strictly increase
// through the log, and each segment's prev must be at least the previous
// segment's last zxid and at most what the snapshot and earlier segments
// cover; otherwise a segment is missing. A segment grows until it passes
// Options.SegmentBytes or Roll is called. Its space is preallocated with
// fallocate in steps of SegmentBytes (64 KiB to 64 MiB), so that appends
// overwrite blocks the file already has; the unused zeros are trimmed when
// the log rolls to the next segment and on Close, so only the newest
// segment of a crashed server ends in zeros, which recovery trims quietly.
//
// A snapshot file holds the stream written by WriteSnapshot's callback, cut
// into checksummed chunks:
//
//	header (28 bytes): "SHEPSNAP" version:u32 reserved:u32 zxid:i64 crc:u32
//	chunk:             length:u32 (1..1 MiB) crc:u32 data[length]
//	end (16 bytes):    0:u32 crc:u32 total:u64
//
// A chunk's crc covers its sequence number and data; the end marker's crc
// covers the chunk count and the total size, and nothing may follow it.
// Snapshots are written to snapshot.<zxid>.<random>.tmp, fsynced, renamed
// into place and the directory fsynced.
//
// # Recovery
//
// Recover picks the newest snapshot whose checksums all hold (reading it
// once to check, and streaming it again to the caller); a damaged one is
// skipped with a warning. It then reads the log from the newest segment
// whose prev is at or before the snapshot's zxid; older segments are not
// opened. A record cut short, or failing its checksum, at the end of the
// newest segment is what a crash in the middle of a write leaves: it is cut
// off with a warning naming the file and offset. Damage anywhere else is
// ErrCorrupt, naming the file and offset, and Recover changes nothing on
// disk: a bad record followed by a valid one, a bad record in an older
// segment, a gap or non-increasing zxids between segments, or a log that
// does not reach back to the newest valid snapshot.
//
// # Backups
//
// Stop the server and copy the whole directory; or, with it running, copy
// the newest snapshot.<zxid> first and then the log segments after it: every
// log.<zxid> whose name is above the snapshot's zxid plus the newest one not
// above it (copying older segments too is harmless). Only the newest segment
// changes; if a newer one appears while you copy, copy the segments again
// (running rsync twice does this), because a copy of a segment that is not
// the newest must be complete. A torn record at the end of the copied newest
// segment is cut off by recovery. To restore, put the files in an empty
// directory and start the server on it.
//
// # Locks
//
// Lock order: purgeMu, then mu; syncMu, then mu. syncMu is held across log
// writes and fdatasync but mu only briefly, so Append never waits for a
// disk flush. WriteSnapshot takes no lock during its I/O.
package wal
