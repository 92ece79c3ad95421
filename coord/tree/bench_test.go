package tree

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// bigTree returns a tree of about n znodes with 20-byte data, 1000
// children per parent, and the paths of its leaves.
func bigTree(tb testing.TB, n int) (*Tree, []string) {
	tb.Helper()
	tr := New()
	data := bytes.Repeat([]byte("x"), 20)
	zxid := int64(0)
	apply := func(path string) {
		zxid++
		r := tr.Apply(tr.Prepare(anyone, zxid, clockStart+zxid, []Op{{Code: proto.OpCreate, Path: path, Data: data, ACL: open}}, false))
		if r.Err != proto.ErrOK {
			tb.Fatalf("create %q: %v", path, r.Err)
		}
	}
	leaves := make([]string, 0, n)
	for i := 0; len(leaves)+i/1000+1 < n; i++ {
		if i%1000 == 0 {
			apply(fmt.Sprintf("/bench%03d", i/1000))
		}
		p := fmt.Sprintf("/bench%03d/node-%07d", i/1000, i)
		apply(p)
		leaves = append(leaves, p)
	}
	return tr, leaves
}

func BenchmarkGet(b *testing.B) {
	tr, paths := bigTree(b, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, _, err := tr.Get(anyone, paths[i%len(paths)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStat(b *testing.B) {
	tr, paths := bigTree(b, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := tr.Stat(paths[i%len(paths)]); !ok {
			b.Fatal("missing")
		}
	}
}

func BenchmarkGetDigestACL(b *testing.B) {
	// The slow path of the ACL check: no world entry, a digest to match.
	tr := New()
	tr.Apply(tr.Prepare(alice, 1, 1, []Op{{Code: proto.OpCreate, Path: "/p", Data: []byte("x"), ACL: proto.ACLCreatorAll}}, false))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := tr.Get(alice, "/p"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChildren1000(b *testing.B) {
	tr, _ := bigTree(b, 2000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if kids, _, err := tr.Children(anyone, "/bench000"); err != nil || len(kids) != 1000 {
			b.Fatal(len(kids), err)
		}
	}
}

func BenchmarkCreate(b *testing.B) {
	tr := New()
	tr.Apply(tr.Prepare(anyone, 1, 1, []Op{{Code: proto.OpCreate, Path: "/b", ACL: open}}, false))
	data := bytes.Repeat([]byte("x"), 20)
	paths := make([]string, b.N)
	for i := range paths {
		paths[i] = fmt.Sprintf("/b/n%09d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		zxid := int64(i + 2)
		r := tr.Apply(tr.Prepare(anyone, zxid, zxid, []Op{{Code: proto.OpCreate, Path: paths[i], Data: data, ACL: open}}, false))
		if r.Err != proto.ErrOK {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkCreateSequentialEphemeral(b *testing.B) {
	tr := New()
	tr.Apply(tr.Prepare(anyone, 1, 1, []Op{{Code: proto.OpCreate, Path: "/q", ACL: open}}, false))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		zxid := int64(i + 2)
		op := Op{Code: proto.OpCreate, Path: "/q/lock-", ACL: open, Flags: proto.ModeEphemeralSequential}
		if r := tr.Apply(tr.Prepare(alice, zxid, zxid, []Op{op}, false)); r.Err != proto.ErrOK {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkSetData(b *testing.B) {
	tr, paths := bigTree(b, 10_000)
	data := bytes.Repeat([]byte("y"), 20)
	zxid := tr.LastZxid()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		zxid++
		r := tr.Apply(tr.Prepare(anyone, zxid, zxid, []Op{{Code: proto.OpSetData, Path: paths[i%len(paths)], Data: data, Version: -1}}, false))
		if r.Err != proto.ErrOK {
			b.Fatal(r.Err)
		}
	}
}

func BenchmarkEncodeDecodeCreateTxn(b *testing.B) {
	tr := New()
	txn := tr.Prepare(anyone, 1, 1, []Op{{Code: proto.OpCreate, Path: "/node-0000001", Data: bytes.Repeat([]byte("x"), 20), ACL: open}}, false)
	if txn.Type() != proto.OpCreate {
		b.Fatalf("prepared a %v txn", txn.Type())
	}
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = AppendTxn(buf[:0], txn)
		if _, err := DecodeTxn(buf); err != nil {
			b.Fatal(err)
		}
	}
}

const snapNodes = 200_000

func BenchmarkFreeze200k(b *testing.B) {
	tr, _ := bigTree(b, snapNodes)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		tr.Freeze()
	}
}

func BenchmarkWriteTo200k(b *testing.B) {
	tr, _ := bigTree(b, snapNodes)
	var size int64
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		f := tr.Freeze() // WriteTo sorts its own copy: a fresh one each time
		b.StartTimer()
		n, err := f.WriteTo(io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		size = n
	}
	b.ReportMetric(float64(size), "snapshot-bytes")
}

func BenchmarkLoad200k(b *testing.B) {
	tr, _ := bigTree(b, snapNodes)
	var buf bytes.Buffer
	if _, err := tr.Freeze().WriteTo(&buf); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Load(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemory200k reports the heap a tree of 200k znodes with 20-byte
// data keeps, per znode.
func BenchmarkMemory200k(b *testing.B) {
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tr, _ := bigTree(b, snapNodes) // the path list is garbage: only the tree counts
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(tr.NodeCount()), "bytes/znode")
		runtime.KeepAlive(tr)
	}
}

// BenchmarkSetDataQuota measures what a quota root costs a write below it
// (a trie walk and a rewrite of the stats data) against a tree with none.
func BenchmarkSetDataQuota(b *testing.B) {
	for _, quota := range []bool{false, true} {
		b.Run(fmt.Sprintf("quota=%v", quota), func(b *testing.B) {
			tr, paths := bigTree(b, 10_000)
			zxid := tr.LastZxid()
			apply := func(op Op) {
				zxid++
				if r := tr.Apply(tr.Prepare(root, zxid, zxid, []Op{op}, false)); r.Err != proto.ErrOK {
					b.Fatalf("%v %s: %v", op.Code, op.Path, r.Err)
				}
			}
			if quota {
				for _, p := range []string{quotaPath + "/bench000", quotaPath + "/bench000" + limitsSuffix, quotaPath + "/bench000" + statsSuffix} {
					apply(Op{Code: proto.OpCreate, Path: p, ACL: open})
				}
			}
			data := [][]byte{bytes.Repeat([]byte("y"), 20), bytes.Repeat([]byte("y"), 25)}
			paths = paths[:999] // all below /bench000
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				apply(Op{Code: proto.OpSetData, Path: paths[i%len(paths)], Data: data[i%2], Version: -1})
			}
		})
	}
}
