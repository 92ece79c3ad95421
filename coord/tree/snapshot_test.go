package tree

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

func snapshotBytes(t testing.TB, f *Frozen) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := f.WriteTo(&buf)
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func mustLoad(t testing.TB, b []byte) *Tree {
	t.Helper()
	tr, err := Load(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	checkInvariants(t, tr)
	return tr
}

func TestSnapshotRoundTrip(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			w := newWorkload(t, seed)
			for range 500 {
				w.step()
			}
			frozen := w.h.tr.Freeze()
			if frozen.Zxid() != w.h.tr.LastZxid() {
				t.Fatalf("Frozen.Zxid() = %#x, tree at %#x", frozen.Zxid(), w.h.tr.LastZxid())
			}
			b := snapshotBytes(t, frozen)
			loaded := mustLoad(t, b)
			if got, want := dump(loaded), dump(w.h.tr); got != want {
				t.Fatalf("loaded tree differs:\n%s\nsaved:\n%s", got, want)
			}
			if !maps.Equal(loaded.Sessions(), w.h.tr.Sessions()) {
				t.Fatalf("sessions %v, want %v", loaded.Sessions(), w.h.tr.Sessions())
			}
			// Equal trees give equal bytes, also after a load.
			if again := snapshotBytes(t, w.h.tr.Freeze()); !bytes.Equal(again, b) {
				t.Fatal("two snapshots of one tree differ")
			}
			if again := snapshotBytes(t, loaded.Freeze()); !bytes.Equal(again, b) {
				t.Fatal("the snapshot of a loaded tree differs from the one it was loaded from")
			}
			// The loaded tree carries on exactly like the original.
			start := len(w.h.log)
			for range 200 {
				w.step()
			}
			for i, enc := range w.h.log[start:] {
				txn, err := DecodeTxn(enc)
				if err != nil {
					t.Fatal(err)
				}
				if got := loaded.Apply(txn); !reflect.DeepEqual(got, w.results[start+i]) {
					t.Fatalf("txn %d after load: %+v, original %+v", i, got, w.results[start+i])
				}
			}
			if dump(loaded) != dump(w.h.tr) {
				t.Fatal("trees diverged after the load")
			}
			checkInvariants(t, loaded)
		})
	}
}

func TestSnapshotOfNewTree(t *testing.T) {
	loaded := mustLoad(t, snapshotBytes(t, New().Freeze()))
	if dump(loaded) != dump(New()) {
		t.Fatal("a fresh tree does not survive a snapshot")
	}
}

func TestFreezeIsolatesFromLaterWrites(t *testing.T) {
	w := newWorkload(t, 42)
	for range 300 {
		w.step()
	}
	want := dump(w.h.tr)
	frozen := w.h.tr.Freeze()
	// Write the snapshot while the tree keeps changing, as the server
	// does; the race detector watches the shared data and ACLs.
	type written struct {
		b   []byte
		err error
	}
	done := make(chan written)
	go func() {
		var buf bytes.Buffer
		_, err := frozen.WriteTo(&buf)
		done <- written{buf.Bytes(), err}
	}()
	for range 300 {
		w.step()
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if got := dump(mustLoad(t, res.b)); got != want {
		t.Fatalf("snapshot shows later writes:\n%s\nwant:\n%s", got, want)
	}
}

func TestLoadRefusesDamage(t *testing.T) {
	h := newHarness(t)
	h.openSession(7, 5000)
	h.create("/a", "data")
	h.must(Caller{Session: 7}, create("/a/e", proto.ModeEphemeral))
	good := snapshotBytes(t, h.tr.Freeze())

	for i := range good {
		flipped := bytes.Clone(good)
		flipped[i] ^= 0x20
		if _, err := Load(bytes.NewReader(flipped)); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("byte %d flipped: Load error %v, want ErrCorruptSnapshot", i, err)
		}
	}
	for n := range len(good) {
		if _, err := Load(bytes.NewReader(good[:n])); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("cut at %d of %d bytes: Load error %v, want ErrCorruptSnapshot", n, len(good), err)
		}
	}
	if _, err := Load(bytes.NewReader(append(bytes.Clone(good), 0))); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("trailing byte: Load error %v", err)
	}
}

// rawSnapshot builds snapshot bytes with a valid checksum around any
// content, to test the structural checks behind it.
func rawSnapshot(body func(e *proto.Encoder)) []byte {
	e := proto.NewEncoder([]byte(snapMagic))
	e.Int(snapFormat)
	body(e)
	crc := crcOf(e.Bytes())
	e.Int(int32(crc))
	return e.Bytes()
}

func crcOf(b []byte) uint32 { return crc32.Update(0, crcTable, b) }

func TestLoadChecksStructure(t *testing.T) {
	node := func(e *proto.Encoder, path string, aclIdx int32) {
		e.String(path)
		e.Buffer(nil)
		e.Int(aclIdx)
		for range 6 {
			e.Long(0)
		}
		for range 3 {
			e.Int(0)
		}
	}
	header := func(e *proto.Encoder, nodes int64) {
		e.Long(5)                 // zxid
		e.Int(0)                  // sessions
		e.Int(1)                  // one ACL list
		proto.EncodeACLs(e, open) //
		e.Long(nodes)             //
	}
	cases := map[string][]byte{
		"no nodes":            rawSnapshot(func(e *proto.Encoder) { header(e, 0) }),
		"root not first":      rawSnapshot(func(e *proto.Encoder) { header(e, 1); node(e, "/a", 0) }),
		"child before parent": rawSnapshot(func(e *proto.Encoder) { header(e, 3); node(e, "/", 0); node(e, "/a/b", 0); node(e, "/a", 0) }),
		"duplicate":           rawSnapshot(func(e *proto.Encoder) { header(e, 3); node(e, "/", 0); node(e, "/a", 0); node(e, "/a", 0) }),
		"relative path":       rawSnapshot(func(e *proto.Encoder) { header(e, 2); node(e, "/", 0); node(e, "a", 0) }),
		"trailing slash":      rawSnapshot(func(e *proto.Encoder) { header(e, 2); node(e, "/", 0); node(e, "/a/", 0) }),
		"bad ACL index":       rawSnapshot(func(e *proto.Encoder) { header(e, 1); node(e, "/", 1) }),
		"negative ACL index":  rawSnapshot(func(e *proto.Encoder) { header(e, 1); node(e, "/", -1) }),
		"more nodes promised": rawSnapshot(func(e *proto.Encoder) { header(e, 2); node(e, "/", 0) }),
		"negative sessions":   rawSnapshot(func(e *proto.Encoder) { e.Long(5); e.Int(-1) }),
		"huge path length":    rawSnapshot(func(e *proto.Encoder) { header(e, 1); e.Int(1 << 30) }),
		"wrong magic":         append([]byte("ZKSN"), rawSnapshot(func(e *proto.Encoder) { header(e, 0) })[4:]...),
	}
	for name, b := range cases {
		if _, err := Load(bytes.NewReader(b)); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("%s: Load error %v, want ErrCorruptSnapshot", name, err)
		}
	}
	ok := rawSnapshot(func(e *proto.Encoder) { header(e, 2); node(e, "/", 0); node(e, "/a", 0) })
	if tr := mustLoad(t, ok); tr.LastZxid() != 5 || tr.NodeCount() != 2 {
		t.Fatalf("hand-built snapshot: zxid %d, %d nodes", tr.LastZxid(), tr.NodeCount())
	}
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(b []byte) (int, error) {
	if w.after < len(b) {
		n := w.after
		w.after = 0
		return n, errors.New("disk full")
	}
	w.after -= len(b)
	return len(b), nil
}

func TestWriteToReportsWriterErrors(t *testing.T) {
	w := newWorkload(t, 3)
	for range 300 {
		w.step()
	}
	f := w.h.tr.Freeze()
	size := int64(len(snapshotBytes(t, f)))
	for _, after := range []int{0, 10, int(size / 2), int(size - 1)} {
		n, err := f.WriteTo(&failingWriter{after: after})
		if err == nil || n > int64(after) {
			t.Errorf("writer failing after %d bytes: n=%d err=%v", after, n, err)
		}
	}
}

// snapshotPaths returns the paths a snapshot lists, in its order.
func snapshotPaths(t *testing.T, f *Frozen) []string {
	t.Helper()
	order, err := parentsFirst(f.nodes)
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, len(order))
	for k, i := range order {
		paths[k] = f.nodes[i].path
	}
	return paths
}

// A snapshot lists nodes depth first, siblings by name, which differs
// from path order where a name sorts before "/" ("a-b" < "a/b").
func TestSnapshotListsParentsFirstSiblingsByName(t *testing.T) {
	h := newHarness(t)
	for _, p := range []string{"/a", "/a-b", "/a/c", "/a/b", "/a/b/x", "/0"} {
		h.must(anyone, Op{Code: proto.OpCreate, Path: p, ACL: acl(proto.PermAll, "world", "anyone")})
	}
	got := snapshotPaths(t, h.tr.Freeze())
	want := []string{"/", "/0", "/a", "/a/b", "/a/b/x", "/a/c", "/a-b", "/zookeeper"}
	// ZooKeeper's own nodes under /zookeeper follow it.
	if len(got) < len(want) || !reflect.DeepEqual(got[:len(want)], want) {
		t.Fatalf("snapshot order %q, want it to start %q", got, want)
	}
	mustLoad(t, snapshotBytes(t, h.tr.Freeze()))
}

// Earlier versions listed nodes in path order; such a snapshot still loads.
func TestSnapshotInPathOrderLoads(t *testing.T) {
	w := newWorkload(t, 7)
	for range 500 {
		w.step()
	}
	f := w.h.tr.Freeze()
	slices.SortFunc(f.nodes, func(a, b frozenNode) int { return strings.Compare(a.path, b.path) })
	f.order = make([]int32, len(f.nodes))
	for i := range f.order {
		f.order[i] = int32(i)
	}
	loaded := mustLoad(t, snapshotBytes(t, f))
	if dump(loaded) != dump(w.h.tr) {
		t.Fatal("a path-ordered snapshot loads a different tree")
	}
}

func TestSnapshotRefusesNodesOffTheTree(t *testing.T) {
	f := New().Freeze()
	f.nodes = append(f.nodes, frozenNode{path: "/no/parent", acl: f.nodes[0].acl})
	if _, err := f.WriteTo(io.Discard); err == nil || !strings.Contains(err.Error(), "1 of") {
		t.Fatalf("WriteTo of a node without its parent = %v, want an error counting it", err)
	}
}
