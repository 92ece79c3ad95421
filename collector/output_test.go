package collector

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRollback checks the recovery rule: the committed segment is cut to
// its committed size, later segments of this collector are removed, and
// earlier segments and other collectors' files are left alone.
func TestRollback(t *testing.T) {
	o := outputs{dir: t.TempDir(), name: "c1"}
	const uri = "file:///x.log"
	write := func(seg string, size int64, data string) {
		t.Helper()
		if err := o.append(uri, seg, size, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	old, cur, later := segmentName("c1", 3), segmentName("c1", 7), segmentName("c1", 9)
	other := segmentName("c2", 8)
	write(old, 0, "a\n")
	write(cur, 0, "b\n")
	write(cur, 2, "c\n") // committed up to here: 4 bytes
	write(cur, 4, "d\n") // not committed
	write(later, 0, "e\n")
	if err := os.WriteFile(filepath.Join(o.sourceDir(uri), other), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cut, err := o.rollback(uri, Progress{Out: cur, OutSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if cut != 4 {
		t.Errorf("rollback cut %d bytes, want 4 (\"d\\n\" and \"e\\n\")", cut)
	}
	for _, tc := range []struct {
		seg  string
		want string // "" for removed
	}{{old, "a\n"}, {cur, "b\nc\n"}, {later, ""}, {other, "x\n"}} {
		b, err := os.ReadFile(filepath.Join(o.sourceDir(uri), tc.seg))
		switch {
		case tc.want == "" && !os.IsNotExist(err):
			t.Errorf("segment %s: want it removed, got %q, %v", tc.seg, b, err)
		case tc.want != "" && string(b) != tc.want:
			t.Errorf("segment %s holds %q, want %q (%v)", tc.seg, b, tc.want, err)
		}
	}
	// Writing at the committed size overwrites leftovers past it.
	write(cur, 4, "D\n")
	if b, _ := os.ReadFile(filepath.Join(o.sourceDir(uri), cur)); string(b) != "b\nc\nD\n" {
		t.Fatalf("after rewrite the segment holds %q", b)
	}
}
