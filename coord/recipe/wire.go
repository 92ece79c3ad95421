package recipe

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
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
// One monitor serves one zk.Conn, across all the TCP connections that
// zk.Conn dials; per-connection parsing state lives in wireConn.
type wireMonitor struct {
	// watching reports whether the Session has watches outstanding; set
	// before the first dial.
	watching func() bool

	// dropped is set when the Session gives up this connection: its old
	// session is left to expire on the server, so go-zookeeper must not
	// dial again to reconnect into it (that also reopened the lastZxid
	// race of go-zookeeper/zk#35, see sendGate).
	dropped atomic.Bool

	mu        sync.Mutex
	dials     int       // TCP connections dialled so far
	gate      *sendGate // holds replies on the newest connection; nil if none
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
		m.mu.Lock()
		m.dials++
		var g *sendGate
		switch {
		case m.dials == 1:
			g = newSendGate(firstReplyWait)
		case m.watching != nil && m.watching():
			g = newSendGate(setWatchesWait)
		}
		m.gate = g
		m.mu.Unlock()
		return &wireConn{Conn: c, mon: m, gate: g, done: make(chan struct{}), pending: map[int32][]time.Time{}}, nil
	}
}

// errConnectionDropped is what a dropped connection's dialer answers.
var errConnectionDropped = errors.New("recipe: connection dropped by its session")

// setWatchesWait bounds how long a reconnection holds back replies waiting
// for go-zookeeper's setWatches (see sendGate); it is reached only when no
// watch was left to re-send after all.
const setWatchesWait = 300 * time.Millisecond

// firstReplyWait is how long a new session's first connection holds
// back replies after the handshake. go-zookeeper runs sendSetWatches on
// every connection, the first included, right after reporting the
// session: had replies to the caller's first watch requests already
// registered watches by then, it would read lastZxid while the receive
// goroutine writes it (go-zookeeper/zk#35, seen under -race). Held
// replies register nothing, so the connection goroutine finds no watch to
// re-send and reads nothing; the wait only has to outlast those few
// statements, and costs a new session at most this much on its first
// replies.
const firstReplyWait = 50 * time.Millisecond

// A sendGate holds back the replies of a reconnected connection until
// go-zookeeper has written its setWatches packet. go-zookeeper v1.0.4 reads
// lastZxid to build setWatches on its connection goroutine while its
// receive goroutine writes lastZxid for every reply (go-zookeeper/zk#35);
// requests queued while disconnected go out first, so their replies raced
// with that read. The receive goroutine now reads past the handshake only
// once setWatches is on the wire, which comes after the read: the gate's
// channel makes that order real, for the race detector too.
type sendGate struct {
	once sync.Once
	ch   chan struct{}
}

func newSendGate(timeout time.Duration) *sendGate {
	g := &sendGate{ch: make(chan struct{})}
	time.AfterFunc(timeout, g.open)
	return g
}

func (g *sendGate) open() { g.once.Do(func() { close(g.ch) }) }

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
		return
	}
	m.timeout = timeout
	m.passwd = passwd
	if sent.After(m.confirmed) {
		m.confirmed = sent
	}
}

// Reply xids with a meaning of their own in ZooKeeper's protocol.
const xidNotification = -1 // a watch event: not a reply to anything

// wireConn is one TCP connection of a monitored zk.Conn. go-zookeeper
// writes from one goroutine and reads from another; each side parses its
// own stream, and mu guards what they share.
type wireConn struct {
	net.Conn
	mon       *wireMonitor
	gate      *sendGate     // nil unless a first connection or a reconnection with watches to re-send
	done      chan struct{} // closed by Close, to release a Read held at the gate
	closeOnce sync.Once

	wr, rd frameScanner // owned by the writing and the reading goroutine

	mu          sync.Mutex
	connectSent time.Time
	pending     map[int32][]time.Time // send times by xid, oldest first

	// causal carries the order a round trip imposes to the race detector:
	// bumped before each write, read after each read. go-zookeeper v1.0.4
	// reads lastZxid for setWatches on its send goroutine and writes it on
	// its receive goroutine with only the socket between them
	// (go-zookeeper/zk#35), which the detector cannot see through; without
	// this every -race test that reconnects with watches set can fail.
	causal atomic.Int64
}

func (c *wireConn) Write(p []byte) (int, error) {
	// The time is taken before writing: the server cannot have received
	// the packet earlier, which keeps the expiry bound on the safe side.
	now := time.Now()
	c.causal.Add(1)
	n, err := c.Conn.Write(p)
	c.wr.feed(p[:n], func(first bool, head []byte) {
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
		if len(head) >= 8 && c.gate != nil {
			if op := int32(binary.BigEndian.Uint32(head[4:])); op == opSetWatches || op == opSetWatches2 {
				c.gate.open()
			}
		}
	})
	return n, err
}

// Close closes the connection and releases a Read held at the gate.
func (c *wireConn) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	return c.Conn.Close()
}

func (c *wireConn) Read(p []byte) (int, error) {
	if c.gate != nil && c.rd.frames > 0 { // past the handshake: see sendGate
		select {
		case <-c.gate.ch:
		case <-c.done:
		}
	}
	n, err := c.Conn.Read(p)
	c.causal.Load()
	c.rd.feed(p[:n], func(first bool, head []byte) {
		if first {
			c.mu.Lock()
			sent := c.connectSent
			c.mu.Unlock()
			// connect response: protocolVersion int32, timeOut int32,
			// sessionId int64, passwd buffer (int32 length + bytes).
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
			return
		}
		if len(head) < 4 {
			return
		}
		xid := int32(binary.BigEndian.Uint32(head))
		if xid == xidNotification {
			return
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
	})
	return n, err
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
// Bodies are skipped, not buffered.
type frameScanner struct {
	frames int // frames completed so far
	lenBuf [4]byte
	lenN   int
	left   int // body bytes still to come in the current frame
	head   [frameHead]byte
	headN  int
	want   int // head bytes to collect in the current frame
}

// feed consumes p and calls onHead once per frame, when its first
// min(length, frameHead) body bytes have been seen; first is true for the
// connection's first frame (the connect request or response).
func (f *frameScanner) feed(p []byte, onHead func(first bool, head []byte)) {
	for len(p) > 0 {
		if f.left == 0 && f.lenN < 4 { // reading a length prefix
			k := copy(f.lenBuf[f.lenN:], p)
			f.lenN += k
			p = p[k:]
			if f.lenN < 4 {
				return
			}
			f.left = int(int32(binary.BigEndian.Uint32(f.lenBuf[:])))
			f.headN = 0
			f.want = min(max(f.left, 0), frameHead)
			if f.left <= 0 { // an empty (or nonsensical) frame
				f.endFrame(onHead)
				continue
			}
		}
		k := min(len(p), f.left)
		if f.headN < f.want {
			f.headN += copy(f.head[f.headN:f.want], p[:k])
			if f.headN == f.want {
				onHead(f.frames == 0, f.head[:f.headN])
			}
		}
		f.left -= k
		p = p[k:]
		if f.left == 0 {
			f.frames++
			f.lenN = 0
		}
	}
}

func (f *frameScanner) endFrame(onHead func(first bool, head []byte)) {
	onHead(f.frames == 0, nil)
	f.frames++
	f.lenN = 0
	f.left = 0
}
