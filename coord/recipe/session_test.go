package recipe

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// expireSession ends s's session on the server the way a takeover does:
// it connects with the session's id and password — the server moves the
// session to the new connection and drops s's — and closes it. The
// server deletes the session's ephemeral nodes before it answers.
func expireSession(t testing.TB, s *Session, serverAddr string) {
	t.Helper()
	s.mu.Lock()
	h := s.cur
	s.mu.Unlock()
	id, passwd := h.mon.credentials()
	if id == 0 {
		t.Fatal("expireSession: the session has no id yet")
	}
	// The session's client reconnects at once when the server drops its
	// connection (eagerHosts), and ZooKeeper would hand the session back
	// to it before our closeSession: make it pause as go-zookeeper's own
	// host provider does, so that the takeover wins.
	h.hosts.mu.Lock()
	h.hosts.passArmed, h.hosts.free = false, 0
	h.hosts.mu.Unlock()
	c, err := net.DialTimeout("tcp", serverAddr, 5*time.Second)
	if err != nil {
		t.Fatalf("expireSession: dial: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId,
	// passwd, readOnly.
	req := binary.BigEndian.AppendUint32(nil, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, uint32(faultTimeout.Milliseconds()))
	req = binary.BigEndian.AppendUint64(req, uint64(id))
	req = binary.BigEndian.AppendUint32(req, uint32(len(passwd)))
	req = append(req, passwd...)
	req = append(req, 0)
	// closeSession: xid 1, opcode -11, no body. Sent with the connect
	// request in one write: the session's own client reconnects at once
	// when the server drops its connection, and would take the session
	// back before a closeSession sent after a round trip.
	close := binary.BigEndian.AppendUint32(nil, 1)
	close = binary.BigEndian.AppendUint32(close, uint32(0xfffffff5))
	if _, err := c.Write(append(frame(req), frame(close)...)); err != nil {
		t.Fatalf("expireSession: write: %v", err)
	}
	resp := readFrame(t, c)
	if len(resp) < 16 || int64(binary.BigEndian.Uint64(resp[8:])) != id {
		t.Fatalf("expireSession: server did not reopen session %#x: response %x", id, resp)
	}
	reply := readFrame(t, c)
	if len(reply) < 16 || int32(binary.BigEndian.Uint32(reply[12:])) != 0 {
		t.Fatalf("expireSession: closeSession failed: reply %x", reply)
	}
}

// frame prefixes a packet body, the concatenation of parts, with its
// length.
func frame(parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func readFrame(t testing.TB, c net.Conn) []byte {
	t.Helper()
	var l [4]byte
	if _, err := io.ReadFull(c, l[:]); err != nil {
		t.Fatalf("read frame: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(l[:]))
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read frame: %v", err)
	}
	return b
}

func TestSessionLifecycle(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		s := dial(t, tg.Addr, Options{SessionTimeout: 4 * time.Second})
		if st := s.State(); st != StateConnected {
			t.Fatalf("state after Dial = %v, want CONNECTED", st)
		}
		if s.ID() == 0 {
			t.Fatal("ID() = 0 after Dial")
		}
		if got := s.Timeout(); got != 4*time.Second {
			t.Errorf("Timeout() = %v, want the 4s asked for", got)
		}
		rec := recordStates(s)
		ctx := coordtest.Context(t, 10*time.Second)
		p := testPath(t)
		if err := s.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, p+"/e", nil, zk.FlagEphemeral, nil); err != nil {
			t.Fatal(err)
		}
		s.Close()
		rec.expect(t, 5*time.Second, StateClosed)
		if _, _, err := s.Get(ctx, p); !errors.Is(err, ErrClosed) {
			t.Errorf("Get after Close: %v, want ErrClosed", err)
		}
		if err := s.Retry(ctx, func() error { return zk.ErrConnectionClosed }); !errors.Is(err, ErrClosed) {
			t.Errorf("Retry after Close: %v, want ErrClosed", err)
		}
		other := dial(t, tg.Addr, Options{})
		if ok, _, err := other.Exists(ctx, p+"/e"); err != nil || ok {
			t.Errorf("ephemeral node after Close: exists=%v err=%v, want deleted at once", ok, err)
		}
	})
}

func TestSessionChroot(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 20*time.Second)
		root := testPath(t) + "/app"
		s := dial(t, tg.Addr+root, Options{})
		plain := dial(t, tg.Addr, Options{})
		if s.Chroot() != root {
			t.Fatalf("Chroot() = %q, want %q", s.Chroot(), root)
		}
		if ok, _, err := plain.Exists(ctx, root); err != nil || !ok {
			t.Fatalf("Dial did not create the chroot %s: exists=%v err=%v", root, ok, err)
		}

		// Paths go in and come back relative to the chroot.
		if err := s.EnsurePath(ctx, "/a/b"); err != nil {
			t.Fatal(err)
		}
		p, err := s.Create(ctx, "/a/b/n-", []byte("x"), zk.FlagSequence, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := "/a/b/n-0000000000"; p != want {
			t.Errorf("sequential create returned %q, want %q", p, want)
		}
		if data, _, err := plain.Get(ctx, root+p); err != nil || string(data) != "x" {
			t.Errorf("node at %s seen without chroot: data=%q err=%v", root+p, data, err)
		}
		kids, _, err := s.Children(ctx, "/")
		if err != nil || !slices.Equal(kids, []string{"a"}) {
			t.Errorf("Children(/) = %v, %v; want [a]", kids, err)
		}
		if ok, _, err := s.Exists(ctx, "/"); err != nil || !ok {
			t.Errorf("Exists(/) under chroot = %v, %v", ok, err)
		}

		// Watch events carry chroot-relative paths.
		_, _, dataW, err := s.GetW(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		_, _, childW, err := s.ChildrenW(ctx, "/a/b")
		if err != nil {
			t.Fatal(err)
		}
		_, _, existW, err := s.ExistsW(ctx, "/a/c")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Set(ctx, root+p, []byte("y"), -1); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Create(ctx, root+"/a/b/m", nil, zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Create(ctx, root+"/a/c", nil, zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			ch   <-chan zk.Event
			typ  zk.EventType
			path string
		}{
			{dataW, zk.EventNodeDataChanged, p},
			{childW, zk.EventNodeChildrenChanged, "/a/b"},
			{existW, zk.EventNodeCreated, "/a/c"},
		} {
			select {
			case ev := <-w.ch:
				if ev.Type != w.typ || ev.Path != w.path {
					t.Errorf("watch event %v %q, want %v %q", ev.Type, ev.Path, w.typ, w.path)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("no %v event for %s", w.typ, w.path)
			}
		}

		// Multi translates its ops and its created paths.
		res, err := s.Multi(ctx,
			&zk.CreateRequest{Path: "/a/q-", Flags: zk.FlagSequence},
			&zk.SetDataRequest{Path: "/a/c", Data: []byte("z"), Version: -1},
			&zk.CheckVersionRequest{Path: "/a/b", Version: 0},
			&zk.DeleteRequest{Path: "/a/b/m", Version: -1})
		if err != nil {
			t.Fatalf("multi: %v", err)
		}
		if want := "/a/q-0000000002"; res[0].String != want {
			t.Errorf("multi create returned %q, want %q", res[0].String, want)
		}
		if data, _, err := plain.Get(ctx, root+"/a/c"); err != nil || string(data) != "z" {
			t.Errorf("multi set not applied under the chroot: %q %v", data, err)
		}

		// A protected create is relative too.
		pp, err := s.CreateProtected(ctx, "/a/prot", nil, zk.FlagEphemeral, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ok, _, err := plain.Exists(ctx, root+pp); err != nil || !ok {
			t.Errorf("protected node %s not at %s: %v %v", pp, root+pp, ok, err)
		}
	})
}

func TestSessionSuspendedThenReconnected(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		proxy := newFaultProxy(t, tg.Addr)
		s := dial(t, proxy.Addr(), Options{SessionTimeout: 4 * time.Second})
		rec := recordStates(s)
		id := s.ID()
		ctx := coordtest.Context(t, 20*time.Second)
		p := testPath(t)
		if err := s.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, p+"/e", nil, zk.FlagEphemeral, nil); err != nil {
			t.Fatal(err)
		}
		proxy.Cut()
		rec.expect(t, 5*time.Second, StateSuspended, StateReconnected)
		if s.ID() != id {
			t.Errorf("session id changed from %#x to %#x over a reconnect", id, s.ID())
		}
		if ok, _, err := s.Exists(ctx, p+"/e"); err != nil || !ok {
			t.Errorf("ephemeral node after reconnect: exists=%v err=%v, want kept", ok, err)
		}
	})
}

func TestSessionLostOnServerExpiry(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		s := dial(t, tg.Addr, Options{SessionTimeout: 4 * time.Second})
		rec := recordStates(s)
		old := s.ID()
		ctx := coordtest.Context(t, 20*time.Second)
		p := testPath(t)
		if err := s.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, p+"/e", nil, zk.FlagEphemeral, nil); err != nil {
			t.Fatal(err)
		}
		_, genDone := s.generation()
		expireSession(t, s, tg.Addr)
		rec.expect(t, 10*time.Second, StateSuspended, StateLost, StateConnected)
		select {
		case <-genDone:
		default:
			t.Error("the lost generation's channel is still open")
		}
		if s.ID() == old || s.ID() == 0 {
			t.Errorf("ID() = %#x after Lost+Connected, want a new session (old %#x)", s.ID(), old)
		}
		if ok, _, err := s.Exists(ctx, p+"/e"); err != nil || ok {
			t.Errorf("ephemeral node of the expired session: exists=%v err=%v, want gone", ok, err)
		}
		// The new session works.
		if _, err := s.Create(ctx, p+"/e", nil, zk.FlagEphemeral, nil); err != nil {
			t.Errorf("create on the new session: %v", err)
		}
	})
}

// TestSessionLostBeforeServerExpiry partitions a session from its server
// and checks the promise the locks rely on: the Session declares itself
// lost before the server expires it — before anyone else could see its
// ephemeral nodes go.
func TestSessionLostBeforeServerExpiry(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		proxy := newFaultProxy(t, tg.Addr)
		s := dial(t, proxy.Addr(), Options{SessionTimeout: faultTimeout})
		observer := dial(t, tg.Addr, Options{})
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		if err := s.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, p+"/e", nil, zk.FlagEphemeral, nil); err != nil {
			t.Fatal(err)
		}
		ok, _, gone, err := observer.ExistsW(ctx, p+"/e")
		if err != nil || !ok {
			t.Fatalf("observer exists: %v %v", ok, err)
		}
		lostAt := make(chan time.Time, 1)
		s.Listen(func(st State) {
			if st == StateLost {
				lostAt <- time.Now()
			}
		})
		old := s.ID()
		partitioned := time.Now()
		proxy.Stall()
		var lost, deleted time.Time
		select {
		case lost = <-lostAt:
		case <-time.After(5 * faultTimeout):
			t.Fatalf("no LOST within %v of the partition", 5*faultTimeout)
		}
		select {
		case ev := <-gone:
			deleted = time.Now()
			if ev.Type != zk.EventNodeDeleted {
				t.Fatalf("observer got %v, want the node deleted by expiry", ev.Type)
			}
		case <-time.After(5 * faultTimeout):
			t.Fatalf("the server did not expire the partitioned session within %v", 5*faultTimeout)
		}
		t.Logf("partitioned at 0, lost declared at %v, server expired the session by %v",
			lost.Sub(partitioned).Round(time.Millisecond), deleted.Sub(partitioned).Round(time.Millisecond))
		if !lost.Before(deleted) {
			t.Errorf("LOST declared %v after the server deleted the session's node", lost.Sub(deleted))
		}
		// How long after the partition LOST comes is a timer's business
		// (a loaded machine fires it late); the promise is the order
		// above, which a late timer would break first.
		proxy.Release()
		coordtest.WaitFor(t, 10*time.Second, "a new session after the partition", func() error {
			if st := s.State(); st != StateConnected || s.ID() == old {
				return fmt.Errorf("state %v id %#x", st, s.ID())
			}
			return nil
		})
	})
}

// TestCreateProtectedAfterLostReply makes the reply of a protected create
// vanish: the server creates the node, the client sees a connection loss.
// The retry must find the node rather than make a second one.
func TestCreateProtectedAfterLostReply(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		for _, flags := range []int32{zk.FlagEphemeralSequential, zk.FlagPersistent} {
			t.Run(fmt.Sprint("flags=", flags), func(t *testing.T) {
				proxy := newFaultProxy(t, tg.Addr)
				s := dial(t, proxy.Addr(), Options{SessionTimeout: 4 * time.Second})
				observer := dial(t, tg.Addr, Options{})
				ctx := coordtest.Context(t, 20*time.Second)
				p := testPath(t)
				if err := s.EnsurePath(ctx, p); err != nil {
					t.Fatal(err)
				}
				proxy.StallReplies()
				type result struct {
					path string
					err  error
				}
				done := make(chan result, 1)
				go func() {
					path, err := s.CreateProtected(ctx, p+"/node-", []byte("d"), flags, nil)
					done <- result{path, err}
				}()
				coordtest.WaitFor(t, 5*time.Second, "the create to reach the server", func() error {
					kids, _, err := observer.Children(ctx, p)
					if err != nil || len(kids) == 0 {
						return fmt.Errorf("children %v err %v", kids, err)
					}
					return nil
				})
				proxy.Cut()
				proxy.Release()
				r := <-done
				if r.err != nil {
					t.Fatalf("CreateProtected: %v", r.err)
				}
				kids, _, err := observer.Children(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				if len(kids) != 1 || zpath.Join(p, kids[0]) != r.path {
					t.Fatalf("children after a retried protected create: %v, want only the returned %s", kids, r.path)
				}
				if _, name := zpath.Split(r.path); !protectedName.MatchString(name) {
					t.Errorf("protected name %q does not match %v", name, protectedName)
				}
			})
		}
	})
}

func TestSessionAuth(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 20*time.Second)
		acl := zk.DigestACL(zk.PermAll, "alice", "secret")
		s := dial(t, tg.Addr, Options{Auth: "alice:secret", ACL: acl})
		anon := dial(t, tg.Addr, Options{})
		p := testPath(t)
		if err := anon.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, p+"/private", []byte("x"), zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		if data, _, err := s.Get(ctx, p+"/private"); err != nil || string(data) != "x" {
			t.Errorf("owner reads %q, %v", data, err)
		}
		if _, _, err := anon.Get(ctx, p+"/private"); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous read of a digest-protected node: %v, want zk.ErrNoAuth", err)
		}
		if _, err := Dial(ctx, tg.Addr, Options{Auth: "no-colon"}); err == nil {
			t.Error("Dial accepted auth without user:password")
		}
	})
}

func TestDialErrors(t *testing.T) {
	for _, connect := range []string{"", "/chroot", "host", "host:1/bad/", "host:1/a//b", "host:1,,host:2"} {
		_, err := Dial(context.Background(), connect, Options{})
		if !errors.Is(err, ErrBadConnectString) {
			t.Errorf("Dial(%q) = %v, want ErrBadConnectString", connect, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	if _, err := Dial(ctx, addr, Options{Logger: coordtest.Logger(t)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial to a dead address: %v, want the context's deadline", err)
	}
}
