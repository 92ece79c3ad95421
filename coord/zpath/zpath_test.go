package zpath

import "testing"

func TestSplitJoin(t *testing.T) {
	for _, tc := range []struct{ path, parent, name string }{
		{"/a", "/", "a"},
		{"/a/b", "/a", "b"},
		{"/a/b/c-0000000001", "/a/b", "c-0000000001"},
	} {
		parent, name := Split(tc.path)
		if parent != tc.parent || name != tc.name || Parent(tc.path) != tc.parent {
			t.Errorf("Split(%q) = %q, %q; want %q, %q", tc.path, parent, name, tc.parent, tc.name)
		}
		if got := Join(parent, name); got != tc.path {
			t.Errorf("Join(%q, %q) = %q, want %q", parent, name, got, tc.path)
		}
	}
}
