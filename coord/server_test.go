package coord

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/proto"
	"github.com/shepherd-dev/shepherd/coord/tree"
)

var openACL = zk.WorldACL(zk.PermAll)

func TestCreateGetSetDelete(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	c := connect(t, srv.Addr(), 5*time.Second)

	if _, err := c.Create("/a", []byte("one"), 0, openACL); err != nil {
		t.Fatalf("create /a: %v", err)
	}
	data, st, err := c.Get("/a")
	if err != nil || string(data) != "one" {
		t.Fatalf("get /a = %q, %v; want \"one\"", data, err)
	}
	if st.Version != 0 || st.DataLength != 3 || st.Czxid != st.Mzxid || st.Czxid != st.Pzxid || st.EphemeralOwner != 0 {
		t.Fatalf("stat of a new node: %+v", st)
	}
	if _, err := c.Set("/a", []byte("two"), 5); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("set with wrong version: %v, want bad version", err)
	}
	st2, err := c.Set("/a", []byte("two"), 0)
	if err != nil || st2.Version != 1 || st2.Mzxid <= st.Mzxid || st2.Czxid != st.Czxid {
		t.Fatalf("set: %+v, %v", st2, err)
	}
	if _, err := c.Create("/a/b", nil, 0, openACL); err != nil {
		t.Fatalf("create child: %v", err)
	}
	if err := c.Delete("/a", -1); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete non-empty: %v, want not empty", err)
	}
	_, st3, _ := c.Get("/a")
	if st3.Cversion != 1 || st3.NumChildren != 1 || st3.Pzxid <= st2.Mzxid {
		t.Fatalf("parent stat after child create: %+v", st3)
	}
	for _, p := range []string{"/a/b", "/a"} {
		if err := c.Delete(p, -1); err != nil {
			t.Fatalf("delete %s: %v", p, err)
		}
	}
	if ok, _, err := c.Exists("/a"); ok || err != nil {
		t.Fatalf("exists after delete: %v %v", ok, err)
	}
}

// ZooKeeper numbers sequential children by how many children the parent
// has ever had created (deletes raise the visible cversion, not the
// counter): after one create and one delete the next suffix is 1. Verified
// against ZooKeeper 3.8.0 and covered again by coord/compat.
func TestSequentialNamesCountCreations(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	c := connect(t, srv.Addr(), 5*time.Second)
	c.Create("/q", nil, 0, openACL)
	c.Create("/q/x", nil, 0, openACL)
	c.Delete("/q/x", -1)
	for i := 1; i <= 3; i++ {
		p, err := c.Create("/q/item-", nil, zk.FlagSequence, openACL)
		if want := fmt.Sprintf("/q/item-%010d", i); err != nil || p != want {
			t.Fatalf("sequential create = %q, %v; want %s", p, err, want)
		}
	}
}

func TestWatchEventArrivesBeforeTheDataItAnnounces(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	watcher := connect(t, srv.Addr(), 5*time.Second)
	writer := connect(t, srv.Addr(), 5*time.Second)
	writer.Create("/w", []byte("0"), 0, openACL)
	for i := 1; i <= 20; i++ {
		_, _, ch, err := watcher.GetW("/w")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := writer.Set("/w", []byte{byte('0' + i%10)}, -1); err != nil {
			t.Fatal(err)
		}
		// go-zookeeper delivers events and replies in wire order: if the
		// get's answer already shows the new data, the event must be in.
		data, _, err := watcher.Get("/w")
		if err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDataChanged {
				t.Fatalf("event %v, want data changed", ev.Type)
			}
		default:
			t.Fatalf("round %d: saw data %q before the watch event", i, data)
		}
	}
}

func TestEphemeralsGoWithTheirSession(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	observer := connect(t, srv.Addr(), 5*time.Second)
	owner := connect(t, srv.Addr(), 5*time.Second)
	if _, err := owner.Create("/eph", nil, zk.FlagEphemeral, openACL); err != nil {
		t.Fatal(err)
	}
	_, st, ch, err := observer.ExistsW("/eph")
	if err != nil || st.EphemeralOwner != owner.SessionID() {
		t.Fatalf("exists: %+v %v; want owner %#x", st, err, owner.SessionID())
	}
	owner.Close()
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("event %v, want deleted", ev.Type)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ephemeral not deleted after its session closed")
	}
}

func TestSessionExpiryRemovesEphemerals(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	observer := connect(t, srv.Addr(), 5*time.Second)
	// A raw client that never pings: its 400 ms session must expire.
	rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 400})
	if rc.resp.TimeOut != 400 || rc.resp.SessionID == 0 {
		t.Fatalf("connect response %+v", rc.resp)
	}
	h, _ := rc.call(proto.OpCreate, &proto.CreateRequest{Path: "/x", ACL: proto.ACLOpenUnsafe, Flags: proto.ModeEphemeral})
	if h.Err != proto.ErrOK {
		t.Fatalf("create ephemeral: %v", h.Err)
	}
	_, _, ch, _ := observer.ExistsW("/x")
	select {
	case ev := <-ch:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("event %v", ev.Type)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("session did not expire")
	}
	// Reattaching to the expired session is refused with timeout 0.
	again := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 400, SessionID: rc.resp.SessionID, Passwd: rc.resp.Passwd})
	if again.resp.TimeOut != 0 || again.resp.SessionID != 0 {
		t.Fatalf("reconnect to expired session answered %+v", again.resp)
	}
}

func TestConnectAnswersInTheClientsFormat(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	for _, withRO := range []bool{false, true} {
		rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 1000, HasReadOnly: withRO, ReadOnly: withRO})
		if rc.resp.HasReadOnly != withRO {
			t.Errorf("client sent readOnly=%v: response has it %v", withRO, rc.resp.HasReadOnly)
		}
	}
	// Timeouts are clamped to 2..20 ticks.
	low := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 1})
	high := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 1 << 30})
	if low.resp.TimeOut != 200 || high.resp.TimeOut != 2000 {
		t.Fatalf("negotiated %d and %d, want 200 and 2000", low.resp.TimeOut, high.resp.TimeOut)
	}
}

func TestFailedMultiReportsEveryOp(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 5000})
	m := &proto.MultiRequest{Ops: []proto.MultiOp{
		{Type: proto.OpCreate, Op: &proto.CreateRequest{Path: "/m1", ACL: proto.ACLOpenUnsafe}},
		{Type: proto.OpDelete, Op: &proto.DeleteRequest{Path: "/missing", Version: -1}},
		{Type: proto.OpCreate, Op: &proto.CreateRequest{Path: "/m2", ACL: proto.ACLOpenUnsafe}},
	}}
	h, d := rc.call(proto.OpMulti, m)
	var resp proto.MultiResponse
	mustDecode(t, d, &resp)
	var codes []proto.ErrCode
	for _, r := range resp.Results {
		codes = append(codes, r.Err)
	}
	want := []proto.ErrCode{proto.ErrOK, proto.ErrNoNode, proto.ErrRuntimeInconsistency}
	if len(codes) != 3 || codes[0] != want[0] || codes[1] != want[1] || codes[2] != want[2] {
		t.Fatalf("multi results %v (header %v), want %v", codes, h.Err, want)
	}
	eh, _ := rc.call(proto.OpExists, &proto.ExistsRequest{Path: "/m1"})
	if eh.Err != proto.ErrNoNode {
		t.Fatalf("/m1 exists after a failed multi: %v", eh.Err)
	}
}

func TestUnknownOpIsUnimplementedAndCloses(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 5000})
	h, _ := rc.call(proto.OpCode(999), nil)
	if h.Err != proto.ErrUnimplemented {
		t.Fatalf("op 999: %v, want unimplemented", h.Err)
	}
	// Then, as ZooKeeper does, the server drops the connection.
	if _, err := rc.read(); err == nil {
		t.Fatal("connection still open after an unknown op code")
	}
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxRequestBytes = 1024
	srv := startServer(t, cfg)
	good := connect(t, srv.Addr(), 5*time.Second)

	cases := map[string][]byte{
		"oversized length":  {0x00, 0x10, 0x00, 0x00},
		"negative length":   {0xff, 0xff, 0xff, 0xf0},
		"garbage handshake": {0, 0, 0, 3, 1, 2, 3},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			nc, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.Write(b)
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 16)
			if _, err := nc.Read(buf); err == nil {
				t.Fatalf("server answered bad input instead of closing")
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("connection left open after bad input")
			}
		})
	}
	// A truncated body after a good handshake gets MarshallingError, as
	// from ZooKeeper, and the connection stays usable.
	rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 5000})
	rc.xid = 1
	rc.write([]byte{0, 0, 0, 1, 0, 0, 0, byte(proto.OpCreate), 0, 0, 0, 50})
	b, err := rc.read()
	if err != nil {
		t.Fatalf("truncated create body: %v", err)
	}
	var h proto.ReplyHeader
	if err := proto.Decode(b, &h); err != nil || h.Err != proto.ErrMarshallingError || h.Xid != 1 {
		t.Fatalf("truncated create body answered %+v (%v), want marshalling error for xid 1", h, err)
	}
	if h, _ := rc.call(proto.OpExists, &proto.ExistsRequest{Path: "/"}); h.Err != proto.ErrOK {
		t.Fatalf("exists / after a malformed body: %v", h.Err)
	}
	if _, err := good.Create("/still-fine", nil, 0, openACL); err != nil {
		t.Fatalf("other session affected by bad input: %v", err)
	}
}

func TestInvalidPathsAreBadArguments(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 5000})
	if h, _ := rc.call(proto.OpCreate, &proto.CreateRequest{Path: "/a", ACL: proto.ACLOpenUnsafe}); h.Err != proto.ErrOK {
		t.Fatalf("create /a: %v", h.Err)
	}
	// As in ZooKeeper, the parent is looked up first: these all have an
	// existing parent, so the path itself is what is wrong.
	for _, p := range []string{"", "a", "/a/", "/a/.", "/a/..", "/a\x00b"} {
		h, _ := rc.call(proto.OpCreate, &proto.CreateRequest{Path: p, ACL: proto.ACLOpenUnsafe})
		if h.Err != proto.ErrBadArguments {
			t.Errorf("create %q: %v, want bad arguments", p, h.Err)
		}
	}
}

func TestContainerAndTTLAreReapedPromptly(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	c := connect(t, srv.Addr(), 5*time.Second)
	if _, err := c.CreateContainer("/box", nil, zk.FlagContainer, openACL); err != nil {
		t.Fatalf("create container: %v", err)
	}
	c.Create("/box/item", nil, 0, openACL)
	c.Delete("/box/item", -1)
	checkFor(t, 3*time.Second, 50*time.Millisecond, func() error {
		if ok, _, _ := c.Exists("/box"); ok {
			return errors.New("empty container still there")
		}
		return nil
	})
	if _, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, openACL, 200*time.Millisecond); err != nil {
		t.Fatalf("create TTL node: %v", err)
	}
	checkFor(t, 3*time.Second, 50*time.Millisecond, func() error {
		if ok, _, _ := c.Exists("/ttl"); ok {
			return errors.New("expired TTL node still there")
		}
		return nil
	})
}

func TestDigestACLs(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	alice := connect(t, srv.Addr(), 5*time.Second)
	if err := alice.AddAuth("digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Create("/private", []byte("x"), 0, zk.DigestACL(zk.PermAll, "alice", "secret")); err != nil {
		t.Fatalf("create with digest ACL: %v", err)
	}
	other := connect(t, srv.Addr(), 5*time.Second)
	if _, _, err := other.Get("/private"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated get: %v, want no auth", err)
	}
	if _, _, err := alice.Get("/private"); err != nil {
		t.Fatalf("owner get: %v", err)
	}
}

func TestSuperDigestBypassesACLs(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.SuperDigest = tree.DigestID("super", "adminpw")
	srv := startServer(t, cfg)
	alice := connect(t, srv.Addr(), 5*time.Second)
	alice.AddAuth("digest", []byte("alice:secret"))
	alice.Create("/locked", []byte("x"), 0, zk.DigestACL(zk.PermAll, "alice", "secret"))
	admin := connect(t, srv.Addr(), 5*time.Second)
	admin.AddAuth("digest", []byte("super:adminpw"))
	if _, _, err := admin.Get("/locked"); err != nil {
		t.Fatalf("super get: %v", err)
	}
}

func TestRestartKeepsDataAndSessions(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.TickTime = 500 * time.Millisecond // sessions of up to 10 s
	srv := startServer(t, cfg)
	c := connect(t, srv.Addr(), 8*time.Second)
	c.Create("/keep", []byte("v"), 0, openACL)
	c.Create("/keep/eph", nil, zk.FlagEphemeral, openACL)
	_, before, _ := c.Get("/keep")
	sid := c.SessionID()
	addr := srv.Addr()
	srv.Close()

	cfg.Listen = addr
	srv2 := startServer(t, cfg)
	// The same client reconnects to the restarted server and keeps its
	// session. Its state may still read HasSession from before the restart
	// until it notices, so wait for a read to succeed, not for the state.
	var data []byte
	var after *zk.Stat
	checkFor(t, 8*time.Second, 50*time.Millisecond, func() error {
		var err error
		data, after, err = c.Get("/keep")
		return err
	})
	if c.SessionID() != sid {
		t.Fatalf("session changed across restart: %#x -> %#x", sid, c.SessionID())
	}
	if !bytes.Equal(data, []byte("v")) || *after != *before {
		t.Fatalf("after restart: %q %+v; want \"v\" %+v", data, after, before)
	}
	if ok, st, _ := c.Exists("/keep/eph"); !ok || st.EphemeralOwner != sid {
		t.Fatalf("ephemeral of a live session lost in restart")
	}
	_ = srv2
}

func TestFourLetterWords(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FourLetterWords = []string{"ruok", "srvr", "mntr"}
	srv := startServer(t, cfg)
	if got := fourLetter(t, srv.Addr(), "ruok"); got != "imok" {
		t.Errorf("ruok = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "srvr"); !strings.Contains(got, "Mode: standalone") || !strings.Contains(got, "Node count: ") {
		t.Errorf("srvr = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "mntr"); !strings.Contains(got, "zk_znode_count\t") {
		t.Errorf("mntr = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "dump"); !strings.Contains(got, "not in the whitelist") {
		t.Errorf("dump outside the whitelist = %q", got)
	}
}

func TestMaxClientConnsPerIP(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxClientConns = 2
	srv := startServer(t, cfg)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 2; i++ {
		rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 5000})
		conns = append(conns, rc.nc)
	}
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err == nil {
		t.Fatal("third connection from one IP was served")
	}
}

func countFiles(t *testing.T, dir, prefix string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			n++
		}
	}
	return n
}

func TestSnapshotsAndAutopurge(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.SnapCount = 50
	cfg.AutopurgeInterval = 100 * time.Millisecond
	srv := startServer(t, cfg)
	c := connect(t, srv.Addr(), 5*time.Second)
	for i := 0; i < 600; i++ {
		if _, err := c.Create(fmt.Sprintf("/n%04d", i), []byte("x"), 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
	// Snapshots were taken along the way and autopurge keeps the newest 3.
	checkFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		if n := countFiles(t, dir, "snapshot."); n != cfg.AutopurgeSnapRetainCount {
			return fmt.Errorf("%d snapshot files, want %d", n, cfg.AutopurgeSnapRetainCount)
		}
		return nil
	})
	_, before, _ := c.Get("/n0599")
	addr := srv.Addr()
	srv.Close()

	// Recovery from the newest snapshot plus the log after it.
	cfg.Listen = addr
	srv2 := startServer(t, cfg)
	c2 := connect(t, srv2.Addr(), 5*time.Second)
	kids, _, err := c2.Children("/")
	if err != nil || len(kids) != 601 { // 600 + /zookeeper
		t.Fatalf("after restart: %d children of /, %v; want 601", len(kids), err)
	}
	if _, after, _ := c2.Get("/n0599"); *after != *before {
		t.Fatalf("stat changed across restart: %+v -> %+v", before, after)
	}
}
