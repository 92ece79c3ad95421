package coord

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// conn is one client TCP connection. Its reader goroutine decodes packets
// and submits them to the pipeline; its writer goroutine drains the send
// queue the syncer fills.
type conn struct {
	s       *Server
	nc      net.Conn
	ip      string
	remote  string
	created time.Time

	// sess is set by the pipeline once the handshake is accepted; the reader
	// uses it to keep the session alive on every packet.
	sess atomic.Pointer[session]

	// Owned by the pipeline goroutine.
	auth      []proto.Id
	super     bool
	handshook bool // a connect request was processed (accepted or refused)
	dead      bool // refused or closed: drop further requests

	// owed is, per frameKind, what the frames queued for this connection
	// and not yet written to its socket cost (frame.charge), bounded by
	// Config.MaxQueuedBytes and Config.MaxQueuedEventBytes. The pipeline
	// adds, the writer subtracts once the bytes are in the socket.
	owed [frameKinds]atomic.Int64

	mu     sync.Mutex // guards the send queue below; a leaf lock
	queue  []frame
	closed bool
	wake   chan struct{}

	done chan struct{} // closed when the connection is closed

	// Statistics for cons/mntr, read without the pipeline.
	packetsIn   atomic.Int64
	packetsOut  atomic.Int64
	lastZxid    atomic.Int64
	lastOp      atomic.Int32 // proto.OpCode of the last reply (cons "lop")
	lastCxid    atomic.Int32 // xid of the last reply
	lastResp    atomic.Int64 // UnixMilli of the last reply
	lastLatency atomic.Int64 // ns
	latency     latencyStats
}

// outMsg is one packet to send: a reply header with an optional body, or a
// bare record (the connect response has no header).
type outMsg struct {
	hdr        proto.ReplyHeader
	body       proto.Record
	bare       bool // send body without a reply header
	closeAfter bool // close the connection once this is written
	kind       frameKind
	received   time.Time
}

// frameKind tells watch events from everything else a connection is sent,
// because the two are bounded separately: replies by Config.MaxQueuedBytes,
// events by Config.MaxQueuedEventBytes.
type frameKind uint8

const (
	replyFrame frameKind = iota // a reply, the connect response or a close marker
	eventFrame                  // a watch notification
	frameKinds
)

func (k frameKind) String() string {
	if k == eventFrame {
		return "watch event"
	}
	return "reply"
}

// boundName is the setting that bounds frames of kind k, for messages.
func (k frameKind) boundName() string {
	if k == eventFrame {
		return "max-queued-event-bytes"
	}
	return "max-queued-bytes"
}

// frameOverhead is what a queued frame costs the server besides its bytes:
// its entry in the connection's send queue and its delivery in a batch,
// each in a slice that append may have grown to twice its length. Charging
// it keeps the bounds on owed bytes bounds on memory for the smallest
// events too, whose bookkeeping outweighs their bytes: with only their
// bytes counted, 100-byte events held 1.6 times their bound in heap
// (TestNonReadingRecursiveWatcherIsClosed); charged this worst case, they
// hold about half of it.
const frameOverhead = 2 * int64(unsafe.Sizeof(frame{})+unsafe.Sizeof(delivery{}))

// frame is an outMsg encoded for the wire. Messages are encoded when they
// are queued, so what a connection owes is counted in real bytes and the
// records they were built from (child lists, data) are not kept alive.
type frame struct {
	b          []byte // length-prefixed packet; nil for a bare close marker
	closeAfter bool
	kind       frameKind
	received   time.Time
}

// charge is what f counts against its connection's bound while queued.
func (f *frame) charge() int64 { return int64(len(f.b)) + frameOverhead }

// encode turns m into a frame, using scratch (which it leaves holding
// the encoding) to build it: the frame itself is one allocation of
// exactly its size, where appending to a fresh slice would allocate and
// copy again each time the reply outgrew it.
func (m *outMsg) encode(scratch *proto.Encoder) frame {
	f := frame{closeAfter: m.closeAfter, kind: m.kind, received: m.received}
	if m.bare && m.body == nil {
		f.closeAfter = true // a close marker, nothing to write
		return f
	}
	scratch.Reset()
	scratch.Int(0) // length, patched below
	if !m.bare {
		m.hdr.Encode(scratch)
	}
	if m.body != nil {
		m.body.Encode(scratch)
	}
	b := append([]byte(nil), scratch.Bytes()...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	f.b = b
	return f
}

func newConn(s *Server, nc net.Conn, ip string) *conn {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := &conn{
		s:       s,
		nc:      nc,
		ip:      ip,
		remote:  nc.RemoteAddr().String(),
		created: time.Now(),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	c.latency.min.Store(-1)
	return c
}

// serve runs the connection: the writer in its own goroutine, the reader here.
func (c *conn) serve() {
	c.s.metrics.connections.Inc()
	defer c.s.metrics.connections.Dec()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.writeLoop()
	}()
	err := c.readLoop()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !c.s.closing.Load() {
		c.s.log.Info("closing connection", "remote", c.remote, "err", err)
	}
	c.close()
	wg.Wait()
	c.s.unregister(c)
	c.s.pipe.submitDetach(c)
}

// abort closes the connection with a reset, for a client that does not
// read: what it has not read is dropped at once instead of staying in the
// kernel's send buffer (up to net.ipv4.tcp_wmem's maximum, 4 MiB by
// default) while the kernel probes the client's zero window for minutes.
func (c *conn) abort() {
	if tc, ok := c.nc.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.close()
}

// close shuts the connection; safe to call more than once, from any goroutine.
func (c *conn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.queue = nil
	c.mu.Unlock()
	close(c.done)
	c.nc.Close()
}

// errBadPacket marks input that closes the connection (not the server).
var errBadPacket = errors.New("coord: bad packet")

func (c *conn) readLoop() error {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var lenBuf [4]byte
	first, handshake := true, true
	// A connection has HandshakeTimeout to send its whole ConnectRequest (or
	// a four-letter word); one that does not is closed, so idle sockets
	// cannot pile up before they hold a session (ZooKeeper closes
	// sessionless connections after 10 s).
	c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.HandshakeTimeout))
	for {
		if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
			return c.readErr(err, handshake)
		}
		n := int32(binary.BigEndian.Uint32(lenBuf[:]))
		if first {
			first = false
			if word, ok := fourLetterWord(lenBuf); ok {
				c.s.serveFourLetter(c, word)
				return io.EOF
			}
		}
		if n < 0 || int(n) > c.s.cfg.MaxRequestBytes {
			c.s.metrics.badPackets.Inc()
			return fmt.Errorf("%w: length %d outside 0..%d (max-request-bytes)", errBadPacket, n, c.s.cfg.MaxRequestBytes)
		}
		// Decoding copies what it keeps (proto.Decoder), so a packet that
		// fits the read buffer is decoded in place: no allocation and no
		// copy per request.
		var buf []byte
		var err error
		inPlace := int(n) <= r.Size()
		if inPlace {
			buf, err = r.Peek(int(n))
		} else {
			buf = make([]byte, n)
			_, err = io.ReadFull(r, buf)
		}
		if err != nil {
			return c.readErr(err, handshake)
		}
		if handshake {
			c.nc.SetReadDeadline(time.Time{}) // from now on the session timeout rules
		}
		c.packetsIn.Add(1)
		c.s.totals.packetsIn.Add(1)
		if sess := c.sess.Load(); sess != nil {
			sess.touch()
		}
		req, err := c.decode(buf, handshake)
		if inPlace {
			r.Discard(int(n))
		}
		handshake = false
		if err != nil {
			c.s.metrics.badPackets.Inc()
			return err
		}
		if !c.s.pipe.submit(req) {
			return net.ErrClosed
		}
	}
}

// readErr reports why reading stopped, naming a handshake that timed out.
func (c *conn) readErr(err error, handshake bool) error {
	var ne net.Error
	if handshake && errors.As(err, &ne) && ne.Timeout() {
		c.s.metrics.handshakeTimeouts.Inc()
		return fmt.Errorf("%w: no connect request within %v (handshake-timeout)", errBadPacket, c.s.cfg.HandshakeTimeout)
	}
	return err
}

// decode turns a packet into a pipeline request. The first packet of a
// connection is the handshake; every later one is header + body.
func (c *conn) decode(buf []byte, handshake bool) (*request, error) {
	now := time.Now()
	if handshake {
		var cr proto.ConnectRequest
		if err := proto.Decode(buf, &cr); err != nil {
			return nil, fmt.Errorf("%w: connect request: %v", errBadPacket, err)
		}
		return &request{conn: c, connect: &cr, received: now}, nil
	}
	d := proto.NewDecoder(buf)
	var hdr proto.RequestHeader
	hdr.Decode(d)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: request header: %v", errBadPacket, err)
	}
	req := &request{conn: c, hdr: hdr, received: now}
	rec, known := proto.NewRequest(hdr.Type)
	if !known {
		req.unknown = true // answered with Unimplemented, as ZooKeeper does
		return req, nil
	}
	if rec != nil {
		rec.Decode(d)
		if err := d.Err(); err != nil {
			// As ZooKeeper: a body that does not decode is answered with
			// MarshallingError and the connection stays usable; only broken
			// framing (length, handshake, header) closes it.
			c.s.log.Info("malformed request body", "remote", c.remote, "op", hdr.Type, "xid", hdr.Xid, "err", err)
			req.malformed = true
			return req, nil
		}
		req.body = rec
	}
	return req, nil
}

// owe reserves f's charge against the bound of its kind, for a frame
// about to be queued. It fails, reserving nothing, when the connection
// would then owe more than that bound.
func (c *conn) owe(f *frame) bool {
	owed, n := &c.owed[f.kind], f.charge()
	if owed.Add(n) > c.s.cfg.queueBound(f.kind) {
		owed.Add(-n)
		return false
	}
	return true
}

// send queues f for the writer. It never blocks the caller (the syncer).
// Its bytes were reserved with owe when the pipeline queued it.
func (c *conn) send(f frame) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, f)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) writeLoop() {
	w := bufio.NewWriterSize(c.nc, 64<<10)
	var batch []frame
	for {
		select {
		case <-c.done:
			return
		case <-c.wake:
		}
		c.mu.Lock()
		batch, c.queue = c.queue, batch[:0]
		c.mu.Unlock()
		closeAfter := false
		var written [frameKinds]int64
		for i := range batch {
			f := &batch[i]
			written[f.kind] += f.charge()
			if f.b != nil {
				if _, err := w.Write(f.b); err != nil {
					c.close()
					return
				}
				c.packetsOut.Add(1)
				c.s.totals.packetsOut.Add(1)
				if !f.received.IsZero() {
					c.recordLatency(time.Since(f.received))
				}
			}
			if f.closeAfter {
				closeAfter = true
				break
			}
		}
		clear(batch) // drop references to the frames
		if err := w.Flush(); err != nil {
			c.close()
			return
		}
		for k, n := range written {
			c.owed[k].Add(-n)
		}
		if closeAfter {
			c.close()
			return
		}
	}
}

func (c *conn) recordLatency(d time.Duration) {
	ns := d.Nanoseconds()
	c.lastLatency.Store(ns)
	c.latency.record(ns)
	c.s.totals.latency.record(ns)
	c.s.metrics.observeLatency(d)
}

// latencyStats accumulates request latencies without a lock.
type latencyStats struct {
	count, sum, min, max atomic.Int64 // ns; min is -1 until the first sample
}

func (l *latencyStats) record(ns int64) {
	l.count.Add(1)
	l.sum.Add(ns)
	for {
		m := l.min.Load()
		if (m >= 0 && ns >= m) || l.min.CompareAndSwap(m, ns) {
			break
		}
	}
	for {
		m := l.max.Load()
		if ns <= m || l.max.CompareAndSwap(m, ns) {
			break
		}
	}
}

// reset starts the statistics over (crst, srst). Concurrent samples may
// land on either side of it, as in ZooKeeper.
func (l *latencyStats) reset() {
	l.count.Store(0)
	l.sum.Store(0)
	l.min.Store(-1)
	l.max.Store(0)
}

// resetStats clears the connection's statistics for crst, to the values
// ZooKeeper's ServerCnxn.resetStats leaves (no last op, cxid and zxid -1).
func (c *conn) resetStats() {
	c.packetsIn.Store(0)
	c.packetsOut.Store(0)
	c.lastOp.Store(0)
	c.lastCxid.Store(-1)
	c.lastZxid.Store(-1)
	c.lastResp.Store(0)
	c.lastLatency.Store(0)
	c.latency.reset()
}

// millis returns min/avg/max in milliseconds, as the four-letter words show them.
func (l *latencyStats) millis() (min, avg, max float64) {
	n := l.count.Load()
	if n == 0 {
		return 0, 0, 0
	}
	return float64(max64(l.min.Load(), 0)) / 1e6, float64(l.sum.Load()) / float64(n) / 1e6, float64(l.max.Load()) / 1e6
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// serverTotals are the server-wide counters behind srvr and mntr; unlike a
// connection's they outlive the connection.
type serverTotals struct {
	packetsIn, packetsOut atomic.Int64
	latency               latencyStats
}
