package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// copyFile copies src to dst as a new file (a new inode), as logrotate's
// copytruncate and cp do.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copytruncate rotates p as logrotate's copytruncate does.
func copytruncate(t *testing.T, p, rotated string) {
	t.Helper()
	copyFile(t, p, rotated)
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
}

func linesN(prefix string, from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "%s-%04d\n", prefix, i)
	}
	return b.String()
}

// Cause (a): lines written before the copy and not read before the
// truncation are in the copy only; they are read from there, at the
// offset reached in the original, before the truncated file.
func TestCopytruncateReadsUnreadLinesFromCopy(t *testing.T) {
	dir := t.TempDir()
	active := filepath.Join(dir, "app.log")
	rd := &fileReader{glob: active} // the copy does not match the glob
	appendFile(t, active, "a1\na2\n")
	got, pos := drain(t, rd, Position{}, 64)
	if got != "a1\na2\n" {
		t.Fatalf("first read %q", got)
	}
	appendFile(t, active, "a3\na4\n") // not read before the rotation
	copytruncate(t, active, active+".1")
	appendFile(t, active, "b1\n")
	if got, _ = drain(t, rd, pos, 64); got != "a3\na4\nb1\n" {
		t.Fatalf("after copytruncate read %q, want the unread a3, a4 from the copy, then b1", got)
	}
}

// Cause (b): the copy of what was already read (new inode, same first
// bytes, newer, matching the glob) is never read again.
func TestCopytruncateNeverRereadsCopy(t *testing.T) {
	dir := t.TempDir()
	active := filepath.Join(dir, "app.log")
	rd := &fileReader{glob: active + "*"}
	var all, want strings.Builder
	pos := Position{}
	for r := 0; r < 3; r++ {
		chunk := linesN(fmt.Sprintf("r%d", r), 0, 10)
		appendFile(t, active, chunk)
		want.WriteString(chunk)
		got, p := drain(t, rd, pos, 64)
		all.WriteString(got)
		pos = p
		// A quiet file: everything was read before the rotation.
		for i := r; i >= 1; i-- {
			if err := os.Rename(fmt.Sprintf("%s.%d", active, i), fmt.Sprintf("%s.%d", active, i+1)); err != nil {
				t.Fatal(err)
			}
		}
		copytruncate(t, active, active+".1")
		got, pos = drain(t, rd, pos, 64)
		all.WriteString(got)
	}
	if all.String() != want.String() {
		t.Fatalf("over 3 copytruncates of a quiet file read %d bytes, want the %d written once:\n%s",
			all.Len(), want.Len(), all.String())
	}
}

// Cause (c): a file truncated and refilled past the old offset before
// the next read is noticed by its fingerprint, with or without a copy.
func TestTruncateThenRefillDetectedByFingerprint(t *testing.T) {
	for _, withCopy := range []bool{true, false} {
		t.Run(fmt.Sprintf("copy=%v", withCopy), func(t *testing.T) {
			dir := t.TempDir()
			active := filepath.Join(dir, "app.log")
			rd := &fileReader{glob: active}
			appendFile(t, active, linesN("old", 0, 50))
			got, pos := drain(t, rd, Position{}, 4096)
			if got != linesN("old", 0, 50) {
				t.Fatalf("first read %q", got)
			}
			if withCopy {
				copytruncate(t, active, active+".1")
			} else if err := os.Truncate(active, 0); err != nil {
				t.Fatal(err)
			}
			burst := linesN("new", 0, 150) // longer than the old offset
			appendFile(t, active, burst)
			if got, _ = drain(t, rd, pos, 4096); got != burst {
				t.Fatalf("after truncate and refill read %d lines, want the %d new ones:\n%s",
					strings.Count(got, "\n"), 150, got)
			}
		})
	}
}

// gzipFile compresses p into p+".gz", keeping its mtime, and removes p,
// as logrotate's compress does.
func gzipFile(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".gz", z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	setMtime(t, p+".gz", st.ModTime()) // as gzip and logrotate do
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

// A file renamed and compressed before it was read to its end is read on
// from the .gz at the offset, then the new file; a half-written .gz is
// waited for.
func TestRenamedThenCompressedReadFromGzip(t *testing.T) {
	dir := t.TempDir()
	active := filepath.Join(dir, "app.log")
	rd := &fileReader{glob: active}
	appendFile(t, active, "a1\na2\n")
	got, pos := drain(t, rd, Position{}, 64)
	if got != "a1\na2\n" {
		t.Fatalf("first read %q", got)
	}
	appendFile(t, active, "a3\n")
	if err := os.Rename(active, active+".1"); err != nil {
		t.Fatal(err)
	}
	gzipFile(t, active+".1")
	st, err := os.Stat(active + ".1.gz")
	if err != nil {
		t.Fatal(err)
	}
	mtime := st.ModTime()
	whole, err := os.ReadFile(active + ".1.gz")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(active+".1.gz", whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	appendFile(t, active, "b1\n")
	if got, pos = drain(t, rd, pos, 64); got != "" {
		t.Fatalf("with the .gz half written read %q, want nothing yet", got)
	}
	if err := os.WriteFile(active+".1.gz", whole, 0o644); err != nil {
		t.Fatal(err)
	}
	setMtime(t, active+".1.gz", mtime)
	if got, _ = drain(t, rd, pos, 64); got != "a3\nb1\n" {
		t.Fatalf("read %q, want a3 from the .gz, then b1", got)
	}
}

// secondsAfterHourAgo returns at: at(s) is s seconds after one fixed
// time an hour ago. Tests set mtimes with it, so that rotation order does
// not depend on the file system's clock granularity.
func secondsAfterHourAgo() func(s int) time.Time {
	base := time.Now().Add(-time.Hour)
	return func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
}

// readFirst writes lines to the new file active, modified at mtime, reads
// them all with rd and returns the position after them.
func readFirst(t *testing.T, rd reader, active, lines string, mtime time.Time) Position {
	t.Helper()
	appendFile(t, active, lines)
	setMtime(t, active, mtime)
	got, pos := drain(t, rd, Position{}, 4096)
	if got != lines {
		t.Fatalf("first read %q, want %q", got, lines)
	}
	return pos
}

// readUntil reads rd from pos, one Read at a time, until done(pos) holds,
// and returns what it read and where it stopped.
func readUntil(t *testing.T, rd reader, pos Position, max int, done func(Position) bool) (string, Position) {
	t.Helper()
	var out strings.Builder
	for i := 0; !done(pos); i++ {
		if i == 1000 {
			t.Fatalf("no position satisfying the condition after 1000 reads; at %+v", pos)
		}
		data, next, _, err := rd.Read(context.Background(), pos, max)
		if err != nil {
			t.Fatalf("read at %+v: %v", pos, err)
		}
		out.Write(data)
		pos = next
	}
	return out.String(), pos
}

// copytruncateCompress rotates p as logrotate's copytruncate with
// compress does: p.1.gz becomes p.2.gz, p is copied to p.1 keeping its
// mtime and truncated, p.1 is compressed to p.1.gz (keeping the mtime)
// and removed. p's own mtime after the truncation is truncatedAt.
func copytruncateCompress(t *testing.T, p string, truncatedAt time.Time) {
	t.Helper()
	if _, err := os.Stat(p + ".1.gz"); err == nil {
		if err := os.Rename(p+".1.gz", p+".2.gz"); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	copytruncate(t, p, p+".1")
	setMtime(t, p+".1", st.ModTime())
	gzipFile(t, p+".1")
	setMtime(t, p, truncatedAt)
}

// Rotated twice by copytruncate+compress while the reader is between two
// copies: it finished the first .gz and went on to the truncated file by
// the fingerprint recorded at the first rotation, but the second rotation
// moved that content to a new .gz and left the file empty before it was
// read. After the new .gz, the older one (now .2.gz, modified after the
// last time the reader saw the active file) must not be taken for the
// file that comes next: it was read already.
func TestCopytruncateCompressTwiceNeverRereadsOlderCopy(t *testing.T) {
	active := filepath.Join(t.TempDir(), "app.log")
	rd := &fileReader{glob: active}
	at := secondsAfterHourAgo()

	pos := readFirst(t, rd, active, linesN("c0", 0, 10), at(0))
	st, err := os.Stat(active)
	if err != nil {
		t.Fatal(err)
	}
	activeIno := inoOf(st)

	// c1 is written and not read before the first rotation; c2 after it.
	appendFile(t, active, linesN("c1", 0, 10))
	setMtime(t, active, at(1))
	copytruncateCompress(t, active, at(2))
	appendFile(t, active, linesN("c2", 0, 10))
	setMtime(t, active, at(3))

	// Read c1 from the .gz and stop on the way to the truncated file,
	// before reading it.
	got, pos := readUntil(t, rd, pos, 4096, func(p Position) bool { return p.Ino == activeIno && p.Drain == "" && p.Offset == 0 })
	if got != linesN("c1", 0, 10) {
		t.Fatalf("after the first rotation read %q, want c1 from the .gz", got)
	}

	// The second rotation moves c2, unread, to the new .1.gz.
	copytruncateCompress(t, active, at(4))
	if got, _ = drain(t, rd, pos, 4096); got != linesN("c2", 0, 10) {
		t.Fatalf("after the second rotation read\n%s\nwant c2 from the new .1.gz once, and nothing of c1 again", got)
	}
}

// Two copytruncates before the reader came back (a slow round, a
// takeover): the unread end of what it was reading is in the older copy,
// what was written between the rotations in the newer one, and the
// truncated file holds only what came after. All three are read, in
// that order.
func TestCopytruncateTwiceBetweenReadsReadsBothCopies(t *testing.T) {
	active := filepath.Join(t.TempDir(), "app.log")
	rd := &fileReader{glob: active}
	at := secondsAfterHourAgo()
	rotate := func(copiedAt, truncatedAt time.Time) {
		if _, err := os.Stat(active + ".1"); err == nil {
			if err := os.Rename(active+".1", active+".2"); err != nil {
				t.Fatal(err)
			}
		}
		copytruncate(t, active, active+".1")
		setMtime(t, active+".1", copiedAt)
		setMtime(t, active, truncatedAt)
	}

	pos := readFirst(t, rd, active, linesN("c0", 0, 10), at(0))
	appendFile(t, active, linesN("c1", 0, 10))
	rotate(at(1), at(2))
	appendFile(t, active, linesN("c2", 0, 10))
	rotate(at(3), at(4))
	appendFile(t, active, linesN("c3", 0, 10))
	setMtime(t, active, at(5))

	want := linesN("c1", 0, 10) + linesN("c2", 0, 10) + linesN("c3", 0, 10)
	if got, _ := drain(t, rd, pos, 4096); got != want {
		t.Fatalf("after two copytruncates read\n%s\nwant c1 (older copy), c2 (newer copy), c3 (the truncated file)", got)
	}
}

// The reader lists the files next to the log while logrotate's gzip
// replaces the copy app.log.1 by app.log.1.gz: the listing names the copy,
// which is gone when opened, and not the .gz. The truncated file is not
// taken for content with no copy (its unread lines would be lost): the
// reader waits a round, then finds them in the .gz.
func TestCopyGoneWhileListedIsWaitedFor(t *testing.T) {
	active := filepath.Join(t.TempDir(), "app.log")
	rd := &fileReader{glob: active}
	at := secondsAfterHourAgo()
	pos := readFirst(t, rd, active, linesN("c0", 0, 10), at(0))

	appendFile(t, active, linesN("c1", 0, 10)) // unread at the rotation
	copytruncate(t, active, active+".1")
	copied, ok := statFile(active + ".1")
	if !ok {
		t.Fatal("no copy")
	}
	gzipFile(t, active+".1")
	appendFile(t, active, linesN("c2", 0, 10))

	// The listing as it was between the copy and the .gz.
	sc := &scan{glob: active, active: active, listed: true, more: []fileInfo{copied}}
	if err := sc.list(); err != nil {
		t.Fatal(err)
	}
	at1 := pos
	if cur, err := rd.locate(sc, &at1); err != nil || cur != nil || at1 != pos {
		t.Fatalf("with the copy gone since listed: located %v (err %v), position %+v; want nothing and the position kept", cur, err, at1)
	}
	if got, _ := drain(t, rd, pos, 4096); got != linesN("c1", 0, 10)+linesN("c2", 0, 10) {
		t.Fatalf("next rounds read\n%s\nwant c1 from the .gz, then c2", got)
	}
}

// A version 1 position (inode and offset, no fingerprint) resumes where
// it stood, and is fingerprinted from then on.
func TestVersion1PositionResumes(t *testing.T) {
	dir := t.TempDir()
	active := filepath.Join(dir, "app.log")
	appendFile(t, active, "a1\na2\na3\n")
	st, err := os.Stat(active)
	if err != nil {
		t.Fatal(err)
	}
	var s Status
	v1 := fmt.Sprintf(`{"version":1,"name":"c","progress":{"file://%s":{"seq":3,"lease":"l","pos":{"path":%q,"ino":%d,"offset":3},"owned":true}}}`,
		active, active, inoOf(st))
	if err := decode("status", []byte(v1), &s); err != nil {
		t.Fatal(err)
	}
	pos := s.Progress["file://"+active].Pos
	got, pos := drain(t, &fileReader{glob: active}, pos, 64)
	if got != "a2\na3\n" || pos.FPLen != 9 {
		t.Fatalf("from a version 1 position read %q (fingerprint over %d bytes), want a2, a3 and 9", got, pos.FPLen)
	}
}

func inoOf(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }
