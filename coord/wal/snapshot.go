package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Snapshot layout, all integers big-endian:
//
//	header: magic[8] version u32 reserved u32 zxid i64 crc u32
//	chunk:  length u32 (1..maxSnapChunk) crc u32 data[length]
//	end:    0 u32 crc u32 total u64, then end of file
//
// A chunk's crc covers its sequence number (u64, from 0) and data, so a
// lost, repeated or reordered chunk is caught, not just a flipped bit. The
// end marker's crc covers the chunk count and the total payload size, and
// nothing may follow it: a snapshot without its end marker was cut short.
const (
	snapHeaderSize = 28
	snapChunkHdr   = 8
	snapEndSize    = 16
	snapChunkSize  = 64 << 10 // what the writer emits
	maxSnapChunk   = 1 << 20  // what the reader accepts
)

func appendSnapHeader(b []byte, zxid int64) []byte {
	start := len(b)
	b = append(b, snapMagic[:]...)
	b = binary.BigEndian.AppendUint32(b, FormatVersion)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(zxid))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// seqCRC is the checksum of a chunk or end marker: CRC32C over the big-endian
// sequence number followed by body.
func seqCRC(seq uint64, body []byte) uint32 {
	var q [8]byte
	binary.BigEndian.PutUint64(q[:], seq)
	return crc32.Update(crc32.Checksum(q[:], castagnoli), castagnoli, body)
}

// snapshotWriter frames the caller's stream into checksummed chunks, one
// write(2) per chunk.
type snapshotWriter struct {
	w     io.Writer
	buf   []byte // chunk header space followed by up to snapChunkSize bytes
	seq   uint64
	total uint64
	err   error
}

func newSnapshotWriter(w io.Writer, zxid int64) (*snapshotWriter, error) {
	if _, err := w.Write(appendSnapHeader(nil, zxid)); err != nil {
		return nil, err
	}
	return &snapshotWriter{w: w, buf: make([]byte, snapChunkHdr, snapChunkHdr+snapChunkSize)}, nil
}

// Write implements io.Writer.
func (sw *snapshotWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 && sw.err == nil {
		k := min(cap(sw.buf)-len(sw.buf), len(p))
		sw.buf = append(sw.buf, p[:k]...)
		p, n = p[k:], n+k
		if len(sw.buf) == cap(sw.buf) {
			sw.flushChunk()
		}
	}
	return n, sw.err
}

func (sw *snapshotWriter) flushChunk() {
	data := sw.buf[snapChunkHdr:]
	if len(data) == 0 || sw.err != nil {
		return
	}
	binary.BigEndian.PutUint32(sw.buf[0:4], uint32(len(data)))
	binary.BigEndian.PutUint32(sw.buf[4:8], seqCRC(sw.seq, data))
	_, sw.err = sw.w.Write(sw.buf)
	sw.seq++
	sw.total += uint64(len(data))
	sw.buf = sw.buf[:snapChunkHdr]
}

// finish writes the last chunk and the end marker.
func (sw *snapshotWriter) finish() error {
	sw.flushChunk()
	if sw.err != nil {
		return sw.err
	}
	var tot [8]byte
	binary.BigEndian.PutUint64(tot[:], sw.total)
	end := make([]byte, 0, snapEndSize)
	end = binary.BigEndian.AppendUint32(end, 0)
	end = binary.BigEndian.AppendUint32(end, seqCRC(sw.seq, tot[:]))
	end = append(end, tot[:]...)
	_, sw.err = sw.w.Write(end)
	return sw.err
}

// WriteSnapshot stores a snapshot of the state at zxid, produced by write.
// The stream goes to a temporary file in Dir which is fsynced and then
// renamed into place, and the directory fsynced, so a crash at any point
// leaves either no snapshot or a complete one. It is safe to call while
// another goroutine keeps appending and syncing. An error from write aborts
// the snapshot and is returned wrapped.
func (s *Store) WriteSnapshot(zxid int64, write func(io.Writer) error) error {
	if zxid < 0 {
		return fmt.Errorf("wal: write snapshot: negative zxid %d", zxid)
	}
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.ops.Add(1)
	s.mu.Unlock()
	defer s.ops.Done()

	if err := s.writeSnapshotFile(zxid, write); err != nil {
		return fmt.Errorf("wal: write snapshot %#x: %w", zxid, err)
	}
	s.mu.Lock()
	s.stats.Snapshots++
	s.stats.LastSnapshotZxid = max(s.stats.LastSnapshotZxid, zxid)
	delete(s.badSnaps, zxid) // a damaged file of that name was just replaced
	s.mu.Unlock()
	return nil
}

func (s *Store) writeSnapshotFile(zxid int64, write func(io.Writer) error) (err error) {
	final := filepath.Join(s.opts.Dir, snapName(zxid))
	f, err := os.CreateTemp(s.opts.Dir, snapName(zxid)+".*"+tmpSuffix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	done := false
	defer func() {
		// Also runs if write panics: no half-written file is left behind
		// (Recover removes any a crash leaves).
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	sw, err := newSnapshotWriter(f, zxid)
	if err != nil {
		return err
	}
	if err := write(sw); err != nil {
		return err
	}
	if err := sw.finish(); err != nil {
		return err
	}
	if !s.opts.NoSync {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	done = true
	if !s.opts.NoSync {
		return syncDir(s.opts.Dir)
	}
	return nil
}

// snapshotReader streams a snapshot's payload, verifying every chunk and the
// end marker. Damage is reported as ErrCorrupt naming file and offset.
type snapshotReader struct {
	f     *os.File
	r     *bufio.Reader
	path  string
	off   int64 // file offset of the next byte r returns
	seq   uint64
	total uint64
	chunk []byte
	pos   int
	done  bool
	err   error
}

// openSnapshot opens the snapshot at path and checks its header against the
// zxid its name promises.
func openSnapshot(path string, zxid int64) (*snapshotReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	sr := &snapshotReader{f: f, r: bufio.NewReaderSize(f, 64<<10), path: path}
	var h [snapHeaderSize]byte
	if err := sr.readFull(h[:]); err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case [8]byte(h[:8]) != snapMagic:
		err = sr.corrupt(0, "not a snapshot (bad magic %q)", h[:8])
	case crc32.Checksum(h[:24], castagnoli) != binary.BigEndian.Uint32(h[24:28]):
		err = sr.corrupt(0, "header checksum mismatch")
	case binary.BigEndian.Uint32(h[8:12]) != FormatVersion:
		err = sr.corrupt(0, "unsupported format version %d (this build reads %d)", binary.BigEndian.Uint32(h[8:12]), FormatVersion)
	case int64(binary.BigEndian.Uint64(h[16:24])) != zxid:
		err = sr.corrupt(0, "header says zxid %#x but the file name says %#x", int64(binary.BigEndian.Uint64(h[16:24])), zxid)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return sr, nil
}

func (sr *snapshotReader) corrupt(off int64, format string, args ...any) error {
	return fmt.Errorf("%w: snapshot %s at offset %d: %s", ErrCorrupt, sr.path, off, fmt.Sprintf(format, args...))
}

// readFull reads exactly len(b) bytes; running out of file is corruption.
func (sr *snapshotReader) readFull(b []byte) error {
	n, err := io.ReadFull(sr.r, b)
	sr.off += int64(n)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return sr.corrupt(sr.off, "file cut short (no end marker)")
	}
	if err != nil {
		return fmt.Errorf("wal: read snapshot %s: %w", sr.path, err)
	}
	return nil
}

// Read implements io.Reader.
func (sr *snapshotReader) Read(p []byte) (int, error) {
	for sr.pos == len(sr.chunk) {
		if sr.err != nil {
			return 0, sr.err
		}
		if sr.done {
			return 0, io.EOF
		}
		sr.err = sr.nextChunk()
	}
	n := copy(p, sr.chunk[sr.pos:])
	sr.pos += n
	return n, nil
}

func (sr *snapshotReader) nextChunk() error {
	at := sr.off
	var h [snapChunkHdr]byte
	if err := sr.readFull(h[:]); err != nil {
		return err
	}
	length := binary.BigEndian.Uint32(h[0:4])
	sum := binary.BigEndian.Uint32(h[4:8])
	if length == 0 {
		var tot [8]byte
		if err := sr.readFull(tot[:]); err != nil {
			return err
		}
		if seqCRC(sr.seq, tot[:]) != sum || binary.BigEndian.Uint64(tot[:]) != sr.total {
			return sr.corrupt(at, "end marker checksum mismatch")
		}
		if _, err := sr.r.ReadByte(); err != io.EOF {
			if err != nil {
				return fmt.Errorf("wal: read snapshot %s: %w", sr.path, err)
			}
			return sr.corrupt(sr.off, "data after the end marker")
		}
		sr.done = true
		sr.chunk, sr.pos = nil, 0
		return nil
	}
	if length > maxSnapChunk {
		return sr.corrupt(at, "chunk length %d exceeds the limit %d", length, maxSnapChunk)
	}
	if cap(sr.chunk) < int(length) {
		sr.chunk = make([]byte, length)
	}
	sr.chunk, sr.pos = sr.chunk[:length], 0
	if err := sr.readFull(sr.chunk); err != nil {
		sr.chunk = sr.chunk[:0]
		return err
	}
	if seqCRC(sr.seq, sr.chunk) != sum {
		sr.chunk = sr.chunk[:0]
		return sr.corrupt(at, "chunk %d checksum mismatch", sr.seq)
	}
	sr.seq++
	sr.total += uint64(length)
	return nil
}

// Close implements io.Closer.
func (sr *snapshotReader) Close() error { return sr.f.Close() }

// verifySnapshot reads a whole snapshot to check every checksum.
func verifySnapshot(path string, zxid int64) error {
	sr, err := openSnapshot(path, zxid)
	if err != nil {
		return err
	}
	defer sr.Close()
	_, err = io.Copy(io.Discard, sr)
	return err
}

// isSnapshotTemp reports whether name is a temporary file of WriteSnapshot.
func isSnapshotTemp(name string) bool {
	return strings.HasPrefix(name, snapPrefix) && strings.HasSuffix(name, tmpSuffix)
}
