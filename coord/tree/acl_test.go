package tree

import (
	"slices"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

func TestDigestID(t *testing.T) {
	// Values printed by ZooKeeper 3.8's DigestAuthenticationProvider.
	for _, tc := range []struct{ user, pw, want string }{
		{"super", "secret", "super:lK75jTNcA+U9vtVEw5vB51mj/w4="},
		{"u", "p", "u:Jq7wMyA/w2Vd5WIDAKdu4OIIFEQ="},
	} {
		if got := DigestID(tc.user, tc.pw); got != tc.want {
			t.Errorf("DigestID(%q, %q) = %q, want %q", tc.user, tc.pw, got, tc.want)
		}
	}
}

func TestAllowed(t *testing.T) {
	world := proto.Id{Scheme: "world", ID: "anyone"}
	ip := func(id string) proto.Id { return proto.Id{Scheme: "ip", ID: id} }
	from := func(addr string, more ...proto.Id) Caller {
		return Caller{Session: 1, Auth: append([]proto.Id{ip(addr)}, more...)}
	}
	entry := func(perms int32, id proto.Id) []proto.ACL { return []proto.ACL{{Perms: perms, Id: id}} }
	cases := []struct {
		name   string
		caller Caller
		acls   []proto.ACL
		perm   int32
		want   bool
	}{
		{"world", from("1.2.3.4"), entry(proto.PermRead, world), proto.PermRead, true},
		{"world lacks the permission", from("1.2.3.4"), entry(proto.PermRead, world), proto.PermWrite, false},
		{"any of the requested bits", from("1.2.3.4"), entry(proto.PermAdmin, world), proto.PermRead | proto.PermAdmin, true},
		{"world with another id matches nobody", from("1.2.3.4"), entry(proto.PermAll, proto.Id{Scheme: "world", ID: "x"}), proto.PermRead, false},
		{"empty ACL allows everything", from("1.2.3.4"), nil, proto.PermAdmin, true},
		{"digest", alice, entry(proto.PermWrite, aliceID), proto.PermWrite, true},
		{"other digest", bob, entry(proto.PermWrite, aliceID), proto.PermWrite, false},
		{"second entry", bob, append(entry(proto.PermWrite, aliceID), entry(proto.PermWrite, ip("10.0.0.0/8"))...), proto.PermWrite, true},
		{"exact ip", from("127.0.0.1"), entry(proto.PermRead, ip("127.0.0.1")), proto.PermRead, true},
		{"other ip", from("127.0.0.2"), entry(proto.PermRead, ip("127.0.0.1")), proto.PermRead, false},
		{"CIDR", from("10.200.3.4"), entry(proto.PermRead, ip("10.0.0.0/8")), proto.PermRead, true},
		{"outside CIDR", from("11.0.0.1"), entry(proto.PermRead, ip("10.0.0.0/8")), proto.PermRead, false},
		{"CIDR with host bits set", from("10.1.2.3"), entry(proto.PermRead, ip("10.9.9.9/8")), proto.PermRead, true},
		{"/0 matches every IPv4", from("8.8.8.8"), entry(proto.PermRead, ip("1.1.1.1/0")), proto.PermRead, true},
		{"/32", from("1.1.1.2"), entry(proto.PermRead, ip("1.1.1.1/32")), proto.PermRead, false},
		{"/12 boundary", from("172.31.255.255"), entry(proto.PermRead, ip("172.16.0.0/12")), proto.PermRead, true},
		{"/12 outside", from("172.32.0.0"), entry(proto.PermRead, ip("172.16.0.0/12")), proto.PermRead, false},
		{"IPv6 client never matches", from("::1"), entry(proto.PermRead, ip("0.0.0.0/0")), proto.PermRead, false},
		{"malformed expression", from("1.2.3.4"), entry(proto.PermRead, ip("1.2.3.4/40")), proto.PermRead, false},
		{"ip id in a digest entry", from("1.2.3.4"), entry(proto.PermRead, proto.Id{Scheme: "digest", ID: "1.2.3.4"}), proto.PermRead, false},
		{"auth entry matches nobody", alice, entry(proto.PermRead, proto.Id{Scheme: "auth", ID: ""}), proto.PermRead, false},
		{"super flag", Caller{Super: true}, entry(0, world), proto.PermAdmin, true},
		{"super identity", from("1.2.3.4", proto.Id{Scheme: "super", ID: ""}), entry(0, world), proto.PermAdmin, true},
	}
	for _, tc := range cases {
		if got := tc.caller.allowed(tc.acls, tc.perm); got != tc.want {
			t.Errorf("%s: allowed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestACLIdValidity(t *testing.T) {
	// Answers of ZooKeeper 3.8.0 to creates with these ids.
	cases := []struct {
		scheme, id string
		valid      bool
	}{
		{"ip", "127.0.0.1", true},
		{"ip", "10.0.0.0/8", true},
		{"ip", "127.0.0.1/33", false},
		{"ip", "127.0.0.1/+8", true},
		{"ip", "127.0.0.1/-0", true},
		{"ip", "+1.2.3.4", true},
		{"ip", "001.2.3.4", true},
		{"ip", "1.2.3.256", false},
		{"ip", "::1", false},
		{"ip", "1.2.3", false},
		{"ip", "1.2.3.4.5", false},
		{"ip", "1.2.3.4/", false},
		{"ip", "1.2.3.4/99999999999", false},
		{"ip", "", false},
		{"digest", "u:", false},
		{"digest", ":x", true},
		{"digest", "a:b:", true},
		{"digest", "a:b:c", false},
		{"digest", "ab", false},
		{"digest", "a::b", false},
		{"digest", ":", false},
		{"digest", "", false},
		{"world", "anyone", true},
		{"world", "", false},
		{"x509", "CN=a", false},
	}
	for _, tc := range cases {
		_, err := fixupACL(&anyone, acl(proto.PermAll, tc.scheme, tc.id))
		if got := err == proto.ErrOK; got != tc.valid {
			t.Errorf("%s:%q valid = %v, want %v", tc.scheme, tc.id, got, tc.valid)
		}
	}
}

func TestFixupACL(t *testing.T) {
	bobID := proto.Id{Scheme: "digest", ID: DigestID("bob", "pw")}
	twoDigests := Caller{Auth: []proto.Id{{Scheme: "ip", ID: "1.1.1.1"}, aliceID, {Scheme: "super", ID: ""}, bobID}}
	cases := []struct {
		name   string
		caller Caller
		in     []proto.ACL
		want   []proto.ACL
		err    proto.ErrCode
	}{
		{"world", anyone, open, open, proto.ErrOK},
		{"nil", anyone, nil, nil, proto.ErrInvalidACL},
		{"auth with one digest", alice, acl(proto.PermRead, "auth", ""), []proto.ACL{{Perms: proto.PermRead, Id: aliceID}}, proto.ErrOK},
		{"auth id is ignored", alice, acl(proto.PermRead, "auth", "whatever"), []proto.ACL{{Perms: proto.PermRead, Id: aliceID}}, proto.ErrOK},
		{"auth with two digests, ip and super skipped", twoDigests, acl(proto.PermAll, "auth", ""),
			[]proto.ACL{{Perms: proto.PermAll, Id: aliceID}, {Perms: proto.PermAll, Id: bobID}}, proto.ErrOK},
		{"auth with only an ip", anyone, acl(proto.PermAll, "auth", ""), nil, proto.ErrInvalidACL},
		{"order kept, duplicates dropped", alice,
			[]proto.ACL{{Perms: 1, Id: aliceID}, open[0], {Perms: 1, Id: aliceID}},
			[]proto.ACL{{Perms: 1, Id: aliceID}, open[0]}, proto.ErrOK},
		{"same id, other perms are distinct", alice,
			[]proto.ACL{{Perms: 1, Id: aliceID}, {Perms: 2, Id: aliceID}},
			[]proto.ACL{{Perms: 1, Id: aliceID}, {Perms: 2, Id: aliceID}}, proto.ErrOK},
		{"one bad entry spoils all", alice, append(acl(1, "ip", "1.2.3.4"), acl(1, "ip", "x")...), nil, proto.ErrInvalidACL},
	}
	for _, tc := range cases {
		got, err := fixupACL(&tc.caller, tc.in)
		if err != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("%s: fixupACL = %v, %v; want %v, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestGetACL(t *testing.T) {
	h := newHarness(t)
	mixed := []proto.ACL{{Perms: proto.PermAdmin, Id: aliceID}, {Perms: proto.PermRead, Id: proto.Id{Scheme: "world", ID: "anyone"}}}
	h.must(anyone, Op{Code: proto.OpCreate, Path: "/mixed", ACL: mixed})
	h.must(anyone, Op{Code: proto.OpCreate, Path: "/secret", ACL: acl(proto.PermWrite, "digest", aliceID.ID)})
	redacted := []proto.ACL{{Perms: proto.PermAdmin, Id: proto.Id{Scheme: "digest", ID: "alice:x"}}, mixed[1]}
	cases := []struct {
		name   string
		caller Caller
		path   string
		want   []proto.ACL
		err    error
	}{
		{"READ without ADMIN hides digests", anyone, "/mixed", redacted, nil},
		{"ADMIN sees digests", alice, "/mixed", mixed, nil},
		{"super sees digests", root, "/mixed", mixed, nil},
		{"neither READ nor ADMIN", anyone, "/secret", nil, proto.ErrNoAuth},
		{"WRITE is not enough", alice, "/secret", nil, proto.ErrNoAuth},
		{"missing", anyone, "/nope", nil, proto.ErrNoNode},
	}
	for _, tc := range cases {
		got, st, err := h.tr.GetACL(tc.caller, tc.path)
		if err != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("%s: GetACL = %v, %v; want %v, %v", tc.name, got, err, tc.want, tc.err)
		}
		if err == nil && st != h.stat(tc.path) {
			t.Errorf("%s: stat %+v", tc.name, st)
		}
	}
	if again, _, _ := h.tr.GetACL(alice, "/mixed"); !slices.Equal(again, mixed) {
		t.Fatal("redaction modified the stored ACL")
	}
}

func TestReplaceColonTail(t *testing.T) {
	// Java's id.replaceAll(":.*", ":x").
	for in, want := range map[string]string{
		"alice:abc=":    "alice:x",
		"noColon":       "noColon",
		":":             ":x",
		"a:b:c":         "a:x",
		"a:b\nc:d":      "a:x\nc:x",
		"a:b\r\nc":      "a:x\r\nc",
		"a:b\u2028c:d":  "a:x\u2028c:x",
		"é:ü\u0085z:y":  "é:x\u0085z:x",
		"trailing:\n":   "trailing:x\n",
		"multi::colons": "multi:x",
	} {
		if got := replaceColonTail(in); got != want {
			t.Errorf("replaceColonTail(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestACLsAreShared(t *testing.T) {
	h := newHarness(t)
	for _, p := range []string{"/a", "/b", "/c"} {
		h.must(anyone, Op{Code: proto.OpCreate, Path: p, ACL: acl(proto.PermAll, "digest", aliceID.ID)})
	}
	if h.tr.nodes["/a"].acl != h.tr.nodes["/c"].acl {
		t.Fatal("equal ACLs are not interned")
	}
	lists := len(h.tr.acls.byKey)
	for _, p := range []string{"/a", "/b", "/c"} {
		h.must(root, del(p, -1))
	}
	if len(h.tr.acls.byKey) != lists-1 {
		t.Fatalf("%d interned ACLs after deleting every user of one, want %d", len(h.tr.acls.byKey), lists-1)
	}
	checkInvariants(t, h.tr)
}

// TestEventACLs: every watch event carries the ACL the server checks READ
// on before telling a watcher (ZooKeeper's CVE-2024-23944 fix): the node's
// own for created, changed and deleted, the parent's for a child-list
// change, and the deleted node's as it was.
func TestEventACLs(t *testing.T) {
	h := newHarness(t)
	private := []proto.ACL{{Perms: proto.PermAll, Id: aliceID}}
	h.must(alice, Op{Code: proto.OpCreate, Path: "/pub", ACL: open})
	h.must(alice, Op{Code: proto.OpCreate, Path: "/pub/secret", ACL: private})
	h.must(alice, Op{Code: proto.OpCreate, Path: "/pub/secret/kid", ACL: open})

	type want struct {
		typ  proto.EventType
		path string
		acl  []proto.ACL
	}
	check := func(name string, r Result, wants ...want) {
		t.Helper()
		if len(r.Events) != len(wants) {
			t.Fatalf("%s: events %v, want %d", name, r.Events, len(wants))
		}
		for i, w := range wants {
			ev := r.Events[i]
			if ev.Type != w.typ || ev.Path != w.path || !slices.Equal(ev.ACL, w.acl) {
				t.Errorf("%s: event %d = %v %s %v, want %v %s %v", name, i, ev.Type, ev.Path, ev.ACL, w.typ, w.path, w.acl)
			}
		}
	}
	check("create", h.do(alice, Op{Code: proto.OpCreate, Path: "/pub/secret/k2", ACL: open}),
		want{proto.EventNodeCreated, "/pub/secret/k2", open},
		want{proto.EventNodeChildrenChanged, "/pub/secret", private})
	check("setData", h.do(alice, set("/pub/secret", "x", -1)),
		want{proto.EventNodeDataChanged, "/pub/secret", private})
	h.must(alice, del("/pub/secret/kid", -1))
	h.must(alice, del("/pub/secret/k2", -1))
	check("delete", h.do(alice, del("/pub/secret", -1)),
		want{proto.EventNodeDeleted, "/pub/secret", private},
		want{proto.EventNodeChildrenChanged, "/pub", open})

	if anyone.CanRead(private) || !alice.CanRead(private) || !root.CanRead(private) || !anyone.CanRead(nil) {
		t.Errorf("CanRead: anyone %v alice %v super %v empty ACL %v; want false true true true",
			anyone.CanRead(private), alice.CanRead(private), root.CanRead(private), anyone.CanRead(nil))
	}
}
