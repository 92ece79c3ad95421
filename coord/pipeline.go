package coord

import (
	"crypto/hmac"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-dev/shepherd/coord/proto"
	"github.com/shepherd-dev/shepherd/coord/tree"
	"github.com/shepherd-dev/shepherd/coord/wal"
	"github.com/shepherd-dev/shepherd/coord/watch"
)

const (
	// maxBatch caps how many queued requests the pipeline handles before
	// it looks at the syncer again.
	maxBatch = 1024
	// maxPendingTxns and maxPendingOuts cap a batch that grows while the
	// syncer is busy: past them the pipeline stops taking requests until
	// the disk catches up.
	maxPendingTxns = 4 * maxBatch
	maxPendingOuts = 16 * maxBatch
	// housekeepingInterval is how often sessions are checked for expiry.
	housekeepingInterval = 100 * time.Millisecond
	// reapInterval is how often empty containers and expired TTL nodes are
	// removed. ZooKeeper checks every 60 s; a second is prompt for users
	// and still leaves a client that empties a container and immediately
	// re-creates a child in it (kazoo's Lock does) a wide margin.
	reapInterval = time.Second
)

// request is one unit of pipeline work: a client packet, or a closure from
// another goroutine that needs the pipeline's state.
type request struct {
	conn      *conn
	connect   *proto.ConnectRequest
	hdr       proto.RequestHeader
	body      proto.Record
	unknown   bool // an op code we do not serve
	malformed bool // the body did not decode
	received  time.Time
	fn        func()
}

// delivery is a packet for one connection, released after its batch is durable.
type delivery struct {
	conn  *conn
	frame frame
}

type loggedTxn struct {
	zxid int64
	data []byte
}

// batch is what the pipeline hands the syncer: transactions to make durable
// and the replies that may leave only after that.
type batch struct {
	txns     []loggedTxn
	outs     []delivery
	snapshot *tree.Frozen
}

func (b *batch) empty() bool { return len(b.txns) == 0 && len(b.outs) == 0 }

// pipeline owns the tree, the watch registry and the session table. Only its
// goroutine touches them.
type pipeline struct {
	s         *Server
	tree      *tree.Tree
	watches   *watch.Manager
	sessions  map[int64]*session
	nextID    int64
	reqs      chan *request
	cur       *batch
	sinceSnap int
	// scratch is where replies and events are encoded before being
	// copied into frames of their exact size.
	scratch *proto.Encoder
	// opRequests caches the requests_total counter of each op code, so
	// that counting a request is not a label lookup.
	opRequests map[proto.OpCode]prometheus.Counter
	lastReap   time.Time
}

func newPipeline(s *Server, t *tree.Tree) *pipeline {
	p := &pipeline{
		s:          s,
		tree:       t,
		watches:    watch.New(),
		sessions:   make(map[int64]*session),
		reqs:       make(chan *request, 4096),
		cur:        &batch{},
		scratch:    proto.NewEncoder(make([]byte, 0, 4096)),
		opRequests: make(map[proto.OpCode]prometheus.Counter),
	}
	// Sessions recovered from disk get a full timeout from now, as in
	// ZooKeeper: their clients may be reconnecting right now.
	p.nextID = firstSessionID(time.Now())
	for id, ms := range t.Sessions() {
		p.sessions[id] = newSession(id, time.Duration(ms)*time.Millisecond)
		if id >= p.nextID {
			p.nextID = id + 1
		}
	}
	return p
}

// submit queues a request; false once the server is closing.
func (p *pipeline) submit(r *request) bool {
	select {
	case p.reqs <- r:
		return true
	case <-p.s.ctx.Done():
		return false
	}
}

// query runs fn on the pipeline goroutine and waits for it.
func (p *pipeline) query(fn func()) error {
	done := make(chan struct{})
	if !p.submit(&request{fn: func() { fn(); close(done) }}) {
		return ErrClosed
	}
	select {
	case <-done:
		return nil
	case <-p.s.ctx.Done():
		return ErrClosed
	}
}

// submitDetach tells the pipeline a connection is gone (see detach).
func (p *pipeline) submitDetach(c *conn) {
	p.submit(&request{fn: func() { p.detach(c) }})
}

// detach closes c and takes it from its session, if it is still the
// session's connection (a reconnect may have replaced it). The session
// lives on, with its watches, until it expires or its client reattaches.
func (p *pipeline) detach(c *conn) {
	c.dead = true
	c.close()
	if sess := c.sess.Load(); sess != nil && sess.conn == c {
		sess.conn = nil
	}
}

func (p *pipeline) run() {
	defer close(p.s.syncer.in)
	tick := time.NewTicker(housekeepingInterval)
	defer tick.Stop()
	for {
		// While the syncer is busy (an fsync), the current batch keeps
		// growing; the syncer takes all of it the moment it is free, so
		// one fsync covers everything that arrived during the last one.
		var toSyncer chan<- *batch
		if !p.cur.empty() {
			toSyncer = p.s.syncer.in
		}
		select {
		case <-p.s.ctx.Done():
			return
		case r := <-p.reqs:
			p.handle(r)
			p.drain()
		case toSyncer <- p.cur:
			p.cur = p.s.syncer.reuse()
			continue
		case <-tick.C:
			p.housekeeping(time.Now())
		}
		p.flush()
	}
}

// drain handles what is already queued, so that one fsync covers it all.
func (p *pipeline) drain() {
	for i := 1; i < maxBatch; i++ {
		select {
		case r := <-p.reqs:
			p.handle(r)
		default:
			return
		}
	}
}

// flush offers the current batch to the syncer. A free syncer takes it at
// once. A busy one takes it, grown by what arrives meanwhile, when it is
// free (see run), unless the batch is due a snapshot or has reached
// maxPendingTxns or maxPendingOuts: then the pipeline waits for the
// syncer, which pushes back on clients faster than the disk.
func (p *pipeline) flush() {
	b := p.cur
	if b.empty() {
		return
	}
	if p.sinceSnap >= p.s.cfg.SnapCount && p.s.syncer.snapshotIdle() {
		// The snapshot is the tree as of the batch's last transaction, so
		// the batch may not grow after the freeze: hand it over now.
		started := time.Now()
		b.snapshot = p.tree.Freeze()
		p.sinceSnap = 0
		p.s.metrics.freezeSeconds.Observe(time.Since(started).Seconds())
	} else if len(b.txns) < maxPendingTxns && len(b.outs) < maxPendingOuts {
		select {
		case p.s.syncer.in <- b:
			p.cur = p.s.syncer.reuse()
		default: // the syncer is busy; run hands the batch over later
		}
		return
	}
	select {
	case p.s.syncer.in <- b:
	case <-p.s.ctx.Done():
		return
	}
	p.cur = p.s.syncer.reuse()
}

// out queues a packet for c, to be sent once the current batch is durable.
// A connection that would then owe its client more replies than
// Config.MaxQueuedBytes, or more events than Config.MaxQueuedEventBytes,
// is cut off instead (see cutOff): its client is not reading.
func (p *pipeline) out(c *conn, m outMsg) {
	select {
	case <-c.done:
		return // closed: nobody will write it
	default:
	}
	f := m.encode(p.scratch)
	if !c.owe(&f) {
		p.cutOff(c, f.kind)
		return
	}
	p.cur.outs = append(p.cur.outs, delivery{conn: c, frame: f})
}

// cutOff closes the connection of a client that does not read, with a
// reset (conn.abort), and detaches it: nothing more is queued for it, and
// what was queued is freed once the writer lets go of it. The session's
// watches are dropped, as ZooKeeper's removeCnxn drops a closed
// connection's: the events they fired are lost, so the client has to
// re-send them (setWatches, with the last zxid it saw) to learn what
// changed, and until then they would only be evaluated on every write for
// nobody. The session itself lives on until it expires or its client
// reconnects, as in ZooKeeper.
func (p *pipeline) cutOff(c *conn, k frameKind) {
	var session string
	if sess := c.sess.Load(); sess != nil && sess.conn == c {
		session = fmt.Sprintf("%#x", sess.id)
		p.watches.RemoveSession(sess.id)
	}
	p.s.log.Warn("client is not reading its replies and events; closing its connection and dropping its session's watches",
		"remote", c.remote, "session", session, "queue", k.String(), "owed_bytes", c.owed[k].Load(),
		"max_bytes", p.s.cfg.queueBound(k), "setting", k.boundName())
	p.s.metrics.slowClientsClosed.Inc()
	c.abort()
	p.detach(c)
}

// reply queues a reply with the header ZooKeeper would send.
func (p *pipeline) reply(r *request, err proto.ErrCode, body proto.Record) {
	p.out(r.conn, outMsg{
		hdr:      proto.ReplyHeader{Xid: r.hdr.Xid, Zxid: p.tree.LastZxid(), Err: err},
		body:     body,
		received: r.received,
	})
	c := r.conn
	c.lastZxid.Store(p.tree.LastZxid())
	c.lastOp.Store(int32(r.hdr.Type))
	c.lastCxid.Store(r.hdr.Xid)
	c.lastResp.Store(r.received.UnixMilli())
}

// commit logs txn (in the current batch), applies it and fires its watches.
func (p *pipeline) commit(txn *tree.Txn) tree.Result {
	data := tree.EncodeTxn(txn)
	if len(data) > wal.MaxRecordBytes && txn.Type() != proto.OpCloseSession {
		// MaxRequestBytes keeps requests well under the record limit, but a
		// transaction can outgrow its request (an "auth" ACL expands to
		// every identity of the caller). Refuse it rather than hand the log
		// a record it must reject, which would stop the server.
		p.s.log.Warn("refusing a write whose log record would be too large", "session", fmt.Sprintf("%#x", txn.Session()),
			"op", txn.Type().String(), "bytes", len(data), "max_bytes", wal.MaxRecordBytes)
		return tree.Result{Err: proto.ErrBadArguments}
	}
	p.cur.txns = append(p.cur.txns, loggedTxn{zxid: txn.Zxid(), data: data})
	res := p.tree.Apply(txn)
	p.sinceSnap++
	p.s.metrics.txns.Inc()
	for _, ev := range res.Events {
		p.notify(p.watches.Trigger(ev.Type, ev.Path), ev.ACL)
	}
	return res
}

// notify queues watch events for the connected sessions among fired that
// may read the node the event is about (acl is its ACL). A session that is
// away gets nothing: on reconnect its client re-sends its watches with
// setWatches and learns what changed then, as in ZooKeeper.
//
// The READ check is ZooKeeper's fix for CVE-2024-23944 (3.8.4, 3.9.2):
// without it a persistent, recursive, child or exists watch tells a session
// the names of nodes it may not read. As there, a one-shot watch that
// fires is consumed even when its event is withheld, and the check uses
// the identities the connection holds when the event happens.
func (p *pipeline) notify(fired []watch.Fired, acl []proto.ACL) {
	for _, f := range fired {
		sess := p.sessions[f.Session]
		if sess == nil || sess.conn == nil {
			continue
		}
		if caller := p.caller(sess.conn); !caller.CanRead(acl) {
			p.s.metrics.notificationsWithheld.Inc()
			continue
		}
		p.notifyConn(sess.conn, f.Type, f.Path)
	}
}

func (p *pipeline) notifyConn(c *conn, typ proto.EventType, path string) {
	p.out(c, outMsg{
		hdr:  proto.ReplyHeader{Xid: proto.XidNotification, Zxid: -1},
		body: &proto.WatcherEvent{Type: typ, State: proto.StateSyncConnected, Path: path},
		kind: eventFrame,
	})
	p.s.metrics.notifications.Inc()
}

// countRequest counts one request of op in requests_total. Op codes
// outside the protocol share the label "unknown": a client may send any
// int32, and one label per value would let it grow the metric without
// bound.
func (p *pipeline) countRequest(op proto.OpCode) {
	c := p.opRequests[op] // a known op's counter, after its first request
	if c == nil {
		label := op.String()
		if !op.Known() {
			op, label = unknownOp, "unknown"
		}
		if c = p.opRequests[op]; c == nil {
			c = p.s.metrics.requests.WithLabelValues(label)
			p.opRequests[op] = c
		}
	}
	c.Inc()
}

// unknownOp stands for every op code outside the protocol in opRequests,
// which therefore holds at most one entry per known op code plus one.
const unknownOp proto.OpCode = -1 << 31

func (p *pipeline) nextZxid() int64 { return p.tree.LastZxid() + 1 }

func nowMs() int64 { return time.Now().UnixMilli() }

// housekeeping expires sessions and removes empty containers and expired
// TTL nodes; both are ordinary transactions, logged like client writes.
func (p *pipeline) housekeeping(now time.Time) {
	for _, sess := range p.sessions {
		if sess.expired(now) {
			p.s.log.Info("session expired", "session", fmt.Sprintf("%#x", sess.id), "timeout", sess.timeout)
			p.s.metrics.sessionsExpired.Inc()
			p.closeSession(sess)
		}
	}
	if now.Sub(p.lastReap) < reapInterval {
		return
	}
	p.lastReap = now
	for _, path := range p.tree.Reapable(now.UnixMilli()) {
		op := tree.Op{Code: proto.OpDeleteContainer, Path: path, Version: -1}
		p.commit(p.tree.Prepare(tree.Caller{Super: true}, p.nextZxid(), now.UnixMilli(), []tree.Op{op}, false))
	}
}

// closeSession ends a session: its ephemerals go (a logged transaction),
// its watches go, and its connection, if any, is closed after what is queued.
func (p *pipeline) closeSession(sess *session) {
	p.commit(p.tree.PrepareCloseSession(p.nextZxid(), nowMs(), sess.id))
	delete(p.sessions, sess.id)
	p.watches.RemoveSession(sess.id)
	if c := sess.conn; c != nil {
		c.dead = true
		p.out(c, outMsg{closeAfter: true, bare: true})
		sess.conn = nil
	}
}

// connect handles a handshake: a new session, or a client reattaching to
// an existing one (after a network blip or a server restart).
func (p *pipeline) connect(r *request) {
	c, cr := r.conn, r.connect
	c.handshook = true
	if cr.LastZxidSeen > p.tree.LastZxid() {
		// The client saw a newer state than ours: it was talking to another
		// server (or our disk lost data). ZooKeeper refuses the same way.
		p.s.log.Warn("refusing client that has seen a newer zxid", "remote", c.remote,
			"client_zxid", fmt.Sprintf("%#x", cr.LastZxidSeen), "server_zxid", fmt.Sprintf("%#x", p.tree.LastZxid()))
		c.dead = true
		p.out(c, outMsg{closeAfter: true, bare: true})
		return
	}
	timeout := p.s.negotiateTimeout(cr.TimeOut)
	resp := &proto.ConnectResponse{HasReadOnly: cr.HasReadOnly}
	c.auth = []proto.Id{{Scheme: "ip", ID: c.ip}}
	if cr.SessionID != 0 {
		sess := p.sessions[cr.SessionID]
		if sess != nil && sess.conn != nil && sess.conn != c {
			// As ZooKeeper: a reconnect names the session, so its old
			// connection is closed before the password is even checked.
			p.detach(sess.conn)
		}
		if sess == nil || !hmac.Equal(cr.Passwd, p.s.password(cr.SessionID)) {
			// Timeout 0 tells the client its session is gone.
			resp.Passwd = make([]byte, 16)
			c.dead = true
			p.out(c, outMsg{body: resp, bare: true, closeAfter: true})
			p.s.log.Info("refusing reconnect to an unknown or expired session", "session", fmt.Sprintf("%#x", cr.SessionID), "remote", c.remote)
			return
		}
		sess.timeout = timeout
		p.attach(c, sess)
		resp.TimeOut, resp.SessionID, resp.Passwd = int32(timeout.Milliseconds()), sess.id, p.s.password(sess.id)
		p.out(c, outMsg{body: resp, bare: true})
		return
	}
	id := p.nextID
	p.nextID++
	p.commit(p.tree.PrepareCreateSession(p.nextZxid(), nowMs(), id, int32(timeout.Milliseconds())))
	sess := newSession(id, timeout)
	p.sessions[id] = sess
	p.attach(c, sess)
	p.s.metrics.sessionsCreated.Inc()
	resp.TimeOut, resp.SessionID, resp.Passwd = int32(timeout.Milliseconds()), id, p.s.password(id)
	p.out(c, outMsg{body: resp, bare: true})
}

func (p *pipeline) attach(c *conn, sess *session) {
	sess.conn = c
	sess.touch()
	c.sess.Store(sess)
}

func (p *pipeline) caller(c *conn) tree.Caller {
	var id int64
	if sess := c.sess.Load(); sess != nil {
		id = sess.id
	}
	return tree.Caller{Session: id, Auth: c.auth, Super: c.super}
}
