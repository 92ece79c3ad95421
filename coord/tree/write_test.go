package tree

import (
	"math"
	"slices"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// writeCase is one single-op write: the state it starts from, the op, the
// error ZooKeeper 3.8 answers, and further checks on success.
type writeCase struct {
	name   string
	setup  func(h *harness)
	caller *Caller // anyone when nil
	op     Op
	want   proto.ErrCode
	check  func(t *testing.T, h *harness, r Result)
}

// runWriteCases runs each case on a fresh tree. Every request must consume
// exactly one zxid; a failing one must change nothing else and fire nothing.
func runWriteCases(t *testing.T, cases []writeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.setup != nil {
				tc.setup(h)
			}
			c := anyone
			if tc.caller != nil {
				c = *tc.caller
			}
			before, zxid := state(h.tr), h.tr.LastZxid()
			r := h.do(c, tc.op)
			if r.Err != tc.want {
				t.Fatalf("%v %q: got %v, want %v", tc.op.Code, tc.op.Path, r.Err, tc.want)
			}
			if got := h.tr.LastZxid(); got != zxid+1 {
				t.Fatalf("last zxid %#x after the request, want %#x", got, zxid+1)
			}
			if len(r.Ops) != 1 {
				t.Fatalf("got %d op results, want 1", len(r.Ops))
			}
			if tc.want != proto.ErrOK {
				if r.Ops[0].Code != proto.OpError || r.Ops[0].Err != tc.want {
					t.Fatalf("op result %+v, want code error with %v", r.Ops[0], tc.want)
				}
				if after := state(h.tr); after != before {
					t.Fatalf("failed request changed the tree:\nbefore:\n%s\nafter:\n%s", before, after)
				}
				if len(r.Events) != 0 {
					t.Fatalf("failed request fired %v", r.Events)
				}
			}
			checkInvariants(t, h.tr)
			if tc.check != nil {
				tc.check(t, h, r)
			}
		})
	}
}

// wantEvents fails unless got has want's types and paths, in order.
func wantEvents(t *testing.T, got []Event, want ...Event) {
	t.Helper()
	if !sameEvents(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// sameEvents compares the types and paths of events (not their ACLs).
func sameEvents(a, b []Event) bool {
	return slices.EqualFunc(a, b, func(x, y Event) bool { return x.Type == y.Type && x.Path == y.Path })
}

func wantData(t *testing.T, h *harness, path string, want []byte) {
	t.Helper()
	data, st, err := h.tr.Get(root, path)
	if err != nil {
		t.Fatalf("Get(%q): %v", path, err)
	}
	if string(data) != string(want) || (data == nil) != (want == nil) {
		t.Fatalf("Get(%q) = %q (nil %v), want %q (nil %v)", path, data, data == nil, want, want == nil)
	}
	if st.DataLength != int32(len(want)) {
		t.Fatalf("Get(%q): dataLength %d, want %d", path, st.DataLength, len(want))
	}
}

func wantMissing(t *testing.T, h *harness, path string) {
	t.Helper()
	if _, ok := h.tr.Stat(path); ok {
		t.Fatalf("%q still exists", path)
	}
}

// acl builds a one-entry ACL.
func acl(perms int32, scheme, id string) []proto.ACL {
	return []proto.ACL{{Perms: perms, Id: proto.Id{Scheme: scheme, ID: id}}}
}

func ptr(c Caller) *Caller { return &c }

func TestNewMatchesZooKeeper(t *testing.T) {
	tr := New()
	// As a fresh ZooKeeper 3.8.0 shows them (stat, children, ACL, data).
	cases := []struct {
		path     string
		stat     proto.Stat
		children []string
		acl      []proto.ACL
	}{
		{"/", proto.Stat{Cversion: -1, NumChildren: 1}, []string{"zookeeper"}, open},
		{"/zookeeper", proto.Stat{Cversion: -2, NumChildren: 2}, []string{"config", "quota"}, open},
		{"/zookeeper/quota", proto.Stat{}, []string{}, open},
		{"/zookeeper/config", proto.Stat{Aversion: -1}, []string{}, proto.ACLReadUnsafe},
	}
	for _, tc := range cases {
		data, st, err := tr.Get(anyone, tc.path)
		if err != nil {
			t.Fatalf("Get(%q): %v", tc.path, err)
		}
		if data == nil || len(data) != 0 {
			t.Errorf("%q: data %q (nil %v), want empty and not null", tc.path, data, data == nil)
		}
		if st != tc.stat {
			t.Errorf("%q: stat %+v, want %+v", tc.path, st, tc.stat)
		}
		kids, _, _ := tr.Children(anyone, tc.path)
		slices.Sort(kids)
		if !slices.Equal(kids, tc.children) {
			t.Errorf("%q: children %v, want %v", tc.path, kids, tc.children)
		}
		got, _, err := tr.GetACL(anyone, tc.path)
		if err != nil || !slices.Equal(got, tc.acl) {
			t.Errorf("%q: ACL %v (%v), want %v", tc.path, got, err, tc.acl)
		}
	}
	if tr.NodeCount() != 4 || tr.LastZxid() != 0 || tr.EphemeralCount() != 0 {
		t.Errorf("nodes %d, zxid %d, ephemerals %d; want 4, 0, 0", tr.NodeCount(), tr.LastZxid(), tr.EphemeralCount())
	}
	// len("/")+len("/zookeeper")+len("/zookeeper/quota")+len("/zookeeper/config")
	if got := tr.ApproxDataBytes(); got != 44 {
		t.Errorf("ApproxDataBytes %d, want 44", got)
	}
	checkInvariants(t, tr)
}

func TestCreate(t *testing.T) {
	setupA := func(h *harness) { h.create("/a", "") }
	readOnlyParent := func(h *harness) {
		h.must(anyone, Op{Code: proto.OpCreate, Path: "/ro", ACL: acl(proto.PermRead|proto.PermDelete, "world", "anyone")})
	}
	runWriteCases(t, []writeCase{
		{name: "persistent", op: Op{Code: proto.OpCreate, Path: "/a", Data: []byte("hello"), ACL: open},
			check: func(t *testing.T, h *harness, r Result) {
				z, now := h.tr.LastZxid(), h.now
				o := r.Ops[0]
				want := proto.Stat{Czxid: z, Mzxid: z, Pzxid: z, Ctime: now, Mtime: now, DataLength: 5}
				if o.Code != proto.OpCreate || o.Path != "/a" || o.Stat != want {
					t.Fatalf("result %+v, want create /a with stat %+v", o, want)
				}
				// The root had one child and persisted cversion 0.
				if st := h.stat("/"); st.Cversion != 0 || st.NumChildren != 2 || st.Pzxid != z {
					t.Fatalf("root stat %+v, want cversion 0, 2 children, pzxid %#x", st, z)
				}
				wantData(t, h, "/a", []byte("hello"))
				wantEvents(t, r.Events, Event{Type: proto.EventNodeCreated, Path: "/a"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/"})
			}},
		{name: "create2 reports the same", op: Op{Code: proto.OpCreate2, Path: "/a", ACL: open},
			check: func(t *testing.T, h *harness, r Result) {
				if o := r.Ops[0]; o.Code != proto.OpCreate2 || o.Stat.Czxid != h.tr.LastZxid() {
					t.Fatalf("result %+v", o)
				}
			}},
		{name: "nil data stays null", op: Op{Code: proto.OpCreate, Path: "/a", ACL: open},
			check: func(t *testing.T, h *harness, r Result) { wantData(t, h, "/a", nil) }},
		{name: "empty data stays empty", op: Op{Code: proto.OpCreate, Path: "/a", Data: []byte{}, ACL: open},
			check: func(t *testing.T, h *harness, r Result) { wantData(t, h, "/a", []byte{}) }},
		{name: "grandchild", setup: setupA, op: create("/a/b", 0),
			check: func(t *testing.T, h *harness, r Result) {
				wantEvents(t, r.Events, Event{Type: proto.EventNodeCreated, Path: "/a/b"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/a"})
				if st := h.stat("/a"); st.Cversion != 1 || st.NumChildren != 1 || st.Pzxid != h.tr.LastZxid() {
					t.Fatalf("parent stat %+v", st)
				}
			}},
		{name: "parent missing", op: create("/x/y", 0), want: proto.ErrNoNode},
		{name: "exists", setup: setupA, op: create("/a", 0), want: proto.ErrNodeExists},
		{name: "root exists", op: create("/", 0), want: proto.ErrNodeExists},
		{name: "relative path with a slash", op: create("a/b", 0), want: proto.ErrNoNode},
		{name: "path without a slash", op: create("abc", 0), want: proto.ErrBadArguments},
		{name: "empty path", op: create("", 0), want: proto.ErrBadArguments},
		{name: "trailing slash", setup: setupA, op: create("/a/", 0), want: proto.ErrBadArguments},
		{name: "trailing slash sequential", setup: setupA, op: create("/a/", proto.ModePersistentSequential),
			check: func(t *testing.T, h *harness, r Result) {
				if r.Ops[0].Path != "/a/0000000000" {
					t.Fatalf("path %q, want /a/0000000000", r.Ops[0].Path)
				}
			}},
		{name: "empty segment", setup: setupA, op: create("/a//x", 0), want: proto.ErrNoNode},
		{name: "dot segment", setup: setupA, op: create("/a/.", 0), want: proto.ErrBadArguments},
		{name: "NUL", setup: setupA, op: create("/a/\x00", 0), want: proto.ErrBadArguments},
		{name: "control character", setup: setupA, op: create("/a/\x01", 0), want: proto.ErrBadArguments},
		{name: "unknown flags", op: create("/a", 7), want: proto.ErrBadArguments},
		{name: "TTL flags on a plain create", op: create("/a", proto.ModePersistentWithTTL), want: proto.ErrBadArguments},
		{name: "container flags on a plain create make a persistent node", op: create("/a", proto.ModeContainer),
			check: func(t *testing.T, h *harness, r Result) {
				if n := h.tr.nodes["/a"]; n.owner != 0 || len(h.tr.containers) != 0 {
					t.Fatalf("owner %#x, containers %v; want a persistent node", n.owner, h.tr.containers)
				}
			}},
		{name: "ephemeral", caller: ptr(alice), op: create("/e", proto.ModeEphemeral),
			check: func(t *testing.T, h *harness, r Result) {
				if r.Ops[0].Stat.EphemeralOwner != alice.Session || h.tr.EphemeralCount() != 1 {
					t.Fatalf("owner %#x, count %d", r.Ops[0].Stat.EphemeralOwner, h.tr.EphemeralCount())
				}
				if got := h.tr.Ephemerals(alice.Session, ""); !slices.Equal(got, []string{"/e"}) {
					t.Fatalf("Ephemerals = %v", got)
				}
			}},
		{name: "child of an ephemeral",
			setup: func(h *harness) { h.must(alice, create("/e", proto.ModeEphemeral)) },
			op:    create("/e/x", 0), want: proto.ErrNoChildrenForEphemerals},
		{name: "NodeExists comes before NoChildrenForEphemerals",
			setup: func(h *harness) { h.must(alice, create("/e", proto.ModeEphemeral)) },
			op:    create("/e", 0), want: proto.ErrNodeExists},
		{name: "child of a container",
			setup: func(h *harness) {
				h.must(anyone, Op{Code: proto.OpCreateContainer, Path: "/c", ACL: open, Flags: proto.ModeContainer})
			},
			op: create("/c/x", proto.ModeEphemeral)},
		{name: "child of a TTL node",
			setup: func(h *harness) {
				h.must(anyone, Op{Code: proto.OpCreateTTL, Path: "/t", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: 10})
			},
			op: create("/t/x", 0)},
		{name: "container", op: Op{Code: proto.OpCreateContainer, Path: "/c", ACL: open, Flags: proto.ModeContainer},
			check: func(t *testing.T, h *harness, r Result) {
				// ZooKeeper shows 0; the kind lives in the owner field.
				if r.Ops[0].Stat.EphemeralOwner != 0 || h.tr.nodes["/c"].owner != containerOwner {
					t.Fatalf("stat owner %#x, internal %#x", r.Ops[0].Stat.EphemeralOwner, h.tr.nodes["/c"].owner)
				}
			}},
		{name: "sequential container", op: Op{Code: proto.OpCreateContainer, Path: "/c", ACL: open, Flags: proto.ModePersistentSequential},
			check: func(t *testing.T, h *harness, r Result) {
				if r.Ops[0].Path != "/c0000000000" || h.tr.nodes["/c0000000000"].owner != containerOwner {
					t.Fatalf("result %+v", r.Ops[0])
				}
			}},
		{name: "TTL", op: Op{Code: proto.OpCreateTTL, Path: "/t", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: 1000},
			check: func(t *testing.T, h *harness, r Result) {
				owner := h.tr.nodes["/t"].owner
				if r.Ops[0].Stat.EphemeralOwner != 0 || kindOf(owner) != kindTTL || ttlOf(owner) != 1000 {
					t.Fatalf("stat owner %#x, internal %#x", r.Ops[0].Stat.EphemeralOwner, owner)
				}
			}},
		{name: "sequential TTL", op: Op{Code: proto.OpCreateTTL, Path: "/t-", ACL: open, Flags: proto.ModePersistentSequentialWithTTL, TTL: 1},
			check: func(t *testing.T, h *harness, r Result) {
				if r.Ops[0].Path != "/t-0000000000" {
					t.Fatalf("path %q", r.Ops[0].Path)
				}
			}},
		{name: "largest TTL", op: Op{Code: proto.OpCreateTTL, Path: "/t", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: MaxTTL}},
		{name: "TTL zero", op: Op{Code: proto.OpCreateTTL, Path: "/t", ACL: open, Flags: proto.ModePersistentWithTTL}, want: proto.ErrBadArguments},
		{name: "TTL negative", op: Op{Code: proto.OpCreateTTL, Path: "/t", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: -1}, want: proto.ErrBadArguments},
		{name: "TTL too large", op: Op{Code: proto.OpCreateTTL, Path: "/t", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: MaxTTL + 1}, want: proto.ErrBadArguments},
		{name: "createTTL without TTL flags", op: Op{Code: proto.OpCreateTTL, Path: "/t", ACL: open, TTL: 1000}, want: proto.ErrBadArguments},
		{name: "createTTL without TTL flags or TTL", op: Op{Code: proto.OpCreateTTL, Path: "/t", ACL: open, TTL: -1}, want: proto.ErrBadArguments},
		{name: "TTL on a container create", op: Op{Code: proto.OpCreateContainer, Path: "/t", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: 5}, want: proto.ErrBadArguments},
		{name: "under /zookeeper", op: create("/zookeeper/foo", 0)},
		{name: "no CREATE permission on the parent", setup: readOnlyParent, op: create("/ro/x", 0), want: proto.ErrNoAuth},
		{name: "super ignores ACLs", setup: readOnlyParent, caller: ptr(root), op: create("/ro/x", 0)},
		{name: "super identity ignores ACLs", setup: readOnlyParent,
			caller: ptr(Caller{Session: 9, Auth: []proto.Id{{Scheme: "super", ID: ""}}}), op: create("/ro/x", 0)},
		{name: "NoAuth comes before NodeExists",
			setup: func(h *harness) {
				h.create("/p", "")
				h.create("/p/x", "")
				h.must(anyone, setACL("/p", proto.ACLReadUnsafe, -1))
			},
			op: create("/p/x", 0), want: proto.ErrNoAuth},
		{name: "InvalidACL comes before NoNode", op: Op{Code: proto.OpCreate, Path: "/nope/x"}, want: proto.ErrInvalidACL},
		{name: "empty ACL", op: Op{Code: proto.OpCreate, Path: "/a", ACL: []proto.ACL{}}, want: proto.ErrInvalidACL},
		{name: "world id other than anyone", op: Op{Code: proto.OpCreate, Path: "/a", ACL: acl(31, "world", "someone")}, want: proto.ErrInvalidACL},
		{name: "auth without an authenticated identity", op: Op{Code: proto.OpCreate, Path: "/a", ACL: proto.ACLCreatorAll}, want: proto.ErrInvalidACL},
		{name: "super scheme", op: Op{Code: proto.OpCreate, Path: "/a", ACL: acl(31, "super", "x")}, want: proto.ErrInvalidACL},
		{name: "unregistered scheme", op: Op{Code: proto.OpCreate, Path: "/a", ACL: acl(31, "sasl", "x")}, want: proto.ErrInvalidACL},
		{name: "malformed digest id", op: Op{Code: proto.OpCreate, Path: "/a", ACL: acl(31, "digest", "alice")}, want: proto.ErrInvalidACL},
		{name: "malformed ip", op: Op{Code: proto.OpCreate, Path: "/a", ACL: acl(31, "ip", "10.0.0/8")}, want: proto.ErrInvalidACL},
		{name: "auth expands to the caller's digest identities", caller: ptr(alice),
			op: Op{Code: proto.OpCreate, Path: "/a", ACL: proto.ACLCreatorAll},
			check: func(t *testing.T, h *harness, r Result) {
				got, _, err := h.tr.GetACL(alice, "/a")
				if want := []proto.ACL{{Perms: proto.PermAll, Id: aliceID}}; err != nil || !slices.Equal(got, want) {
					t.Fatalf("ACL %v (%v), want %v", got, err, want)
				}
			}},
		{name: "duplicates are dropped", op: Op{Code: proto.OpCreate, Path: "/a", ACL: append(append([]proto.ACL{}, open...), open...)},
			check: func(t *testing.T, h *harness, r Result) {
				if got, _, _ := h.tr.GetACL(anyone, "/a"); !slices.Equal(got, open) {
					t.Fatalf("ACL %v, want %v", got, open)
				}
			}},
		{name: "sequence numbers count creations, not deletions",
			setup: func(h *harness) {
				h.create("/cv", "")
				h.create("/cv/a", "")
				h.must(anyone, del("/cv/a", -1))
			},
			op: create("/cv/b", proto.ModePersistentSequential),
			check: func(t *testing.T, h *harness, r Result) {
				// ZooKeeper 3.8 answers b0000000001 and shows cversion 3.
				if r.Ops[0].Path != "/cv/b0000000001" {
					t.Fatalf("path %q, want /cv/b0000000001", r.Ops[0].Path)
				}
				if st := h.stat("/cv"); st.Cversion != 3 {
					t.Fatalf("cversion %d, want 3", st.Cversion)
				}
				next := h.must(anyone, create("/cv/c", proto.ModePersistentSequential))
				if next.Path != "/cv/c0000000002" || h.stat("/cv").Cversion != 4 {
					t.Fatalf("next %q with cversion %d, want /cv/c0000000002 and 4", next.Path, h.stat("/cv").Cversion)
				}
			}},
		{name: "sequence after cversion overflow",
			setup: func(h *harness) {
				h.create("/q", "")
				h.tr.nodes["/q"].cversion = math.MaxInt32
			},
			op: create("/q/x-", proto.ModePersistentSequential),
			check: func(t *testing.T, h *harness, r Result) {
				if r.Ops[0].Path != "/q/x-2147483647" {
					t.Fatalf("path %q", r.Ops[0].Path)
				}
				// The wrapped cversion is not larger, so ZooKeeper keeps the
				// old one, and the next sequential create collides.
				if n := h.tr.nodes["/q"]; n.cversion != math.MaxInt32 {
					t.Fatalf("cversion %d", n.cversion)
				}
				if again := h.do(anyone, create("/q/x-", proto.ModePersistentSequential)); again.Err != proto.ErrNodeExists {
					t.Fatalf("second sequential create: %v, want node exists", again.Err)
				}
			}},
		{name: "negative sequence numbers", setup: func(h *harness) {
			h.create("/q", "")
			h.tr.nodes["/q"].cversion = -5
		}, op: create("/q/x-", proto.ModePersistentSequential),
			check: func(t *testing.T, h *harness, r Result) {
				if r.Ops[0].Path != "/q/x--000000005" {
					t.Fatalf("path %q, want Java's %%010d of -5", r.Ops[0].Path)
				}
			}},
	})
}

func TestDelete(t *testing.T) {
	setupA := func(h *harness) { h.create("/a", "x") }
	setupAB := func(h *harness) { h.create("/a", ""); h.create("/a/b", "") }
	noDeleteParent := func(h *harness) {
		h.must(anyone, Op{Code: proto.OpCreate, Path: "/ro", ACL: acl(proto.PermAll&^proto.PermDelete, "world", "anyone")})
		h.create("/ro/x", "")
	}
	runWriteCases(t, []writeCase{
		{name: "delete", setup: setupA, op: del("/a", -1),
			check: func(t *testing.T, h *harness, r Result) {
				wantMissing(t, h, "/a")
				// Displayed cversion counts the create and the delete.
				if st := h.stat("/"); st.Cversion != 1 || st.NumChildren != 1 || st.Pzxid != h.tr.LastZxid() {
					t.Fatalf("root stat %+v", st)
				}
				wantEvents(t, r.Events, Event{Type: proto.EventNodeDeleted, Path: "/a"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/"})
				if o := r.Ops[0]; o.Code != proto.OpDelete || o.Path != "/a" {
					t.Fatalf("result %+v", o)
				}
			}},
		{name: "matching version", setup: func(h *harness) { setupA(h); h.must(anyone, set("/a", "y", -1)) }, op: del("/a", 1)},
		{name: "wrong version", setup: setupA, op: del("/a", 5), want: proto.ErrBadVersion},
		{name: "missing", op: del("/nope", -1), want: proto.ErrNoNode},
		{name: "missing parent", op: del("/nope/x", -1), want: proto.ErrNoNode},
		{name: "not empty", setup: setupAB, op: del("/a", -1), want: proto.ErrNotEmpty},
		{name: "BadVersion comes before NotEmpty", setup: setupAB, op: del("/a", 7), want: proto.ErrBadVersion},
		{name: "no DELETE permission on the parent", setup: noDeleteParent, op: del("/ro/x", -1), want: proto.ErrNoAuth},
		{name: "NoAuth comes before NoNode", setup: noDeleteParent, op: del("/ro/missing", -1), want: proto.ErrNoAuth},
		{name: "the node's own ACL does not matter",
			setup: func(h *harness) {
				h.create("/a", "")
				h.must(anyone, Op{Code: proto.OpCreate, Path: "/a/x", ACL: acl(proto.PermRead, "digest", DigestID("bob", "pw"))})
			},
			op: del("/a/x", -1)},
		{name: "root", op: del("/", -1), want: proto.ErrBadArguments},
		{name: "/zookeeper", op: del("/zookeeper", -1), want: proto.ErrBadArguments},
		{name: "/zookeeper/quota", op: del("/zookeeper/quota", -1), want: proto.ErrBadArguments},
		{name: "/zookeeper/config", op: del("/zookeeper/config", -1), want: proto.ErrBadArguments},
		{name: "a user node under /zookeeper", setup: func(h *harness) { h.create("/zookeeper/foo", "") }, op: del("/zookeeper/foo", -1)},
		{name: "path without a slash", op: del("a", -1), want: proto.ErrBadArguments},
		{name: "empty path", op: del("", -1), want: proto.ErrBadArguments},
		{name: "NUL", setup: setupA, op: del("/a\x00", -1), want: proto.ErrBadArguments},
		{name: "trailing slash is not validated, just missing", setup: setupA, op: del("/a/", -1), want: proto.ErrNoNode},
		{name: "an ephemeral leaves its session's list",
			setup: func(h *harness) { h.must(alice, create("/e", proto.ModeEphemeral)) }, op: del("/e", -1),
			check: func(t *testing.T, h *harness, r Result) {
				if h.tr.EphemeralCount() != 0 || len(h.tr.Ephemerals(alice.Session, "")) != 0 {
					t.Fatalf("ephemeral still listed: %v", h.tr.Ephemerals(alice.Session, ""))
				}
			}},
		{name: "a container leaves the reaper's list",
			setup: func(h *harness) {
				h.must(anyone, Op{Code: proto.OpCreateContainer, Path: "/c", ACL: open, Flags: proto.ModeContainer})
				h.create("/c/x", "")
				h.must(anyone, del("/c/x", -1))
			},
			op: del("/c", -1),
			check: func(t *testing.T, h *harness, r Result) {
				if got := h.tr.Reapable(h.now); len(got) != 0 {
					t.Fatalf("Reapable = %v", got)
				}
			}},
	})
}

func TestSetData(t *testing.T) {
	setupA := func(h *harness) { h.create("/a", "x") }
	readOnly := func(h *harness) {
		h.must(anyone, Op{Code: proto.OpCreate, Path: "/ro", ACL: acl(proto.PermAll&^proto.PermWrite, "world", "anyone")})
	}
	runWriteCases(t, []writeCase{
		{name: "set", setup: setupA, op: set("/a", "hello", -1),
			check: func(t *testing.T, h *harness, r Result) {
				z, now := h.tr.LastZxid(), h.now
				st := r.Ops[0].Stat
				if st.Version != 1 || st.Mzxid != z || st.Mtime != now || st.DataLength != 5 || st.Czxid == z || st.Ctime == now {
					t.Fatalf("stat %+v", st)
				}
				if st != h.stat("/a") {
					t.Fatalf("result stat %+v, tree says %+v", st, h.stat("/a"))
				}
				wantData(t, h, "/a", []byte("hello"))
				wantEvents(t, r.Events, Event{Type: proto.EventNodeDataChanged, Path: "/a"})
			}},
		{name: "matching version", setup: setupA, op: set("/a", "y", 0)},
		{name: "wrong version", setup: setupA, op: set("/a", "y", 1), want: proto.ErrBadVersion},
		{name: "missing", op: set("/nope", "y", -1), want: proto.ErrNoNode},
		{name: "no WRITE permission", setup: readOnly, op: set("/ro", "y", -1), want: proto.ErrNoAuth},
		{name: "NoAuth comes before BadVersion", setup: readOnly, op: set("/ro", "y", 9), want: proto.ErrNoAuth},
		{name: "/zookeeper/config is read-only", op: set("/zookeeper/config", "y", -1), want: proto.ErrNoAuth},
		{name: "/zookeeper is writable", op: set("/zookeeper", "y", -1)},
		{name: "/zookeeper/quota is writable", op: set("/zookeeper/quota", "y", -1)},
		{name: "root", op: set("/", "y", -1)},
		{name: "trailing slash", setup: setupA, op: set("/a/", "y", -1), want: proto.ErrBadArguments},
		{name: "BadArguments comes before NoNode", op: set("/nope/", "y", -1), want: proto.ErrBadArguments},
		{name: "relative path", op: set("a", "y", -1), want: proto.ErrBadArguments},
		{name: "null data", setup: setupA, op: Op{Code: proto.OpSetData, Path: "/a", Version: -1},
			check: func(t *testing.T, h *harness, r Result) { wantData(t, h, "/a", nil) }},
		{name: "version wraps like a Java int",
			setup: func(h *harness) { setupA(h); h.tr.nodes["/a"].version = math.MaxInt32 },
			op:    set("/a", "y", math.MaxInt32),
			check: func(t *testing.T, h *harness, r Result) {
				if v := r.Ops[0].Stat.Version; v != math.MinInt32 {
					t.Fatalf("version %d", v)
				}
			}},
	})
}

func TestSetACL(t *testing.T) {
	setupA := func(h *harness) { h.create("/a", "x") }
	aliceAdmin := func(h *harness) {
		h.must(anyone, Op{Code: proto.OpCreate, Path: "/a", ACL: []proto.ACL{
			{Perms: proto.PermAdmin, Id: aliceID}, {Perms: proto.PermRead, Id: proto.Id{Scheme: "world", ID: "anyone"}},
		}})
	}
	runWriteCases(t, []writeCase{
		{name: "set", setup: setupA, op: setACL("/a", proto.ACLReadUnsafe, -1),
			check: func(t *testing.T, h *harness, r Result) {
				if st := r.Ops[0].Stat; st.Aversion != 1 || st.Version != 0 || st != h.stat("/a") {
					t.Fatalf("stat %+v", st)
				}
				if got, _, _ := h.tr.GetACL(anyone, "/a"); !slices.Equal(got, proto.ACLReadUnsafe) {
					t.Fatalf("ACL %v", got)
				}
				wantEvents(t, r.Events)
			}},
		{name: "version is the ACL version",
			setup: func(h *harness) { setupA(h); h.must(anyone, set("/a", "y", -1)) },
			op:    setACL("/a", open, 0)},
		{name: "wrong version", setup: setupA, op: setACL("/a", open, 1), want: proto.ErrBadVersion},
		{name: "missing", op: setACL("/nope", open, -1), want: proto.ErrNoNode},
		{name: "InvalidACL comes before NoNode", op: setACL("/nope", nil, -1), want: proto.ErrInvalidACL},
		{name: "no ADMIN permission", setup: aliceAdmin, caller: ptr(bob), op: setACL("/a", open, -1), want: proto.ErrNoAuth},
		{name: "ADMIN through a digest", setup: aliceAdmin, caller: ptr(alice), op: setACL("/a", open, -1)},
		{name: "auth expands", setup: setupA, caller: ptr(alice), op: setACL("/a", proto.ACLCreatorAll, -1),
			check: func(t *testing.T, h *harness, r Result) {
				if got, _, _ := h.tr.GetACL(alice, "/a"); !slices.Equal(got, []proto.ACL{{Perms: proto.PermAll, Id: aliceID}}) {
					t.Fatalf("ACL %v", got)
				}
			}},
		{name: "/zookeeper/config", op: setACL("/zookeeper/config", open, -1), want: proto.ErrNoAuth},
		{name: "/zookeeper/config as super", caller: ptr(root), op: setACL("/zookeeper/config", open, -1),
			check: func(t *testing.T, h *harness, r Result) {
				// Its ACL version started at -1.
				if st := r.Ops[0].Stat; st.Aversion != 0 {
					t.Fatalf("aversion %d, want 0", st.Aversion)
				}
			}},
		{name: "invalid path", op: setACL("/a/", open, -1), want: proto.ErrBadArguments},
	})
}

func TestCheck(t *testing.T) {
	runWriteCases(t, []writeCase{
		{name: "matching", setup: func(h *harness) { h.create("/a", "") }, op: check("/a", 0),
			check: func(t *testing.T, h *harness, r Result) {
				if o := r.Ops[0]; o.Code != proto.OpCheck || o.Path != "/a" || len(r.Events) != 0 {
					t.Fatalf("result %+v, events %v", o, r.Events)
				}
			}},
		{name: "any version", setup: func(h *harness) { h.create("/a", "") }, op: check("/a", -1)},
		{name: "wrong version", setup: func(h *harness) { h.create("/a", "") }, op: check("/a", 3), want: proto.ErrBadVersion},
		{name: "missing", op: check("/nope", 0), want: proto.ErrNoNode},
		{name: "invalid path", op: check("/nope/", 0), want: proto.ErrBadArguments},
		{name: "needs READ (3.8)",
			setup: func(h *harness) {
				h.must(anyone, Op{Code: proto.OpCreate, Path: "/a", ACL: acl(proto.PermAll&^proto.PermRead, "world", "anyone")})
			},
			op: check("/a", 0), want: proto.ErrNoAuth},
		{name: "read-only nodes can be checked", op: check("/zookeeper/config", -1)},
	})
}

func TestPrepareRefusesWhatIsNotAWrite(t *testing.T) {
	h := newHarness(t)
	for _, ops := range [][]Op{nil, {create("/a", 0), create("/b", 0)}, {{Code: proto.OpGetData, Path: "/"}}} {
		before, zxid := state(h.tr), h.tr.LastZxid()
		r := h.do2(ops)
		if r.Err == proto.ErrOK || h.tr.LastZxid() != zxid+1 || state(h.tr) != before {
			t.Fatalf("Prepare(%v): err %v, zxid %#x; want an error txn that changes nothing", ops, r.Err, h.tr.LastZxid())
		}
	}
}

// do2 prepares a non-multi request with any number of ops.
func (h *harness) do2(ops []Op) Result {
	zxid, now := h.tick()
	return h.commit(h.tr.Prepare(anyone, zxid, now, ops, false))
}
