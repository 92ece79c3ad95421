package tree

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// Identities used across the tests.
var (
	anyone  = Caller{Session: 0x100, Auth: []proto.Id{{Scheme: "ip", ID: "127.0.0.1"}}}
	alice   = Caller{Session: 0x200, Auth: []proto.Id{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "digest", ID: DigestID("alice", "pw")}}}
	bob     = Caller{Session: 0x300, Auth: []proto.Id{{Scheme: "ip", ID: "10.1.2.3"}, {Scheme: "digest", ID: DigestID("bob", "pw")}}}
	root    = Caller{Super: true}
	open    = proto.ACLOpenUnsafe
	aliceID = proto.Id{Scheme: "digest", ID: DigestID("alice", "pw")}
)

// clock is the time the test helpers give Prepare: it starts at a fixed
// instant and moves one millisecond per transaction, so every test is
// deterministic.
const clockStart int64 = 1_700_000_000_000

// harness drives a tree the way the server does: prepare with the next
// zxid, encode, decode, apply.
type harness struct {
	t   testing.TB
	tr  *Tree
	now int64
	log [][]byte // every transaction, encoded
}

func newHarness(t testing.TB) *harness {
	return &harness{t: t, tr: New(), now: clockStart}
}

// commit logs and applies txn, checking that the encoding round-trips.
func (h *harness) commit(txn *Txn) Result {
	h.t.Helper()
	b := EncodeTxn(txn)
	back, err := DecodeTxn(b)
	if err != nil {
		h.t.Fatalf("DecodeTxn(EncodeTxn(%v txn)): %v", txn.kind, err)
	}
	if again := EncodeTxn(back); string(again) != string(b) {
		h.t.Fatalf("%v txn does not re-encode to the same bytes", txn.kind)
	}
	h.log = append(h.log, b)
	return h.tr.Apply(txn)
}

func (h *harness) tick() (zxid, now int64) {
	h.now++
	return h.tr.LastZxid() + 1, h.now
}

// do prepares and applies one op.
func (h *harness) do(c Caller, op Op) Result {
	h.t.Helper()
	zxid, now := h.tick()
	return h.commit(h.tr.Prepare(c, zxid, now, []Op{op}, false))
}

// multi prepares and applies a multi.
func (h *harness) multi(c Caller, ops ...Op) Result {
	h.t.Helper()
	zxid, now := h.tick()
	return h.commit(h.tr.Prepare(c, zxid, now, ops, true))
}

// must applies one op and fails the test if it does not succeed.
func (h *harness) must(c Caller, op Op) OpResult {
	h.t.Helper()
	r := h.do(c, op)
	if r.Err != proto.ErrOK {
		h.t.Fatalf("%v %q: %v", op.Code, op.Path, r.Err)
	}
	return r.Ops[0]
}

func (h *harness) create(path string, data string) OpResult {
	h.t.Helper()
	return h.must(anyone, Op{Code: proto.OpCreate, Path: path, Data: []byte(data), ACL: open})
}

func (h *harness) openSession(id int64, timeout int32) {
	h.t.Helper()
	zxid, now := h.tick()
	h.commit(h.tr.PrepareCreateSession(zxid, now, id, timeout))
}

func (h *harness) closeSession(id int64) Result {
	h.t.Helper()
	zxid, now := h.tick()
	return h.commit(h.tr.PrepareCloseSession(zxid, now, id))
}

func (h *harness) stat(path string) proto.Stat {
	h.t.Helper()
	st, ok := h.tr.Stat(path)
	if !ok {
		h.t.Fatalf("Stat(%q): node missing", path)
	}
	return st
}

// Op constructors keep the tables short.
func create(path string, flags int32) Op {
	return Op{Code: proto.OpCreate, Path: path, ACL: open, Flags: flags}
}
func del(path string, version int32) Op {
	return Op{Code: proto.OpDelete, Path: path, Version: version}
}
func set(path, data string, version int32) Op {
	return Op{Code: proto.OpSetData, Path: path, Data: []byte(data), Version: version}
}
func check(path string, version int32) Op {
	return Op{Code: proto.OpCheck, Path: path, Version: version}
}
func setACL(path string, acl []proto.ACL, version int32) Op {
	return Op{Code: proto.OpSetACL, Path: path, ACL: acl, Version: version}
}

// dump renders the whole state of a tree, internal fields included, one
// line per node and per session, for equality checks.
func dump(tr *Tree) string { return state(tr) + fmt.Sprintf("zxid=%#x\n", tr.lastZxid) }

// state is dump without the last zxid: what a failed request must not
// change.
func state(tr *Tree) string {
	var b strings.Builder
	paths := make([]string, 0, len(tr.nodes))
	for p := range tr.nodes {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		n := tr.nodes[p]
		fmt.Fprintf(&b, "%s data=%q nil=%v acl=%v meta=%+v children=%d\n",
			p, n.data, n.data == nil, n.acl.acls, n.meta, len(n.children))
	}
	ids := make([]int64, 0, len(tr.sessions))
	for id := range tr.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "session %#x timeout=%d ephemerals=%v\n", id, tr.sessions[id], tr.Ephemerals(id, ""))
	}
	fmt.Fprintf(&b, "nodes=%d bytes=%d ephemerals=%d reapable(+1h)=%v\n",
		tr.NodeCount(), tr.ApproxDataBytes(), tr.EphemeralCount(), tr.Reapable(clockStart+3_600_000))
	return b.String()
}

// checkInvariants verifies that every index of the tree agrees with the
// nodes: parent links, ephemeral/container/TTL sets, counters and ACL
// reference counts.
func checkInvariants(t testing.TB, tr *Tree) {
	t.Helper()
	root := tr.nodes["/"]
	if root == nil {
		t.Fatal("invariant: no root")
	}
	var bytes int64
	eph := 0
	refs := map[*aclList]int{}
	for p, n := range tr.nodes {
		bytes += nodeSize(p, n.data)
		refs[n.acl]++
		if p != "/" {
			parent, name := zpath.Split(p)
			pn := tr.nodes[parent]
			if pn == nil {
				t.Fatalf("invariant: %q has no parent", p)
			}
			if _, ok := pn.children[name]; !ok {
				t.Fatalf("invariant: %q missing from its parent's children", p)
			}
		}
		for name := range n.children {
			if tr.nodes[zpath.Join(p, name)] == nil {
				t.Fatalf("invariant: %q lists missing child %q", p, name)
			}
		}
		if n.children != nil && len(n.children) == 0 {
			t.Fatalf("invariant: %q keeps an empty children map", p)
		}
		_, inCont := tr.containers[p]
		_, inTTL := tr.ttls[p]
		_, inEph := tr.ephemerals[n.owner][p]
		k := kindOf(n.owner)
		if inCont != (k == kindContainer) || inTTL != (k == kindTTL) || inEph != (k == kindSession) {
			t.Fatalf("invariant: %q (owner %#x) indexed as container=%v ttl=%v ephemeral=%v", p, n.owner, inCont, inTTL, inEph)
		}
		if k == kindSession {
			eph++
		}
	}
	for owner, set := range tr.ephemerals {
		if len(set) == 0 {
			t.Fatalf("invariant: empty ephemeral set for %#x", owner)
		}
		for p := range set {
			if n := tr.nodes[p]; n == nil || n.owner != owner {
				t.Fatalf("invariant: ephemeral %q of %#x is not in the tree", p, owner)
			}
		}
	}
	for p := range tr.containers {
		if tr.nodes[p] == nil {
			t.Fatalf("invariant: container %q is not in the tree", p)
		}
	}
	for p := range tr.ttls {
		if tr.nodes[p] == nil {
			t.Fatalf("invariant: TTL node %q is not in the tree", p)
		}
	}
	if bytes != tr.dataBytes {
		t.Fatalf("invariant: dataBytes %d, recomputed %d", tr.dataBytes, bytes)
	}
	if eph != tr.ephCount {
		t.Fatalf("invariant: ephCount %d, recomputed %d", tr.ephCount, eph)
	}
	for l, n := range refs {
		if l.refs != n {
			t.Fatalf("invariant: ACL %v has %d refs, used by %d nodes", l.acls, l.refs, n)
		}
		if tr.acls.byKey[l.key] != l {
			t.Fatalf("invariant: ACL %v in use but not interned", l.acls)
		}
	}
	if len(tr.acls.byKey) != len(refs) {
		t.Fatalf("invariant: %d interned ACLs, %d in use", len(tr.acls.byKey), len(refs))
	}
	var roots []string
	for p := range tr.nodes {
		if r, ok := quotaLimitsRoot(p); ok {
			roots = append(roots, r)
		}
	}
	slices.Sort(roots)
	var indexed []string
	if tr.quotas != nil {
		indexed = tr.quotas.roots()
		if len(indexed) == 0 {
			t.Fatal("invariant: an empty quota trie is kept")
		}
	}
	if !slices.Equal(indexed, roots) {
		t.Fatalf("invariant: quota roots indexed %q, limits nodes for %q", indexed, roots)
	}
}
