package tree

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// quotaWorkload drives a tree with random writes in a small namespace
// where quotas come and go, the way zkCli's setquota and delquota make
// them. With quirks it also nests quota roots, puts one on /zookeeper and
// writes the stats nodes itself: states where the stats drift from the
// subtree, as they do in ZooKeeper, but must still replay exactly.
type quotaWorkload struct {
	h        *harness
	rng      *rand.Rand
	quirks   bool
	roots    []string
	sessions []int64
	results  []Result
}

func newQuotaWorkload(t testing.TB, seed uint64, quirks bool) *quotaWorkload {
	w := &quotaWorkload{h: newHarness(t), rng: rand.New(rand.NewPCG(seed, seed^0x9007a)), quirks: quirks}
	// Never nested, none above the quota nodes: the stats stay exact.
	w.roots = []string{"/a", "/b/c", "/c/a/b"}
	if quirks {
		w.roots = append(w.roots, "/a/b", "/zookeeper", "/b")
	}
	return w
}

// pick returns a random name path of depth 1-3 over a, b, c, sometimes
// below /zookeeper.
func (w *quotaWorkload) pick() string {
	p := ""
	if w.quirks && w.rng.IntN(8) == 0 {
		p = "/zookeeper"
	}
	for range 1 + w.rng.IntN(3) {
		p += "/" + string(rune('a'+w.rng.IntN(3)))
	}
	return p
}

func (w *quotaWorkload) data() []byte {
	if w.rng.IntN(6) == 0 {
		return nil
	}
	return bytes.Repeat([]byte{'x'}, w.rng.IntN(12))
}

func (w *quotaWorkload) op() Op {
	switch w.rng.IntN(10) {
	case 0, 1, 2, 3:
		return Op{Code: proto.OpCreate, Path: w.pick(), Data: w.data(), ACL: open, Flags: []int32{0, 0, 1, 2}[w.rng.IntN(4)]}
	case 4, 5:
		return Op{Code: proto.OpDelete, Path: w.pick(), Version: -1}
	case 6, 7, 8:
		return Op{Code: proto.OpSetData, Path: w.pick(), Data: w.data(), Version: -1}
	}
	if w.quirks {
		garbage := []string{"", "count=abc", "zz=1,count=5", "count=1,bytes=2", "count"}
		return Op{Code: proto.OpSetData, Path: statsPath(w.roots[w.rng.IntN(len(w.roots))]), Data: []byte(garbage[w.rng.IntN(len(garbage))]), Version: -1}
	}
	return Op{Code: proto.OpCheck, Path: w.pick(), Version: -1}
}

// quotaOps returns the writes of zkCli's setquota or delquota for a root,
// one request each, as zkCli sends them.
func (w *quotaWorkload) quotaOps() []Op {
	root := w.roots[w.rng.IntN(len(w.roots))]
	qp := quotaPath + root
	if w.rng.IntN(2) == 0 {
		var ops []Op
		p := quotaPath
		for name := range strings.SplitSeq(root[1:], "/") {
			p += "/" + name
			ops = append(ops, Op{Code: proto.OpCreate, Path: p, ACL: open})
		}
		return append(ops,
			Op{Code: proto.OpCreate, Path: qp + limitsSuffix, Data: []byte("count=3,bytes=-1"), ACL: open},
			Op{Code: proto.OpCreate, Path: qp + statsSuffix, Data: []byte("count=0,bytes=0"), ACL: open})
	}
	ops := []Op{{Code: proto.OpDelete, Path: qp + statsSuffix, Version: -1}, {Code: proto.OpDelete, Path: qp + limitsSuffix, Version: -1}}
	if w.rng.IntN(2) == 0 {
		ops[0], ops[1] = ops[1], ops[0] // zkCli deletes in getChildren order
	}
	return ops
}

func (w *quotaWorkload) commit(txn *Txn) {
	w.results = append(w.results, w.h.commit(txn))
}

func (w *quotaWorkload) step() {
	h := w.h
	zxid, now := h.tick()
	switch k := w.rng.IntN(20); {
	case k == 0:
		id := int64(0x1000 + w.rng.IntN(4))
		if !slices.Contains(w.sessions, id) {
			w.sessions = append(w.sessions, id)
		}
		w.commit(h.tr.PrepareCreateSession(zxid, now, id, 5000))
	case k == 1 && len(w.sessions) > 0:
		i := w.rng.IntN(len(w.sessions))
		w.commit(h.tr.PrepareCloseSession(zxid, now, w.sessions[i]))
		w.sessions = slices.Delete(w.sessions, i, i+1)
	case k < 4:
		for _, op := range w.quotaOps() {
			zxid, now = h.tick()
			w.commit(h.tr.Prepare(root, zxid, now, []Op{op}, false))
		}
	case k < 6:
		ops := make([]Op, 1+w.rng.IntN(4))
		for i := range ops {
			ops[i] = w.op()
		}
		w.commit(h.tr.Prepare(w.caller(), zxid, now, ops, true))
	default:
		w.commit(h.tr.Prepare(w.caller(), zxid, now, []Op{w.op()}, false))
	}
}

// caller is the super user with one of the sessions (or none), so that
// ephemerals get an owner and no ACL refuses a write.
func (w *quotaWorkload) caller() Caller {
	c := root
	if len(w.sessions) > 0 && w.rng.IntN(2) == 0 {
		c.Session = w.sessions[w.rng.IntN(len(w.sessions))]
	}
	return c
}

// statsDrift compares every quota root's stats with a count of its
// subtree made here, from the node map. It returns the roots whose stats
// differ, and how many agreeing roots hold more than the root node.
func statsDrift(tr *Tree) (drifted []string, busy int) {
	if tr.quotas == nil {
		return nil, 0
	}
	for _, r := range tr.quotas.roots() {
		sn := tr.nodes[statsPath(r)]
		if sn == nil {
			continue
		}
		var count, size int64
		for p, n := range tr.nodes {
			if p == r || strings.HasPrefix(p, r+"/") {
				count++
				size += int64(len(n.data))
			}
		}
		switch {
		case string(sn.data) != fmt.Sprintf("count=%d,bytes=%d", count, size):
			drifted = append(drifted, fmt.Sprintf("%s: %q for count=%d,bytes=%d", r, sn.data, count, size))
		case count > 1:
			busy++
		}
	}
	return drifted, busy
}

func TestQuotaReplayAndSnapshot(t *testing.T) {
	for _, quirks := range []bool{false, true} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("quirks=%v/seed%d", quirks, seed), func(t *testing.T) {
				w := newQuotaWorkload(t, seed, quirks)
				type cut struct {
					snap []byte
					at   int    // log entries the snapshot includes
					dump string // the tree it was cut from
				}
				var cuts []cut
				busy, driftedCuts := 0, 0
				for i := range 1200 {
					w.step()
					if i%25 != 0 {
						continue
					}
					drifted, n := statsDrift(w.h.tr)
					busy += n
					if !quirks && len(drifted) > 0 {
						t.Fatalf("step %d: quota stats differ from their subtrees: %q", i, drifted)
					}
					if i%100 == 0 {
						cuts = append(cuts, cut{snapshotBytes(t, w.h.tr.Freeze()), len(w.h.log), dump(w.h.tr)})
						if len(drifted) > 0 {
							driftedCuts++
						}
					}
				}
				checkInvariants(t, w.h.tr)
				// Guard the workload: without these the test proves little.
				if busy == 0 {
					t.Fatal("the workload never put a node under a quota root")
				}
				if quirks && driftedCuts == 0 {
					t.Fatal("no snapshot was cut while stats had drifted from their subtrees")
				}
				want := dump(w.h.tr)

				replayed := New()
				for i, b := range w.h.log {
					txn, err := DecodeTxn(b)
					if err != nil {
						t.Fatalf("txn %d: %v", i, err)
					}
					if got := replayed.Apply(txn); !reflect.DeepEqual(got, w.results[i]) {
						t.Fatalf("txn %d (%v): replay gave %+v, the live apply %+v", i, txn.kind, got, w.results[i])
					}
				}
				if got := dump(replayed); got != want {
					t.Fatalf("replayed tree differs:\n%s\nlive:\n%s", got, want)
				}

				for _, c := range cuts {
					loaded := mustLoad(t, c.snap)
					if got := dump(loaded); got != c.dump {
						t.Fatalf("snapshot at log entry %d loads as:\n%s\nsaved:\n%s", c.at, got, c.dump)
					}
					for i, b := range w.h.log[c.at:] {
						txn, err := DecodeTxn(b)
						if err != nil {
							t.Fatal(err)
						}
						if got := loaded.Apply(txn); !reflect.DeepEqual(got, w.results[c.at+i]) {
							t.Fatalf("txn %d after the snapshot at %d: %+v, live %+v", c.at+i, c.at, got, w.results[c.at+i])
						}
					}
					if got := dump(loaded); got != want {
						t.Fatalf("snapshot at log entry %d plus replay differs:\n%s\nlive:\n%s", c.at, got, want)
					}
					checkInvariants(t, loaded)
				}
			})
		}
	}
}

// withFormat rewrites a snapshot's format number and its checksum.
func withFormat(snap []byte, format uint32) []byte {
	out := bytes.Clone(snap)
	binary.BigEndian.PutUint32(out[4:8], format)
	body := out[:len(out)-4]
	binary.BigEndian.PutUint32(out[len(out)-4:], crcOf(body))
	return out
}

func TestLoadRecomputesQuotaStatsOfFormat1(t *testing.T) {
	h := newHarness(t)
	for _, s := range []quotaStep{
		mk("/a", "1"), setquota("/a"), mk("/a/b", "22"), mk("/a/b/c", "333"),
		mk("/x", ""), setquota("/x"), rm(quotaPath + "/x" + limitsSuffix), mk("/x/y", "4"), // stats kept, not maintained
		put(statsPath("/a"), "count=0,bytes=0=;zeta=1"), // as a format 1 tree would hold them
	} {
		s(h)
	}
	snap := snapshotBytes(t, h.tr.Freeze())
	cases := []struct {
		name   string
		format uint32
		a, x   string
	}{
		{"format 2 keeps the stats as written", snapFormat, "count=0,bytes=0=;zeta=1", "count=1,bytes=0"},
		{"format 1 recomputes the stats of quota roots", snapFormatV1, "count=3,bytes=6", "count=1,bytes=0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			loaded := mustLoad(t, withFormat(snap, tc.format))
			lh := &harness{t: t, tr: loaded, now: h.now}
			wantStats("/a", tc.a)(lh)
			wantStats("/x", tc.x)(lh)
			// Writes after the load carry on from there.
			mk("/a/d", "55")(lh)
			checkInvariants(t, loaded)
		})
	}
	if _, err := Load(bytes.NewReader(withFormat(snap, 3))); err == nil {
		t.Fatal("Load accepted snapshot format 3")
	}
}
