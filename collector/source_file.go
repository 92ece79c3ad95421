package collector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
)

// fileReader tails the files matching a glob as one stream: the file it
// is in (found by inode, so a rename does not lose it), then, once that
// is read to its end, the next file modified after it — the file a
// rotation created. A file that shrinks below the position was truncated
// in place (copytruncate): reading starts again at its beginning.
//
// Lines appended to a rotated file after the reader has moved on to its
// successor are not read: loggers reopen at rotation, and waiting longer
// would delay every rotation.
type fileReader struct {
	glob string
}

// fileInfo is a match of the glob.
type fileInfo struct {
	path  string
	ino   uint64
	size  int64
	mtime int64
}

func (f *fileReader) list() ([]fileInfo, error) {
	paths, err := filepath.Glob(f.glob)
	if err != nil {
		return nil, fmt.Errorf("collector: glob %q: %w", f.glob, err)
	}
	out := make([]fileInfo, 0, len(paths))
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue // gone since the glob, or a directory
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		out = append(out, fileInfo{path: p, ino: st.Ino, size: fi.Size(), mtime: fi.ModTime().UnixNano()})
	}
	// Oldest first; the name breaks ties of coarse clocks.
	sort.Slice(out, func(i, j int) bool {
		if out[i].mtime != out[j].mtime {
			return out[i].mtime < out[j].mtime
		}
		return out[i].path < out[j].path
	})
	return out, nil
}

// Read implements reader.
func (f *fileReader) Read(_ context.Context, pos Position, max int) ([]byte, Position, int64, error) {
	files, err := f.list()
	if err != nil {
		return nil, pos, -1, err
	}
	if len(files) == 0 {
		return nil, pos, 0, nil
	}
	cur := -1
	for i, fi := range files {
		if pos.Ino != 0 && fi.ino == pos.Ino {
			cur = i
		}
	}
	switch {
	case pos.Ino == 0:
		// A fresh source starts at the oldest file.
		cur = 0
		pos = Position{Path: files[0].path, Ino: files[0].ino}
	case cur < 0:
		// Our file is gone (deleted after rotation): go on with the
		// oldest file not older than the last one we saw.
		for i, fi := range files {
			if fi.path == pos.Path || i == len(files)-1 {
				cur = i
				break
			}
		}
		pos = Position{Path: files[cur].path, Ino: files[cur].ino}
	}
	fi := files[cur]
	pos.Path = fi.path
	if fi.size < pos.Offset {
		pos.Offset = 0 // truncated in place
	}
	if fi.size > pos.Offset {
		data, err := readAt(fi, pos.Offset, max)
		if err != nil {
			return nil, pos, -1, err
		}
		lines := completeLines(data, max)
		if len(lines) > 0 || cur == len(files)-1 {
			pos.Offset += int64(len(lines))
			return lines, pos, fi.size - pos.Offset, nil
		}
		// Only a partial last line is left and a newer file exists:
		// the writer has moved on; pass the fragment on as a line.
		if len(data) > 0 && int64(len(data)) == fi.size-pos.Offset {
			pos.Offset += int64(len(data))
			return append(data, '\n'), pos, 0, nil
		}
		return nil, pos, fi.size - pos.Offset, nil
	}
	if cur < len(files)-1 {
		next := files[cur+1]
		return nil, Position{Path: next.path, Ino: next.ino}, next.size, nil
	}
	return nil, pos, 0, nil
}

// readAt reads up to max bytes of fi from off, checking that the path
// still names the same file.
func readAt(fi fileInfo, off int64, max int) ([]byte, error) {
	fh, err := os.Open(fi.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil // rotated away between the glob and now: next round
		}
		return nil, fmt.Errorf("collector: open %s: %w", fi.path, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("collector: stat %s: %w", fi.path, err)
	}
	if s, ok := st.Sys().(*syscall.Stat_t); !ok || s.Ino != fi.ino {
		return nil, nil // replaced since the glob: next round
	}
	n := fi.size - off
	if n > int64(max) {
		n = int64(max)
	}
	buf := make([]byte, n)
	m, err := fh.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("collector: read %s at %d: %w", fi.path, off, err)
	}
	return buf[:m], nil
}
