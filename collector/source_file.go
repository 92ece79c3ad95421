package collector

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// fpSize is how many leading bytes of a file identify its content. A
// smaller file is identified by all of it, and its fingerprint grows with
// it up to fpSize.
const fpSize = 1024

// fileReader tails the files matching a glob as one stream of content,
// through rotation as logrotate does it:
//
//   - The file holding the position is found by inode and checked by the
//     fingerprint of its first bytes. Renamed (create, nocreate), it is
//     read to its end where it now is, then reading goes on with the file
//     after it.
//   - If the inode is gone, or holds other content (truncated, refilled,
//     replaced), the content is looked for by fingerprint among the
//     glob's matches and the files named like Path with a suffix, gzip
//     files included (compress): a copy at least as long as the offset
//     is read on from the offset (copytruncate: the lines written before
//     the copy and not yet read are there), then the truncated file from
//     its start, or the newer copies first if it was rotated again. With
//     no copy, the truncated file is read from its start; a file gone
//     while listed makes the round wait (gzip replacing the copy).
//   - The file after a finished one is the one its rotation left at Path
//     or, for globs of many names, the next newer match; a copy of the
//     content already read (same fingerprint) is never a successor.
//
// A file is finished once a successor exists and the file has been read
// to its end after the successor was seen. Lines appended to it later
// (a writer that did not reopen) are not read.
type fileReader struct {
	glob string
}

// fileInfo is a candidate file.
type fileInfo struct {
	path  string
	ino   uint64
	size  int64 // on disk: for a .gz, the compressed size
	mtime int64
	gz    bool
}

// scan lists candidates once per Read: the glob's matches, and lazily the
// files next to Path that rotation names after it.
type scan struct {
	glob    string
	active  string // Position.Path
	matches []fileInfo
	more    []fileInfo // siblings not among matches; nil until listed
	listed  bool
	// vanished: a file was removed between listing and stat: maybe a
	// copy that gzip just replaced by a .gz the listing missed.
	vanished bool
}

func statFile(p string) (fileInfo, bool) {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return fileInfo{}, false // gone since listed, or a directory
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileInfo{}, false
	}
	return fileInfo{path: p, ino: st.Ino, size: fi.Size(), mtime: fi.ModTime().UnixNano(), gz: strings.HasSuffix(p, ".gz")}, true
}

func (s *scan) list() error {
	paths, err := filepath.Glob(s.glob)
	if err != nil {
		return fmt.Errorf("collector: glob %q: %w", s.glob, err)
	}
	for _, p := range paths {
		if fi, ok := s.stat(p); ok {
			s.matches = append(s.matches, fi)
		}
	}
	return nil
}

// stat is statFile of a listed path, noting whether it is gone since.
func (s *scan) stat(p string) (fileInfo, bool) {
	fi, ok := statFile(p)
	if !ok {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			s.vanished = true
		}
	}
	return fi, ok
}

// all returns the matches and the siblings of the active file: the files
// in its directory whose names start with its name (app.log.1,
// app.log.2.gz, app.log-20261125).
func (s *scan) all() []fileInfo {
	if !s.listed && s.active != "" {
		s.listed = true
		dir, base := filepath.Split(s.active)
		entries, _ := os.ReadDir(dir) // unreadable: the matches are all we have
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), base) {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if s.has(p) {
				continue
			}
			if fi, ok := s.stat(p); ok {
				s.more = append(s.more, fi)
			}
		}
	}
	return append(append([]fileInfo(nil), s.matches...), s.more...)
}

func (s *scan) has(p string) bool {
	for _, m := range s.matches {
		if m.path == p {
			return true
		}
	}
	return false
}

// byIno finds the file with inode ino, among the matches first.
func (s *scan) byIno(ino uint64) (fileInfo, bool) {
	for _, m := range s.matches {
		if m.ino == ino {
			return m, true
		}
	}
	for _, m := range s.all() {
		if m.ino == ino {
			return m, true
		}
	}
	return fileInfo{}, false
}

// newer orders files: later modified first; among equal times (coarse
// clocks), the active file is the newest and app.log.1 is newer than
// app.log.2, as logrotate numbers them.
func newer(a, b fileInfo, active string) bool {
	if a.mtime != b.mtime {
		return a.mtime > b.mtime
	}
	if a.path == active || b.path == active {
		return a.path == active
	}
	na, oka := rotationNumber(a.path)
	nb, okb := rotationNumber(b.path)
	if oka && okb && na != nb {
		return na < nb
	}
	return a.path > b.path
}

// rotationNumber is N of a name ending in .N or .N.gz.
func rotationNumber(p string) (int, bool) {
	p = strings.TrimSuffix(p, ".gz")
	i := strings.LastIndexByte(p, '.')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(p[i+1:])
	return n, err == nil
}

func fingerprint(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// openFile is an open candidate with its content's head.
type openFile struct {
	fileInfo
	fh   *os.File
	head []byte // the first min(size, fpSize) bytes of the content
}

func (o *openFile) Close() error { return o.fh.Close() }

// open opens fi, checks that its path still names inode fi.ino, and reads
// its head (decompressed for a .gz). nil, nil: gone or replaced since
// listed, or a .gz still being written.
func open(fi fileInfo) (*openFile, error) {
	fh, err := os.Open(fi.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("collector: open %s: %w", fi.path, err)
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("collector: stat %s: %w", fi.path, err)
	}
	if s, ok := st.Sys().(*syscall.Stat_t); !ok || s.Ino != fi.ino {
		fh.Close()
		return nil, nil
	}
	o := &openFile{fileInfo: fi, fh: fh}
	o.size, o.mtime = st.Size(), st.ModTime().UnixNano()
	if fi.gz {
		o.head, _, err = o.readGz(0, fpSize)
	} else {
		o.head, err = o.readAt(0, fpSize)
	}
	if err != nil || (fi.gz && o.head == nil) {
		fh.Close()
		return nil, err
	}
	return o, nil
}

// holds reports whether o's content starts with the content fingerprinted
// as fp over n bytes.
func (o *openFile) holds(fp string, n int64) bool {
	return n == 0 || (int64(len(o.head)) >= n && fingerprint(o.head[:n]) == fp)
}

// unchanged reports whether the plain file o still holds the content of
// pos up to its offset: not truncated since o was opened.
func (o *openFile) unchanged(pos Position) (bool, error) {
	st, err := o.fh.Stat()
	if err != nil {
		return false, fmt.Errorf("collector: stat %s: %w", o.path, err)
	}
	if st.Size() < pos.Offset {
		return false, nil
	}
	head := make([]byte, pos.FPLen)
	if _, err := o.fh.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("collector: read %s: %w", o.path, err)
	}
	return fingerprint(head) == pos.FP || pos.FPLen == 0, nil
}

// readAt reads up to max bytes of a plain file from off, up to its size
// when opened.
func (o *openFile) readAt(off int64, max int) ([]byte, error) {
	n := min(o.size-off, int64(max))
	if n <= 0 {
		return []byte{}, nil
	}
	buf := make([]byte, n)
	m, err := o.fh.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("collector: read %s at %d: %w", o.path, off, err)
	}
	return buf[:m], nil
}

// readGz decompresses up to max bytes from off. eof reports the end of
// the stream; nil data and no error is a stream cut short (gzip is still
// writing it): try again later.
func (o *openFile) readGz(off int64, max int) (data []byte, eof bool, err error) {
	if _, err := o.fh.Seek(0, io.SeekStart); err != nil {
		return nil, false, fmt.Errorf("collector: seek %s: %w", o.path, err)
	}
	zr, err := gzip.NewReader(o.fh)
	if err != nil {
		return nil, false, nil
	}
	if _, err := io.CopyN(io.Discard, zr, off); err != nil {
		if errors.Is(err, io.EOF) {
			return []byte{}, true, nil // shorter than off: nothing of it is left
		}
		return nil, false, nil
	}
	buf := make([]byte, max)
	n := 0
	for n < max {
		m, err := zr.Read(buf[n:])
		n += m
		if errors.Is(err, io.EOF) {
			return buf[:n], true, nil
		}
		if err != nil {
			return nil, false, nil
		}
	}
	return buf[:n], false, nil
}

// Read implements reader.
func (f *fileReader) Read(_ context.Context, pos Position, max int) ([]byte, Position, int64, error) {
	sc := &scan{glob: f.glob, active: pos.Path}
	if err := sc.list(); err != nil {
		return nil, pos, -1, err
	}
	if pos.Ino == 0 {
		// A fresh source starts at the oldest uncompressed match.
		var first *fileInfo
		for i, m := range sc.matches {
			if !m.gz && (first == nil || newer(*first, m, "")) {
				first = &sc.matches[i]
			}
		}
		if first == nil {
			return nil, pos, 0, nil
		}
		return nil, Position{Path: first.path, Ino: first.ino, MTime: first.mtime}, first.size, nil
	}
	cur, err := f.locate(sc, &pos)
	if err != nil || cur == nil {
		return nil, pos, -1, err
	}
	defer cur.Close()
	return f.readOn(sc, cur, pos, max)
}

// locate opens the file holding pos's content. It returns nil with pos
// changed when reading must go on elsewhere (a copy, the truncated file's
// start, a successor), and nil with pos unchanged when there is nothing
// to read now.
func (f *fileReader) locate(sc *scan, pos *Position) (*openFile, error) {
	var orig *openFile // the inode, holding other content now
	if fi, ok := sc.byIno(pos.Ino); ok {
		o, err := open(fi)
		if err != nil || o == nil {
			return nil, err
		}
		if o.holds(pos.FP, pos.FPLen) && (o.gz || o.size >= pos.Offset) {
			return o, nil
		}
		orig = o
		defer orig.Close()
	}
	// The content left the inode: copied (copytruncate), compressed, or
	// gone. Look for it by fingerprint; a copy shorter than the offset
	// is an older one.
	if pos.FPLen > 0 {
		var best *openFile
		var others []fileInfo // files that may hold other content
		unsure := false       // a .gz could not be read yet, or a file went away
		for _, fi := range sc.all() {
			if fi.ino == pos.Ino {
				continue
			}
			if !fi.gz && fi.size < pos.Offset {
				others = append(others, fi)
				continue
			}
			o, err := open(fi)
			if err != nil || o == nil {
				// Unreadable or gone: not where the content is. But gone
				// since listed, or a .gz cut short, it may have become
				// the copy (gzip writes the .gz, then removes the file).
				unsure = unsure || fi.gz || (o == nil && err == nil)
				continue
			}
			if !o.holds(pos.FP, pos.FPLen) {
				others = append(others, fi)
				o.Close()
				continue
			}
			if !better(o, best) {
				o.Close()
				continue
			}
			if best != nil {
				best.Close()
			}
			best = o
		}
		if best != nil {
			defer best.Close()
			next := *pos
			next.Ino, next.Drain = best.ino, best.path
			if orig != nil && next.NextIno == 0 && newestCopy(best.fileInfo, others, pos.Path) {
				// Truncated in place once since: its new content follows
				// the copy. After more than one rotation, a newer copy
				// holds what follows, and the oldest file modified after
				// this one is where reading goes on (successor).
				n := min(int64(len(orig.head)), fpSize)
				next.NextIno, next.NextFP, next.NextFPLen = orig.ino, fingerprint(orig.head[:n]), n
			}
			*pos = next
			return nil, nil
		}
		if unsure || sc.vanished {
			return nil, nil // it may be in a .gz still being written or not listed yet: next round
		}
	}
	if orig != nil {
		// Truncated or replaced with no copy: read it from its start.
		*pos = Position{Path: pos.Path, Ino: orig.ino, FP: fingerprint(orig.head), FPLen: int64(len(orig.head)), MTime: orig.mtime}
		return nil, nil
	}
	// Deleted: go on with the file after it, if any.
	if next, ok := f.successor(sc, *pos, false); ok {
		*pos = next
	}
	return nil, nil
}

// newestCopy reports whether found is newer than every file in others
// but the one at active: no rotation made another copy after it.
func newestCopy(found fileInfo, others []fileInfo, active string) bool {
	for _, fi := range others {
		if fi.path != active && newer(fi, found, active) {
			return false
		}
	}
	return true
}

// better prefers, among copies of one content, an uncompressed one (it
// can be read from the offset without decompressing), then the newest.
func better(o, best *openFile) bool {
	if best == nil {
		return true
	}
	if o.gz != best.gz {
		return !o.gz
	}
	return newer(o.fileInfo, best.fileInfo, "")
}

// successor is where reading goes on after the finished content of pos:
// Next if known by its fingerprint; else the oldest file modified after
// it that has content and is not a copy of it, compressed or not (logrotate
// keeps the mtime of what it compresses). The successor is fingerprinted
// at once, so that it is recognised wherever rotation takes it before it
// is read; an empty file is not a successor yet, for the same reason.
// active says the content is still at Path: then it is followed only by
// an uncompressed file (a glob of dated names); a .gz is older content.
func (f *fileReader) successor(sc *scan, pos Position, active bool) (Position, bool) {
	if pos.NextIno != 0 && pos.NextFPLen > 0 {
		return Position{Path: pos.Path, Ino: pos.NextIno, FP: pos.NextFP, FPLen: pos.NextFPLen, MTime: pos.MTime}, true
	}
	self := fileInfo{path: pos.Path, mtime: pos.MTime}
	if pos.Drain != "" {
		self.path = pos.Drain
	}
	// Still active, it has not been rotated: only another match of the
	// glob can follow it, and the files named after it are older.
	cands := sc.matches
	if !active {
		cands = sc.all()
	}
	var best *openFile
	for _, fi := range cands {
		if fi.ino == pos.Ino || (active && fi.gz) || !newer(fi, self, pos.Path) || (best != nil && !newer(best.fileInfo, fi, pos.Path)) {
			continue
		}
		o, err := open(fi)
		if err != nil || o == nil {
			continue
		}
		if len(o.head) == 0 || (pos.FPLen > 0 && o.holds(pos.FP, pos.FPLen)) {
			o.Close() // nothing yet, or the content already read, copied: never again
			continue
		}
		if best != nil {
			best.Close()
		}
		best = o
	}
	if best == nil {
		return pos, false
	}
	defer best.Close()
	next := Position{Path: best.path, Ino: best.ino, FP: fingerprint(best.head), FPLen: int64(len(best.head)), MTime: best.mtime}
	if !sc.has(best.path) {
		next.Path, next.Drain = pos.Path, best.path // a rotated file named after the active one
	}
	if pos.NextIno != 0 && best.ino != pos.NextIno {
		next.NextIno = pos.NextIno // a later copy first; the truncated file still follows
	}
	return next, true
}

// readOn reads cur from pos and, at its end, moves to its successor.
func (f *fileReader) readOn(sc *scan, cur *openFile, pos Position, max int) ([]byte, Position, int64, error) {
	if n := int64(len(cur.head)); n > pos.FPLen {
		pos.FP, pos.FPLen = fingerprint(cur.head), n // grows with the file up to fpSize
	}
	pos.Drain = ""
	if cur.path != pos.Path {
		pos.Drain = cur.path
	}
	// The successor is looked for among the files modified after the
	// content being read, so its mtime must be that of the file holding
	// it now, compressed or not (logrotate keeps the mtime of what it
	// compresses). A position that reached this content through a copy
	// (the next_* recorded at a copytruncate) still carries the mtime of
	// the content before it, and with it older rotated copies would look
	// newer and be read again.
	pos.MTime = cur.mtime
	var data []byte
	var eof bool
	var err error
	lag := int64(-1)
	if cur.gz {
		data, eof, err = cur.readGz(pos.Offset, max)
		if data == nil {
			return nil, pos, -1, err // cut short: gzip is still writing it
		}
	} else {
		if data, err = cur.readAt(pos.Offset, max); err != nil {
			return nil, pos, -1, err
		}
		// Truncated (and maybe refilled) while we read: the data may be
		// the new content. Drop it; the next round finds the content.
		if ok, err := cur.unchanged(pos); !ok {
			return nil, pos, -1, err
		}
		eof = pos.Offset+int64(len(data)) == cur.size
		lag = cur.size - pos.Offset
	}
	lines := completeLines(data, max)
	if len(lines) > 0 {
		pos.Offset += int64(len(lines))
		if lag >= 0 {
			lag -= int64(len(lines))
		}
		return lines, pos, lag, nil
	}
	if !eof {
		return nil, pos, lag, nil
	}
	next, ok := f.successor(sc, pos, cur.path == pos.Path)
	if !ok {
		return nil, pos, lag, nil
	}
	if !cur.gz {
		// The successor was seen before this check: whatever the file
		// holds now is all it will hold from writers that reopen.
		if st, err := cur.fh.Stat(); err != nil || st.Size() != cur.size {
			return nil, pos, lag, err
		}
	}
	if len(data) > 0 {
		// Only a partial last line is left and the writer has moved on:
		// pass the fragment on as a line.
		pos.Offset += int64(len(data))
		return append(data, '\n'), pos, 0, nil
	}
	return nil, next, -1, nil
}
