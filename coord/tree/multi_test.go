package tree

import (
	"slices"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// opWant is the expected result of one op of a multi.
type opWant struct {
	code proto.OpCode
	err  proto.ErrCode
	path string
}

func TestMulti(t *testing.T) {
	ok := func(code proto.OpCode, path string) opWant { return opWant{code, proto.ErrOK, path} }
	failed := func(err proto.ErrCode) opWant { return opWant{proto.OpError, err, ""} }
	const ri = proto.ErrRuntimeInconsistency
	cases := []struct {
		name  string
		setup func(h *harness)
		ops   []Op
		err   proto.ErrCode
		want  []opWant // nil: the multi failed as a whole, with no op results
		check func(t *testing.T, h *harness, r Result)
	}{
		{name: "later ops see earlier ones",
			ops:  []Op{create("/a", 0), create("/a/b", 0), check("/a", 0)},
			want: []opWant{ok(proto.OpCreate, "/a"), ok(proto.OpCreate, "/a/b"), ok(proto.OpCheck, "/a")},
			check: func(t *testing.T, h *harness, r Result) {
				z := h.tr.LastZxid()
				if st := h.stat("/a/b"); st.Czxid != z || h.stat("/a").Czxid != z {
					t.Fatalf("ops of one multi must share its zxid %#x", z)
				}
				wantEvents(t, r.Events,
					Event{Type: proto.EventNodeCreated, Path: "/a"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/"},
					Event{Type: proto.EventNodeCreated, Path: "/a/b"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/a"})
			}},
		{name: "failure in the middle (ZooKeeper: ok, error, -2, -2)",
			setup: func(h *harness) { h.create("/m", ""); h.create("/m/a", "") },
			ops:   []Op{create("/m/x", 0), set("/m/a", "", 5), create("/m/y", 0), del("/m/nope", -1)},
			err:   proto.ErrBadVersion,
			want:  []opWant{failed(proto.ErrOK), failed(proto.ErrBadVersion), failed(ri), failed(ri)}},
		{name: "failure in the first op",
			ops:  []Op{del("/nope", -1), create("/a", 0)},
			err:  proto.ErrNoNode,
			want: []opWant{failed(proto.ErrNoNode), failed(ri)}},
		{name: "failure in the last op",
			ops:  []Op{create("/a", 0), create("/a", 0)},
			err:  proto.ErrNodeExists,
			want: []opWant{failed(proto.ErrOK), failed(proto.ErrNodeExists)}},
		{name: "delete then create the same path",
			setup: func(h *harness) { h.create("/a", "old") },
			ops:   []Op{del("/a", 0), {Code: proto.OpCreate, Path: "/a", Data: []byte("new"), ACL: open}},
			want:  []opWant{ok(proto.OpDelete, "/a"), ok(proto.OpCreate, "/a")},
			check: func(t *testing.T, h *harness, r Result) {
				wantData(t, h, "/a", []byte("new"))
				wantEvents(t, r.Events,
					Event{Type: proto.EventNodeDeleted, Path: "/a"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/"},
					Event{Type: proto.EventNodeCreated, Path: "/a"}, Event{Type: proto.EventNodeChildrenChanged, Path: "/"})
			}},
		{name: "check after setData sees the new version",
			setup: func(h *harness) { h.create("/a", "") },
			ops:   []Op{set("/a", "x", 0), check("/a", 1), set("/a", "y", 1)},
			want:  []opWant{ok(proto.OpSetData, "/a"), ok(proto.OpCheck, "/a"), ok(proto.OpSetData, "/a")},
			check: func(t *testing.T, h *harness, r Result) {
				if r.Ops[2].Stat.Version != 2 {
					t.Fatalf("stat %+v", r.Ops[2].Stat)
				}
			}},
		{name: "check sees a stale version fail",
			setup: func(h *harness) { h.create("/a", "") },
			ops:   []Op{set("/a", "x", 0), check("/a", 0)},
			err:   proto.ErrBadVersion,
			want:  []opWant{failed(proto.ErrOK), failed(proto.ErrBadVersion)}},
		{name: "sequence numbers advance inside a multi",
			setup: func(h *harness) { h.create("/m", "") },
			ops:   []Op{create("/m/s-", proto.ModePersistentSequential), create("/m/s-", proto.ModePersistentSequential)},
			want:  []opWant{ok(proto.OpCreate, "/m/s-0000000000"), ok(proto.OpCreate, "/m/s-0000000001")}},
		{name: "delete sees children created before it",
			ops:  []Op{create("/a", 0), create("/a/b", 0), del("/a", -1)},
			err:  proto.ErrNotEmpty,
			want: []opWant{failed(proto.ErrOK), failed(proto.ErrOK), failed(proto.ErrNotEmpty)}},
		{name: "delete sees children deleted before it",
			setup: func(h *harness) { h.create("/a", ""); h.create("/a/b", "") },
			ops:   []Op{del("/a/b", -1), del("/a", -1)},
			want:  []opWant{ok(proto.OpDelete, "/a/b"), ok(proto.OpDelete, "/a")}},
		{name: "create under a node deleted before it",
			setup: func(h *harness) { h.create("/a", "") },
			ops:   []Op{del("/a", -1), create("/a/b", 0)},
			err:   proto.ErrNoNode,
			want:  []opWant{failed(proto.ErrOK), failed(proto.ErrNoNode)}},
		{name: "ephemeral parent created in the same multi",
			ops:  []Op{create("/e", proto.ModeEphemeral), create("/e/x", 0)},
			err:  proto.ErrNoChildrenForEphemerals,
			want: []opWant{failed(proto.ErrOK), failed(proto.ErrNoChildrenForEphemerals)}},
		{name: "empty multi", want: []opWant{}},
		{name: "create2 is answered as create",
			ops:  []Op{{Code: proto.OpCreate2, Path: "/a", ACL: open}},
			want: []opWant{ok(proto.OpCreate, "/a")}},
		{name: "container flags make a createContainer",
			ops:  []Op{create("/c", proto.ModeContainer)},
			want: []opWant{ok(proto.OpCreateContainer, "/c")},
			check: func(t *testing.T, h *harness, r Result) {
				if h.tr.nodes["/c"].owner != containerOwner {
					t.Fatal("not a container")
				}
			}},
		{name: "createTTL without TTL flags is a plain create",
			ops:  []Op{{Code: proto.OpCreateTTL, Path: "/a", ACL: open, TTL: 500}},
			want: []opWant{ok(proto.OpCreate, "/a")}},
		{name: "createTTL",
			ops:  []Op{{Code: proto.OpCreateTTL, Path: "/t", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: 500}},
			want: []opWant{ok(proto.OpCreateTTL, "/t")}},
		{name: "unknown flags fail the op",
			ops:  []Op{create("/a", 9)},
			err:  proto.ErrBadArguments,
			want: []opWant{failed(proto.ErrBadArguments)}},
		{name: "invalid ACL fails the op",
			ops:  []Op{create("/a", 0), {Code: proto.OpCreate, Path: "/b"}},
			err:  proto.ErrInvalidACL,
			want: []opWant{failed(proto.ErrOK), failed(proto.ErrInvalidACL)}},
		{name: "TTL flags on a plain create cannot be decoded",
			ops: []Op{create("/a", 0), create("/t", proto.ModePersistentWithTTL)},
			err: proto.ErrMarshallingError},
		{name: "setACL cannot be in a multi",
			ops: []Op{setACL("/", open, -1)},
			err: proto.ErrMarshallingError},
		{name: "deleteContainer cannot be in a multi",
			ops: []Op{{Code: proto.OpDeleteContainer, Path: "/a"}},
			err: proto.ErrMarshallingError},
		{name: "reads cannot be in a write multi",
			ops: []Op{{Code: proto.OpGetData, Path: "/"}},
			err: proto.ErrMarshallingError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.setup != nil {
				tc.setup(h)
			}
			before, zxid := state(h.tr), h.tr.LastZxid()
			r := h.multi(anyone, tc.ops...)
			if r.Err != tc.err {
				t.Fatalf("multi error %v, want %v", r.Err, tc.err)
			}
			if h.tr.LastZxid() != zxid+1 {
				t.Fatalf("last zxid %#x, want %#x: a multi consumes one zxid", h.tr.LastZxid(), zxid+1)
			}
			var got []opWant
			if r.Ops != nil {
				got = []opWant{}
				for _, o := range r.Ops {
					got = append(got, opWant{o.Code, o.Err, o.Path})
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("op results %v, want %v", got, tc.want)
			}
			if tc.err != proto.ErrOK {
				if after := state(h.tr); after != before {
					t.Fatalf("failed multi changed the tree:\nbefore:\n%s\nafter:\n%s", before, after)
				}
				if len(r.Events) != 0 {
					t.Fatalf("failed multi fired %v", r.Events)
				}
			}
			checkInvariants(t, h.tr)
			if tc.check != nil {
				tc.check(t, h, r)
			}
		})
	}
}

func TestMultiDoesNotTouchItsOps(t *testing.T) {
	h := newHarness(t)
	ops := []Op{{Code: proto.OpCreate2, Path: "/a", ACL: open, Flags: proto.ModeContainer}}
	h.multi(anyone, ops...)
	if ops[0].Code != proto.OpCreate2 {
		t.Fatalf("Prepare rewrote the caller's op to %v", ops[0].Code)
	}
}
