package tree

import (
	"slices"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

func TestReads(t *testing.T) {
	h := newHarness(t)
	h.create("/a", "data")
	h.create("/a/b", "")
	h.create("/a/b/c", "")
	h.create("/a/d", "")
	h.create("/ab", "")
	h.must(anyone, Op{Code: proto.OpCreate, Path: "/a/private", Data: []byte("s"), ACL: acl(proto.PermAll, "digest", aliceID.ID)})
	h.must(alice, Op{Code: proto.OpCreate, Path: "/a/private/kid", ACL: open})

	t.Run("Get", func(t *testing.T) {
		for _, tc := range []struct {
			caller Caller
			path   string
			data   string
			err    error
		}{
			{anyone, "/a", "data", nil},
			{anyone, "/nope", "", proto.ErrNoNode},
			{anyone, "/a/private", "", proto.ErrNoAuth},
			{alice, "/a/private", "s", nil},
			{root, "/a/private", "s", nil},
			{anyone, "/a/", "", proto.ErrNoNode}, // reads do not validate paths
		} {
			data, st, err := h.tr.Get(tc.caller, tc.path)
			if err != tc.err || string(data) != tc.data {
				t.Errorf("Get(%q) = %q, %v; want %q, %v", tc.path, data, err, tc.data, tc.err)
			}
			if err == nil && st != h.stat(tc.path) {
				t.Errorf("Get(%q) stat %+v, Stat says %+v", tc.path, st, h.stat(tc.path))
			}
		}
	})
	t.Run("Stat checks no ACL", func(t *testing.T) {
		if st, ok := h.tr.Stat("/a/private"); !ok || st.DataLength != 1 || st.NumChildren != 1 {
			t.Fatalf("Stat = %+v, %v", st, ok)
		}
		if _, ok := h.tr.Stat("/nope"); ok {
			t.Fatal("Stat of a missing node succeeded")
		}
	})
	t.Run("Children", func(t *testing.T) {
		kids, st, err := h.tr.Children(anyone, "/a")
		slices.Sort(kids)
		if err != nil || !slices.Equal(kids, []string{"b", "d", "private"}) || st != h.stat("/a") {
			t.Fatalf("Children(/a) = %v, %+v, %v", kids, st, err)
		}
		if kids, _, err := h.tr.Children(anyone, "/a/b/c"); err != nil || kids == nil || len(kids) != 0 {
			t.Fatalf("Children of a leaf = %#v, %v; want an empty list", kids, err)
		}
		if _, _, err := h.tr.Children(anyone, "/a/private"); err != proto.ErrNoAuth {
			t.Fatalf("Children without READ: %v", err)
		}
		if _, _, err := h.tr.Children(anyone, "/nope"); err != proto.ErrNoNode {
			t.Fatalf("Children of a missing node: %v", err)
		}
	})
	t.Run("AllChildrenNumber", func(t *testing.T) {
		for _, tc := range []struct {
			caller Caller
			path   string
			want   int32
			err    error
		}{
			{anyone, "/", int32(h.tr.NodeCount() - 1), nil},
			{anyone, "/a", 5, nil}, // b, b/c, d, private, private/kid; not /ab
			{anyone, "/a/b/c", 0, nil},
			{anyone, "/zookeeper", 2, nil},
			{anyone, "/a/private", 0, proto.ErrNoAuth},
			{alice, "/a/private", 1, nil},
			{anyone, "/nope", 0, proto.ErrNoNode},
		} {
			if got, err := h.tr.AllChildrenNumber(tc.caller, tc.path); got != tc.want || err != tc.err {
				t.Errorf("AllChildrenNumber(%q) = %d, %v; want %d, %v", tc.path, got, err, tc.want, tc.err)
			}
		}
	})
	t.Run("Walk", func(t *testing.T) {
		var got []string
		h.tr.Walk(func(path string, st proto.Stat) bool {
			if st != h.stat(path) {
				t.Errorf("Walk stat of %q differs from Stat", path)
			}
			got = append(got, path)
			return true
		})
		want := []string{"/", "/a", "/a/b", "/a/b/c", "/a/d", "/a/private", "/a/private/kid", "/ab",
			"/zookeeper", "/zookeeper/config", "/zookeeper/quota"}
		if !slices.Equal(got, want) {
			t.Fatalf("Walk order %v, want %v", got, want)
		}
		var visited []string
		h.tr.Walk(func(path string, _ proto.Stat) bool {
			visited = append(visited, path)
			return path != "/a/b/c"
		})
		if !slices.Equal(visited, want[:4]) {
			t.Fatalf("Walk did not stop: %v", visited)
		}
	})
	t.Run("counters", func(t *testing.T) {
		if h.tr.NodeCount() != 11 {
			t.Errorf("NodeCount = %d, want 11", h.tr.NodeCount())
		}
		want := int64(44) // the four initial nodes
		for _, p := range []string{"/a", "/a/b", "/a/b/c", "/a/d", "/ab", "/a/private", "/a/private/kid"} {
			want += int64(len(p))
		}
		want += int64(len("data") + len("s"))
		if got := h.tr.ApproxDataBytes(); got != want {
			t.Errorf("ApproxDataBytes = %d, want %d", got, want)
		}
	})
}

func TestApproxDataBytesCountsUTF16(t *testing.T) {
	h := newHarness(t)
	before := h.tr.ApproxDataBytes()
	h.create("/é中", "xy") // Java counts 3 chars; the path takes 6 bytes
	if got := h.tr.ApproxDataBytes() - before; got != 3+2 {
		t.Fatalf("added %d, want 5", got)
	}
	if utf16Len("😀") != 2 {
		t.Fatal("a character beyond U+FFFF is a surrogate pair in Java")
	}
}

func TestReadsDoNotAllocate(t *testing.T) {
	h := newHarness(t)
	h.create("/a", "data")
	h.must(alice, Op{Code: proto.OpCreate, Path: "/d", ACL: proto.ACLCreatorAll})
	for name, read := range map[string]func(){
		"Get":            func() { h.tr.Get(anyone, "/a") },
		"Get via digest": func() { h.tr.Get(alice, "/d") },
		"Get missing":    func() { h.tr.Get(anyone, "/nope") },
		"Get denied":     func() { h.tr.Get(bob, "/d") },
		"Stat":           func() { h.tr.Stat("/a") },
		"GetACL":         func() { h.tr.GetACL(anyone, "/a") },
	} {
		if n := testing.AllocsPerRun(100, read); n != 0 {
			t.Errorf("%s allocates %v times per call", name, n)
		}
	}
}
