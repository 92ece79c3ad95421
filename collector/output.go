package collector

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
)

// Output layout: <out>/<source key>/<collector>-<seq>.log, one directory
// per source, segments named by the commit sequence number that opened
// them so that they sort in writing order.

// SourceKey is the directory name of a source's output: its URI with
// unsafe characters replaced, and a hash so that two URIs never share it.
func SourceKey(uri string) string {
	var b strings.Builder
	for _, r := range uri {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), "_.")
	if len(s) > 80 {
		s = s[len(s)-80:]
	}
	h := fnv.New32a()
	h.Write([]byte(uri))
	return fmt.Sprintf("%s-%08x", s, h.Sum32())
}

func segmentName(collector string, seq int64) string {
	return fmt.Sprintf("%s-%020d.log", collector, seq)
}

// outputs writes the segments of one collector below dir.
type outputs struct {
	dir  string
	name string // the collector
}

func (o outputs) sourceDir(uri string) string { return filepath.Join(o.dir, SourceKey(uri)) }

// append writes data at the end of segment seg of uri, which must be size
// bytes long, and syncs it (and the directory, for a new segment).
func (o outputs) append(uri, seg string, size int64, data []byte) error {
	dir := o.sourceDir(uri)
	if size == 0 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("collector: output for %s: %w", uri, err)
		}
	}
	p := filepath.Join(dir, seg)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("collector: open output %s: %w", p, err)
	}
	defer f.Close()
	// Write at the committed size, not at the end: bytes past it are
	// uncommitted leftovers of a failed round and are overwritten.
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("collector: output %s: %w", p, err)
	}
	if _, err := f.WriteAt(data, size); err != nil {
		return fmt.Errorf("collector: write output %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("collector: sync output %s: %w", p, err)
	}
	if size == 0 {
		return syncDir(dir)
	}
	return nil
}

// rollback makes uri's output what progress p committed: its segment cut
// to the committed size, and this collector's later segments removed. It
// returns how many uncommitted bytes it removed.
func (o outputs) rollback(uri string, p Progress) (cut int64, err error) {
	dir := o.sourceDir(uri)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("collector: rollback %s: %w", uri, err)
	}
	prefix := o.name + "-"
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, ".log") || len(n) != len(segmentName(o.name, 0)) {
			continue
		}
		p2 := filepath.Join(dir, n)
		switch {
		case n == p.Out:
			c, err := truncateTo(p2, p.OutSize)
			if err != nil {
				return cut, err
			}
			cut += c
		case p.Out == "" || n > p.Out:
			if fi, err := os.Stat(p2); err == nil {
				cut += fi.Size()
			}
			if err := os.Remove(p2); err != nil && !errors.Is(err, os.ErrNotExist) {
				return cut, fmt.Errorf("collector: rollback %s: %w", uri, err)
			}
		}
	}
	return cut, nil
}

// truncateTo cuts file p to size bytes if longer, returning the bytes cut.
func truncateTo(p string, size int64) (int64, error) {
	fi, err := os.Stat(p)
	if err != nil || fi.Size() <= size {
		return 0, nil
	}
	if err := os.Truncate(p, size); err != nil {
		return 0, fmt.Errorf("collector: rollback %s to %d bytes: %w", p, size, err)
	}
	return fi.Size() - size, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("collector: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("collector: sync %s: %w", dir, err)
	}
	return nil
}
