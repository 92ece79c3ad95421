package recipe

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// A wireMonitor watches the bytes of a go-zookeeper connection to learn
// what the client library does not tell: the negotiated session timeout,
// the session password, and — the point of it — the latest moment at
// which the server provably heard from this session.
//
// The server expires a session no earlier than one timeout after the last
// packet it received from it. A packet is provably received once its reply
// arrives; the server got it no earlier than when it was sent. So "send
// time of the newest answered packet + timeout" is a lower bound on the
// server's expiry time, measured on this process's monotonic clock. The
// Session declares the session Lost just before that bound while it cannot
// reach the server, so a lock holder stops before anybody else can be
// granted its lock: a partitioned holder learns of its loss in time, not
// after the fact.
//
// The monitor also keeps the session's last zxid in go-zookeeper's stead,
// which closes go-zookeeper/zk#35 by construction. In v1.0.4 the receive
// goroutine writes Conn.lastZxid for every reply (conn.go:848-849) with
// no lock, while the connection goroutine reads it to build setWatches
// (conn.go:614, sendSetWatches, called at conn.go:484 right after the
// receive goroutine is started at conn.go:466) and the connect request
// (conn.go:664). Nothing orders the read after the writes of the new
// connection's replies: the race detector reports it whenever a session
// has a watch when a connection starts — on a reconnection, or on a first
// connection whose early replies registered one before the connection
// goroutine got there. Holding replies back until setWatches is written
// cannot close it: a connection that has no watch to re-send writes no
// setWatches, so there is nothing to wait for but a clock.
//
// Instead the reply header's zxid is taken out of the stream before
// go-zookeeper sees it (wireConn.Read records it here and hands the
// library a zero, which conn.go:848 skips), and put back where the
// library would have sent it: wireConn.Write fills in the connect
// request's lastZxidSeen and setWatches' relativeZxid. The receive
// goroutine then never writes lastZxid; its only other writer is the
// connection goroutine itself on expiry (conn.go:708), the same goroutine
// as both reads, so no order between goroutines is needed at all, on any
// connection. Nothing else in the library uses a reply's zxid: request
// (conn.go:931) returns it and every caller drops it.
//
// The value written into a reconnection's requests is the zxid as it
// stood when that connection was dialled, before any of its own replies:
// the last one the previous connection saw. That is what the Java client
// sends (it primes a connection with setWatches ahead of queued
// requests), and it is safe: a watch re-sent relative to an older zxid
// can fire once more than needed, never miss a change. go-zookeeper's own
// read could pick up a reply of the new connection and miss one.
//
// A session's first connection is different: it has no earlier watches,
// so a setWatches it sends re-sends only watches its own replies set,
// which the server holds already — and re-sent relative to the dial-time
// zxid (0) each would fire at once for a node that merely exists
// (NodeDataChanged for any node changed since zxid 0): a change that did
// not happen, printed by `ctl watch`. There the newest reply's zxid is
// written instead. It is at least the zxid of every reply that
// registered a watch: Read records a reply's zxid before go-zookeeper
// parses it and registers the watch, and sendSetWatches reads the
// watches under the same lock the registration takes.
//
// One monitor serves one zk.Conn, across all the TCP connections that
// zk.Conn dials; per-connection parsing state lives in wireConn.
type wireMonitor struct {
	// dropped is set when the Session gives up this connection: its old
	// session is left to expire on the server, so go-zookeeper must not
	// dial again to reconnect into it.
	dropped atomic.Bool

	// lastZxid is the zxid of the newest reply to a request, as
	// go-zookeeper would keep it (conn.go:848); reset with the session.
	lastZxid atomic.Int64

	// connectTimeout bounds the wait for a connect response, as the Java
	// client's does (session timeout / number of servers); 0: go-zookeeper's
	// own bound. See wireConn.SetReadDeadline.
	connectTimeout time.Duration

	mu        sync.Mutex
	confirmed time.Time // send time of the newest packet the server answered
	sessionID int64     // from the latest connect response; 0 = none
	timeout   time.Duration
	passwd    []byte
}

// dialer returns a go-zookeeper Dialer whose connections report to m.
func (m *wireMonitor) dialer() func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		if m.dropped.Load() {
			return nil, errConnectionDropped
		}
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return m.wrap(c), nil
	}
}

// wrap makes c a monitored connection. go-zookeeper dials a connection
// only once the previous one's goroutines have ended (conn.go:485), so
// m.lastZxid is final for the connections before it.
func (m *wireMonitor) wrap(c net.Conn) *wireConn {
	w := &wireConn{Conn: c, mon: m, pending: map[int32][]time.Time{}}
	binary.BigEndian.PutUint64(w.seen[:], uint64(m.lastZxid.Load()))
	m.mu.Lock()
	w.fresh = m.sessionID == 0
	m.mu.Unlock()
	return w
}

// Dialer returns a go-zookeeper Dialer for one zk.Connect that keeps
// the session's last zxid out of go-zookeeper's receive goroutine, which
// closes go-zookeeper/zk#35 for code that uses go-zookeeper directly
// (see wireMonitor). Sessions of this package need no more: Dial does it.
// Each zk.Connect needs a Dialer of its own.
func Dialer() zk.Dialer { return (&wireMonitor{}).dialer() }

// errConnectionDropped is what a dropped connection's dialer answers.
var errConnectionDropped = errors.New("recipe: connection dropped by its session")

// snapshot returns what the monitor knows.
func (m *wireMonitor) snapshot() (confirmed time.Time, sessionID int64, timeout time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.confirmed, m.sessionID, m.timeout
}

func (m *wireMonitor) credentials() (int64, []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessionID, append([]byte(nil), m.passwd...)
}

func (m *wireMonitor) confirm(sent time.Time) {
	m.mu.Lock()
	if sent.After(m.confirmed) {
		m.confirmed = sent
	}
	m.mu.Unlock()
}

// connected records a connect response. A zero session id is the server's
// way of saying the session expired; it confirms nothing.
func (m *wireMonitor) connected(sent time.Time, sessionID int64, timeout time.Duration, passwd []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessionID = sessionID
	if sessionID == 0 {
		m.lastZxid.Store(0) // go-zookeeper starts the next session afresh (conn.go:708)
		return
	}
	m.timeout = timeout
	m.passwd = passwd
	if sent.After(m.confirmed) {
		m.confirmed = sent
	}
}

// wireConn is one TCP connection of a monitored zk.Conn. go-zookeeper
// writes from one goroutine at a time (the connection goroutine for the
// connect request, then the send goroutine) and reads from another (the
// connection goroutine for the connect response, then the receive
// goroutine); each side parses its own stream, and mu guards what they
// share.
type wireConn struct {
	net.Conn
	mon  *wireMonitor
	seen [8]byte // the monitor's lastZxid when dialled, big-endian
	// fresh: dialled with no session (the first connection, or the one
	// after an expiry), so no watch is older than this connection.
	fresh bool
	rel   [8]byte // the writing side's relativeZxid of the setWatches it writes

	wr, rd frameScanner // owned by the writing and the reading side
	out    []byte       // the writing side's copy of a packet it edits

	mu          sync.Mutex
	connectSent time.Time
	pending     map[int32][]time.Time // send times by xid, oldest first
}

// SetReadDeadline caps the deadline go-zookeeper sets for the connect
// response at the monitor's connectTimeout. go-zookeeper waits ten
// receive timeouts for it (conn.go:683: 200 s with a 30 s session), and a
// server can leave a handshake unanswered: ZooKeeper 3.8 accepts
// connections while it starts up and, failing to close one on its null
// database, keeps it open. The session would run out on that one
// connection; after the cap go-zookeeper dials again. Later deadlines,
// the receive goroutine's, are go-zookeeper's.
func (c *wireConn) SetReadDeadline(t time.Time) error {
	if d := c.mon.connectTimeout; d > 0 && c.rd.frames == 0 && !t.IsZero() {
		if bound := time.Now().Add(d); bound.Before(t) {
			t = bound
		}
	}
	return c.Conn.SetReadDeadline(t)
}

// Write sends p with the monitor's zxid in the fields go-zookeeper filled
// from its own lastZxid (see wireMonitor). A write the kernel takes only
// in part leaves the scanner ahead of the stream; go-zookeeper closes the
// connection on any write error, so the scanner is not used again.
func (c *wireConn) Write(p []byte) (int, error) {
	// The time is taken before writing: the server cannot have received
	// the packet earlier, which keeps the expiry bound on the safe side.
	now := time.Now()
	out := c.wr.scan(p, &c.out, c.requestZxid, func(first bool, head []byte) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if first { // the connect request has no request header
			c.connectSent = now
			return
		}
		if len(head) >= 4 {
			xid := int32(binary.BigEndian.Uint32(head))
			c.pending[xid] = append(c.pending[xid], now)
		}
	})
	n, err := c.Conn.Write(out)
	return n, err
}

// requestZxid puts back the zxid go-zookeeper would have written at body
// offset len(head) of a request: lastZxidSeen of the connect request
// (protocolVersion int32, lastZxidSeen int64, …) and relativeZxid of
// setWatches (xid int32, type int32, relativeZxid int64, …): the zxid
// when dialled, or on a fresh connection the newest reply's.
func (c *wireConn) requestZxid(first bool, head []byte) (byte, bool) {
	at := len(head)
	switch {
	case first && at >= 4 && at < 12:
		return c.seen[at-4], true
	case !first && at >= 8 && at < 16:
		op := int32(binary.BigEndian.Uint32(head[4:8]))
		if op != opSetWatches && op != opSetWatches2 {
			return 0, false
		}
		if at == 8 { // the field's first byte: choose its value (see wireMonitor)
			c.rel = c.seen
			if c.fresh {
				binary.BigEndian.PutUint64(c.rel[:], uint64(c.mon.lastZxid.Load()))
			}
		}
		return c.rel[at-8], true
	}
	return 0, false
}

// replyZxid zeroes the zxid of a reply to a request (xid int32, zxid
// int64, err int32) before go-zookeeper reads it, so that its receive
// goroutine never writes lastZxid (see wireMonitor). onReply records the
// real value from the untouched head.
func replyZxid(first bool, head []byte) (byte, bool) {
	at := len(head)
	if first || at < 4 || at >= 12 {
		return 0, false
	}
	return 0, int32(binary.BigEndian.Uint32(head)) >= 0
}

func (c *wireConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.rd.scan(p[:n], nil, replyZxid, c.onReply)
	return n, err
}

// onReply handles the head of a frame from the server.
func (c *wireConn) onReply(first bool, head []byte) {
	if first {
		c.onConnectResponse(head)
		return
	}
	if len(head) < 4 {
		return
	}
	xid := int32(binary.BigEndian.Uint32(head))
	if xid < 0 { // a watch event, a ping, an auth reply: not a request's
		return
	}
	if len(head) >= 12 {
		if zxid := int64(binary.BigEndian.Uint64(head[4:12])); zxid > 0 {
			c.mon.lastZxid.Store(zxid)
		}
	}
	c.mu.Lock()
	q := c.pending[xid]
	var sent time.Time
	if len(q) > 0 {
		sent = q[0]
		if len(q) == 1 {
			delete(c.pending, xid)
		} else {
			c.pending[xid] = q[1:]
		}
	}
	c.mu.Unlock()
	if !sent.IsZero() {
		c.mon.confirm(sent)
	}
}

// onConnectResponse reads protocolVersion int32, timeOut int32,
// sessionId int64, passwd buffer (int32 length + bytes).
func (c *wireConn) onConnectResponse(head []byte) {
	c.mu.Lock()
	sent := c.connectSent
	c.mu.Unlock()
	if len(head) < 16 {
		return
	}
	timeout := time.Duration(int32(binary.BigEndian.Uint32(head[4:]))) * time.Millisecond
	id := int64(binary.BigEndian.Uint64(head[8:]))
	var passwd []byte
	if len(head) >= 20 {
		if l := int(int32(binary.BigEndian.Uint32(head[16:]))); l > 0 && 20+l <= len(head) {
			passwd = append([]byte(nil), head[20:20+l]...)
		}
	}
	c.mon.connected(sent, id, timeout, passwd)
}

// frameHead is how much of a frame's body a scanner keeps: enough for a
// connect response with a 16-byte password, and for any request or reply
// header.
const frameHead = 36

// Op codes of the requests that re-send watches after a reconnect.
const (
	opSetWatches  = 101
	opSetWatches2 = 105
)

// frameScanner splits a byte stream of ZooKeeper frames (a 4-byte
// big-endian length, then the body) and reports the start of each body.
// Bodies past their head are skipped, not buffered.
type frameScanner struct {
	frames int // frames completed so far
	lenBuf [4]byte
	lenN   int
	left   int // body bytes still to come in the current frame
	head   [frameHead]byte
	headN  int
	want   int // head bytes to collect in the current frame
}

// An editFunc decides the body byte at offset len(head) of a frame from
// the bytes before it (as they came, before any edit): the new value, or
// false to leave it.
type editFunc func(first bool, head []byte) (byte, bool)

// scan consumes p, calls onHead once per frame when its first
// min(length, frameHead) body bytes have been seen (first is true for the
// connection's first frame, the connect request or response), and applies
// edit to the head bytes. With buf nil, p is edited in place and
// returned; otherwise p is left alone and an edited copy is made in *buf
// when an edit changes a byte. Either way the result holds the stream as
// edited.
func (f *frameScanner) scan(p []byte, buf *[]byte, edit editFunc, onHead func(first bool, head []byte)) []byte {
	out := p
	for i := 0; i < len(p); {
		if f.left == 0 && f.lenN < 4 { // reading a length prefix
			k := copy(f.lenBuf[f.lenN:], p[i:])
			f.lenN += k
			i += k
			if f.lenN < 4 {
				break
			}
			f.left = int(int32(binary.BigEndian.Uint32(f.lenBuf[:])))
			f.headN = 0
			f.want = min(max(f.left, 0), frameHead)
			if f.left <= 0 { // an empty (or nonsensical) frame
				f.endFrame(onHead)
				continue
			}
		}
		for f.headN < f.want && i < len(p) { // the head, a byte at a time
			first := f.frames == 0
			f.head[f.headN] = p[i] // before any edit: p may be out
			if b, ok := edit(first, f.head[:f.headN]); ok && out[i] != b {
				if buf != nil && &out[0] == &p[0] {
					*buf = append((*buf)[:0], p...)
					out = *buf
				}
				out[i] = b
			}
			f.headN++
			f.left--
			i++
			if f.headN == f.want {
				onHead(first, f.head[:f.headN])
			}
		}
		k := min(len(p)-i, f.left)
		f.left -= k
		i += k
		if f.left == 0 && f.lenN == 4 {
			f.frames++
			f.lenN = 0
		}
	}
	return out
}

func (f *frameScanner) endFrame(onHead func(first bool, head []byte)) {
	onHead(f.frames == 0, nil)
	f.frames++
	f.lenN = 0
	f.left = 0
}
