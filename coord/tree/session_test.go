package tree

import (
	"maps"
	"slices"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

func TestSessions(t *testing.T) {
	h := newHarness(t)
	h.openSession(alice.Session, 30000)
	h.openSession(bob.Session, 10000)
	if got, want := h.tr.Sessions(), map[int64]int32{alice.Session: 30000, bob.Session: 10000}; !maps.Equal(got, want) {
		t.Fatalf("Sessions() = %v, want %v", got, want)
	}
	if h.tr.LastZxid() != 2 {
		t.Fatalf("session transactions must consume zxids: last %d", h.tr.LastZxid())
	}
	h.create("/app", "")
	h.create("/app/x", "")
	for _, p := range []string{"/app/b", "/app/a", "/app/x/e", "/top"} {
		h.must(alice, create(p, proto.ModeEphemeral))
	}
	h.must(bob, create("/app/bob", proto.ModeEphemeral))
	seq := h.must(alice, create("/app/s-", proto.ModeEphemeralSequential))

	if h.tr.EphemeralCount() != 6 {
		t.Fatalf("EphemeralCount() = %d, want 6", h.tr.EphemeralCount())
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"/app/a", "/app/b", seq.Path, "/app/x/e", "/top"}},
		{"/", []string{"/app/a", "/app/b", seq.Path, "/app/x/e", "/top"}},
		{"  ", []string{"/app/a", "/app/b", seq.Path, "/app/x/e", "/top"}},
		{"/app/x", []string{"/app/x/e"}},
		{"/ap", []string{"/app/a", "/app/b", seq.Path, "/app/x/e"}}, // a string prefix, as ZooKeeper
		{"/none", []string{}},
	} {
		if got := h.tr.Ephemerals(alice.Session, tc.prefix); !slices.Equal(got, tc.want) {
			t.Errorf("Ephemerals(alice, %q) = %v, want %v", tc.prefix, got, tc.want)
		}
	}

	r := h.closeSession(alice.Session)
	z := h.tr.LastZxid()
	if r.Err != proto.ErrOK || r.Ops != nil {
		t.Fatalf("closeSession result %+v", r)
	}
	wantEvents(t, r.Events,
		Event{Type: proto.EventNodeDeleted, Path: "/app/a"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/app"},
		Event{Type: proto.EventNodeDeleted, Path: "/app/b"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/app"},
		Event{Type: proto.EventNodeDeleted, Path: seq.Path}, Event{Type: proto.EventNodeChildrenChanged, Path: "/app"},
		Event{Type: proto.EventNodeDeleted, Path: "/app/x/e"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/app/x"},
		Event{Type: proto.EventNodeDeleted, Path: "/top"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/"},
	)
	for _, p := range []string{"/app/a", "/app/b", seq.Path, "/app/x/e", "/top"} {
		wantMissing(t, h, p)
	}
	if st := h.stat("/app"); st.Pzxid != z || st.NumChildren != 2 {
		t.Fatalf("/app stat %+v, want pzxid %#x and 2 children", st, z)
	}
	if got := h.tr.Sessions(); !maps.Equal(got, map[int64]int32{bob.Session: 10000}) {
		t.Fatalf("Sessions() after close = %v", got)
	}
	if h.tr.EphemeralCount() != 1 || len(h.tr.Ephemerals(alice.Session, "")) != 0 {
		t.Fatalf("ephemerals left: %d, alice's %v", h.tr.EphemeralCount(), h.tr.Ephemerals(alice.Session, ""))
	}
	checkInvariants(t, h.tr)

	// Closing a session with nothing left, or unknown, still takes a zxid.
	r = h.closeSession(0x999)
	if r.Err != proto.ErrOK || len(r.Events) != 0 || h.tr.LastZxid() != z+1 {
		t.Fatalf("closing an unknown session: %+v, zxid %#x", r, h.tr.LastZxid())
	}
}

func TestCloseSessionDeletesEphemeralsMadeAfterPrepare(t *testing.T) {
	// Replaying a log whose closeSession lists fewer paths than the session
	// owns must still leave no ephemeral behind (ZooKeeper deletes the
	// rest too).
	h := newHarness(t)
	zxid, now := h.tick()
	closeTxn := h.tr.PrepareCloseSession(zxid+1, now, alice.Session)
	h.must(alice, create("/late", proto.ModeEphemeral))
	r := h.commit(closeTxn)
	wantEvents(t, r.Events, Event{Type: proto.EventNodeDeleted, Path: "/late"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/"})
	checkInvariants(t, h.tr)
}

func TestServerSessionMakesNoEphemerals(t *testing.T) {
	// ZooKeeper takes the owner from the request's session; the server's
	// own session 0 therefore creates a persistent node.
	h := newHarness(t)
	h.must(Caller{}, create("/e", proto.ModeEphemeral))
	if h.tr.EphemeralCount() != 0 || h.stat("/e").EphemeralOwner != 0 {
		t.Fatal("session 0 made an ephemeral")
	}
}

func TestReapable(t *testing.T) {
	const ttl = 1000
	h := newHarness(t)
	container := func(p string) Op {
		return Op{Code: proto.OpCreateContainer, Path: p, ACL: open, Flags: proto.ModeContainer}
	}
	h.must(anyone, container("/fresh")) // never had a child
	h.must(anyone, container("/used"))  // had one
	h.must(anyone, container("/busy"))  // has one
	h.must(anyone, Op{Code: proto.OpCreateTTL, Path: "/t", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: ttl})
	h.must(anyone, Op{Code: proto.OpCreateTTL, Path: "/tk", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: ttl})
	h.create("/used/x", "")
	h.must(anyone, del("/used/x", -1))
	h.create("/busy/x", "")
	h.create("/tk/x", "")
	mtime := h.stat("/t").Mtime

	if got := h.tr.Reapable(mtime + ttl); !slices.Equal(got, []string{"/used"}) {
		t.Fatalf("Reapable(mtime+ttl) = %v, want [/used]: a TTL node expires strictly after its TTL", got)
	}
	if got := h.tr.Reapable(mtime + ttl + 1); !slices.Equal(got, []string{"/t", "/used"}) {
		t.Fatalf("Reapable(mtime+ttl+1) = %v, want [/t /used]", got)
	}
	// Touching a TTL node restarts its clock.
	h.now = mtime + ttl
	h.must(anyone, set("/t", "x", -1))
	if got := h.tr.Reapable(mtime + ttl + 1); !slices.Equal(got, []string{"/used"}) {
		t.Fatalf("Reapable after setData = %v, want [/used]", got)
	}
}

func TestDeleteContainer(t *testing.T) {
	reaper := ptr(Caller{Super: true})
	deleteContainer := func(p string) Op { return Op{Code: proto.OpDeleteContainer, Path: p, Version: -1} }
	usedContainer := func(h *harness) {
		h.must(anyone, Op{Code: proto.OpCreateContainer, Path: "/c", ACL: open, Flags: proto.ModeContainer})
		h.create("/c/x", "")
		h.must(anyone, del("/c/x", -1))
	}
	ttlNode := func(h *harness) {
		h.must(anyone, Op{Code: proto.OpCreateTTL, Path: "/t", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: 100})
	}
	runWriteCases(t, []writeCase{
		{name: "empty container", setup: usedContainer, caller: reaper, op: deleteContainer("/c"),
			check: func(t *testing.T, h *harness, r Result) {
				wantMissing(t, h, "/c")
				wantEvents(t, r.Events, Event{Type: proto.EventNodeDeleted, Path: "/c"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/"})
			}},
		{name: "container that never had a child", caller: reaper,
			setup: func(h *harness) {
				h.must(anyone, Op{Code: proto.OpCreateContainer, Path: "/c", ACL: open, Flags: proto.ModeContainer})
			},
			op: deleteContainer("/c")},
		{name: "container with a child", caller: reaper,
			setup: func(h *harness) { usedContainer(h); h.create("/c/y", "") },
			op:    deleteContainer("/c"), want: proto.ErrNotEmpty},
		{name: "expired TTL node", caller: reaper,
			setup: func(h *harness) { ttlNode(h); h.now += 101 },
			op:    deleteContainer("/t")},
		{name: "TTL node not yet expired", caller: reaper,
			setup: func(h *harness) { ttlNode(h); h.now += 99 },
			op:    deleteContainer("/t"), want: proto.ErrBadVersion},
		{name: "persistent node", caller: reaper, setup: func(h *harness) { h.create("/p", "") },
			op: deleteContainer("/p"), want: proto.ErrBadVersion},
		{name: "ephemeral", caller: reaper, setup: func(h *harness) { h.must(alice, create("/e", proto.ModeEphemeral)) },
			op: deleteContainer("/e"), want: proto.ErrBadVersion},
		{name: "missing", caller: reaper, op: deleteContainer("/nope"), want: proto.ErrNoNode},
		{name: "special", caller: reaper, op: deleteContainer("/zookeeper/quota"), want: proto.ErrBadArguments},
		{name: "no ACL check", setup: func(h *harness) {
			h.must(anyone, Op{Code: proto.OpCreate, Path: "/locked", ACL: acl(proto.PermRead, "world", "anyone")})
			h.must(root, Op{Code: proto.OpCreateContainer, Path: "/locked/c", ACL: open, Flags: proto.ModeContainer})
		}, op: deleteContainer("/locked/c")},
	})
}
