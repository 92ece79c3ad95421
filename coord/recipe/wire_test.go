package recipe

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// pieceConn is a net.Conn whose reads return a fixed stream in random
// pieces and whose writes are recorded.
type pieceConn struct {
	net.Conn
	r       *rand.Rand
	in      []byte
	written bytes.Buffer
}

func (c *pieceConn) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+c.r.IntN(9))], c.in)
	c.in = c.in[n:]
	return n, nil
}

func (c *pieceConn) Write(p []byte) (int, error) { return c.written.Write(p) }

// TestWireConnKeepsTheZxid: the bytes go-zookeeper reads carry no reply
// zxid, and the bytes it writes carry the monitor's — in the connect
// request and setWatches only — however the stream is cut into pieces.
// This is what keeps go-zookeeper's receive goroutine from ever writing
// Conn.lastZxid (go-zookeeper/zk#35; see wireMonitor).
func TestWireConnKeepsTheZxid(t *testing.T) {
	const seen = int64(0x0102030405060708)
	passwd := bytes.Repeat([]byte{7}, 16)
	connectReq := func(last int64) []byte {
		return frame(be32(0), be64(last), be32(4000), be64(0), be32(16), passwd)
	}
	setWatches := func(op int32, rel int64) []byte {
		return frame(be32(9), be32(op), be64(rel), be32(1), be32(2), []byte("/a"), be32(0), be32(0))
	}
	getData := frame(be32(1), be32(4), be32(2), []byte("/a"), []byte{1})
	requests := slices.Concat(connectReq(0), getData, setWatches(opSetWatches, 0), setWatches(opSetWatches2, 0))
	wantSent := slices.Concat(connectReq(seen), getData, setWatches(opSetWatches, seen), setWatches(opSetWatches2, seen))

	connectResp := func(id int64) []byte {
		return frame(be32(0), be32(4000), be64(id), be32(16), passwd)
	}
	reply := func(xid int32, zxid int64, body ...byte) []byte { return frame(be32(xid), be64(zxid), be32(0), body) }
	replies := slices.Concat(connectResp(0x77), reply(1, 0x55, 1, 2, 3), reply(-1, -1, 4), reply(-2, 0x66), reply(3, 0x58), reply(4, 0, 5))
	wantRead := slices.Concat(connectResp(0x77), reply(1, 0, 1, 2, 3), reply(-1, -1, 4), reply(-2, 0x66), reply(3, 0), reply(4, 0, 5))

	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		m := &wireMonitor{}
		m.lastZxid.Store(seen)
		fc := &pieceConn{r: r, in: slices.Clone(replies)}
		c := m.wrap(fc)

		in := slices.Clone(requests)
		for rest := in; len(rest) > 0; {
			k := min(len(rest), 1+r.IntN(11))
			if _, err := c.Write(rest[:k]); err != nil {
				t.Fatal(err)
			}
			rest = rest[k:]
		}
		if !bytes.Equal(in, requests) {
			t.Fatalf("trial %d: Write changed its argument", trial)
		}
		if got := fc.written.Bytes(); !bytes.Equal(got, wantSent) {
			t.Fatalf("trial %d: sent\n%x\nwant\n%x", trial, got, wantSent)
		}

		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, wantRead) {
			t.Fatalf("trial %d: go-zookeeper would read\n%x\nwant\n%x", trial, got, wantRead)
		}
		if z := m.lastZxid.Load(); z != 0x58 {
			t.Fatalf("trial %d: monitor's last zxid %#x, want 0x58 (last reply to a request with one)", trial, z)
		}
		if next := m.wrap(fc); binary.BigEndian.Uint64(next.seen[:]) != 0x58 {
			t.Fatalf("trial %d: next connection would send zxid %x, want 0x58", trial, next.seen)
		}
	}
}

// TestWireConnExpiryResetsTheZxid: a connect response that expires the
// session (id 0) starts the next session's zxid at 0, as go-zookeeper does.
func TestWireConnExpiryResetsTheZxid(t *testing.T) {
	m := &wireMonitor{}
	m.lastZxid.Store(99)
	c := m.wrap(&pieceConn{r: rand.New(rand.NewPCG(1, 1)), in: frame(be32(0), be32(0), be64(0), be32(0))})
	if _, err := io.ReadAll(c); err != nil {
		t.Fatal(err)
	}
	if z := m.lastZxid.Load(); z != 0 {
		t.Fatalf("zxid after an expired session's connect response: %d, want 0", z)
	}
}

// lastZxidOf reads go-zookeeper's own Conn.lastZxid. The field is
// unexported; reflect may read it. With the wire monitor in place only
// the connection goroutine writes it, and only on expiry, so reading it
// from the test races with nothing while no session expires; without the
// monitor every reply writes it and the race detector fails the test too.
func lastZxidOf(c *zk.Conn) int64 {
	return reflect.ValueOf(c).Elem().FieldByName("lastZxid").Int()
}

// TestGoZookeeperNeverWritesLastZxid floods new sessions with watch
// requests on their first connection, then cuts and restores the
// connection of each with watches set and requests in flight: the
// windows in which go-zookeeper v1.0.4 reads lastZxid for setWatches
// while its receive goroutine writes it (go-zookeeper/zk#35). The
// receive goroutine must never have written it, on any connection, and
// every watch whose node changed while the session was disconnected must
// still fire: the setWatches sent for it carries the right zxid.
func TestGoZookeeperNeverWritesLastZxid(t *testing.T) {
	const (
		sessions = 4
		nodes    = 60
		cuts     = 3
	)
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 60*time.Second)
		p := testPath(t)
		writer := dial(t, tg.Addr, Options{})
		if err := writer.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		paths := make([]string, nodes)
		for i := range paths {
			paths[i] = fmt.Sprintf("%s/n%03d", p, i)
			if _, err := writer.Create(ctx, paths[i], nil, zk.FlagPersistent, nil); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for i := range sessions {
			wg.Go(func() {
				proxy := newFaultProxy(t, tg.Addr)
				s := dial(t, proxy.Addr(), Options{Auth: fmt.Sprintf("u%d:pw", i), SessionTimeout: 6 * time.Second})
				floodAndCut(ctx, t, s, proxy, writer, paths, cuts)
				if z := lastZxidOf(rawConn(s)); z != 0 {
					t.Errorf("session %d: go-zookeeper's receive goroutine wrote lastZxid (%#x)", i, z)
				}
			})
		}
		wg.Wait()
	})
}

// rawConn is the Session's go-zookeeper connection.
func rawConn(s *Session) *zk.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur.conn
}

// floodAndCut sets a data watch on every path at once, straight after
// Dial, then cuts the connection cuts times. While disconnected it
// changes every other watched node and issues a burst of requests whose
// replies arrive on the new connection. After the reconnect exactly the
// changed nodes' watches fire. Watches are set on go-zookeeper's
// connection directly, so that its event channels are read in the order
// its receive goroutine fills them.
func floodAndCut(ctx context.Context, t *testing.T, s *Session, proxy *faultProxy, writer *Session, paths []string, cuts int) {
	c := rawConn(s)
	watches := make([]<-chan zk.Event, len(paths))
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Go(func() {
			_, _, ch, err := c.GetW(path)
			if err != nil {
				t.Errorf("getw %s: %v", path, err)
				return
			}
			watches[i] = ch
		})
	}
	wg.Wait()
	rec := recordStates(s)
	for round := range cuts {
		if t.Failed() {
			return
		}
		proxy.Stall()
		proxy.Cut()
		for i := 0; i < len(paths); i += 2 {
			if _, err := writer.Set(ctx, paths[i], fmt.Appendf(nil, "%d", round), -1); err != nil {
				t.Errorf("set %s: %v", paths[i], err)
				return
			}
		}
		var burst sync.WaitGroup
		for _, path := range paths {
			// Errors are expected: a request may go out on the cut
			// connection. What matters is the replies on the next one.
			burst.Go(func() { _, _, _ = s.Exists(ctx, path) })
		}
		proxy.Release()
		rec.expect(t, 10*time.Second, StateSuspended, StateReconnected)
		burst.Wait()
		for i := 0; i < len(paths); i += 2 {
			select {
			case ev := <-watches[i]:
				if ev.Type != zk.EventNodeDataChanged {
					t.Errorf("round %d: watch on %s: %v, want a data change", round, paths[i], ev)
				}
			case <-ctx.Done():
				t.Fatalf("round %d: the watch on %s, changed while disconnected, never fired", round, paths[i])
			}
		}
		// Events come before the replies to later requests: once this
		// reply is in, an unchanged node's watch fired too if it ever will.
		if _, _, err := c.Exists(paths[0]); err != nil {
			t.Fatalf("exists: %v", err)
		}
		for i := 1; i < len(paths); i += 2 {
			select {
			case ev := <-watches[i]:
				t.Fatalf("round %d: the watch on unchanged %s fired after the reconnect: %v (setWatches sent too old a zxid)", round, paths[i], ev)
			default:
			}
		}
		for i := 0; i < len(paths); i += 2 { // re-arm the fired half
			_, _, ch, err := c.GetW(paths[i])
			if err != nil {
				t.Fatalf("getw %s: %v", paths[i], err)
			}
			watches[i] = ch
		}
	}
}

// TestUnansweredHandshakeIsRetried: a server that accepts a connection
// and never answers its connect request, as ZooKeeper 3.8 can while it
// starts up, costs a Session one connect timeout (session timeout /
// servers), not go-zookeeper's ten receive timeouts: the client gives the
// connection up and dials another. For a 4 s session that is 4 s against
// go-zookeeper's 27 s, which the 20 s liveness bound below tells apart.
func TestUnansweredHandshakeIsRetried(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		proxy := newFaultProxy(t, tg.Addr)
		proxy.StallReplies() // connect requests arrive; no response leaves
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		dialed := make(chan error, 1)
		go func() {
			s, err := Dial(ctx, proxy.Addr(), Options{SessionTimeout: 4 * time.Second, Logger: coordtest.Logger(t)})
			if err == nil {
				s.Close()
			}
			dialed <- err
		}()
		coordtest.WaitFor(t, 20*time.Second, "a second connection after the unanswered handshake", func() error {
			if n := proxy.accepted.Load(); n < 2 {
				return fmt.Errorf("%d connections", n)
			}
			return nil
		})
		proxy.Release()
		if err := <-dialed; err != nil {
			t.Fatalf("Dial once the server answers: %v", err)
		}
	})
}

// TestSetWatchesOfAFirstConnectionIsRelativeToItsReplies: on a session's
// first connection go-zookeeper can send setWatches after replies of that
// connection registered watches (its connection goroutine reaches
// sendSetWatches late on a loaded machine). Relative to zxid 0, the
// server would fire each at once for a node that merely exists:
// `ctl watch -R` printed "NodeDataChanged /r" for a change nobody made
// (TestWatchRecursive, in CI). A first connection re-sends them relative
// to its newest reply; a reconnection still relative to the zxid it was
// dialled with, so that watches of the connection before miss nothing.
func TestSetWatchesOfAFirstConnectionIsRelativeToItsReplies(t *testing.T) {
	setWatches := frame(be32(9), be32(opSetWatches), be64(0), be32(1), be32(2), []byte("/r"), be32(0), be32(0))
	connectReq := frame(be32(0), be64(0), be32(4000), be64(0), be32(16), bytes.Repeat([]byte{7}, 16))
	relative := func(sent []byte) int64 {
		sent = sent[len(connectReq):]
		return int64(binary.BigEndian.Uint64(sent[4+8 : 4+16]))
	}
	connectResp := frame(be32(0), be32(4000), be64(0x77), be32(16), bytes.Repeat([]byte{7}, 16))
	watchReply := frame(be32(1), be64(0x40), be32(0), be32(0)) // an exists() that set a watch, at zxid 0x40
	for _, tt := range []struct {
		name     string
		session  int64 // the monitor's session when the connection is dialled
		lastZxid int64
		want     int64
	}{
		{"first connection", 0, 0, 0x40},
		{"reconnection", 0x77, 0x30, 0x30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := &wireMonitor{sessionID: tt.session}
			m.lastZxid.Store(tt.lastZxid)
			fc := &pieceConn{r: rand.New(rand.NewPCG(5, 6)), in: slices.Concat(connectResp, watchReply)}
			c := m.wrap(fc)
			if _, err := c.Write(connectReq); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadAll(c); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(setWatches); err != nil {
				t.Fatal(err)
			}
			if got := relative(fc.written.Bytes()); got != tt.want {
				t.Fatalf("setWatches relative to zxid %#x, want %#x", got, tt.want)
			}
		})
	}
}
