package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// The wire generator is a load generator for the rate workloads that
// costs little CPU per request, so that one generator core can keep a
// server core busy: go-zookeeper spends more CPU per request than either
// server does (goroutine and channel per call, a map of pending requests
// under a lock), so with it the generator, not the server, sets the pace
// on a two-core machine.
//
// It does what a real client does on the wire and nothing that would
// favour one server: every request is its own write system call (as
// go-zookeeper's and the Java client's send loops do; requests are never
// coalesced into one segment), replies are read as they come, and each
// session keeps Options.InFlight requests outstanding, the same closed
// loop as the go-zookeeper generator. A session that has handled the
// replies it has yields to the others before reading again, as separate
// client processes would. Pings keep idle sessions alive.

// wireOp describes one rate workload for the wire generator.
type wireOp struct {
	// request appends the body of the request slot issues as its seq-th
	// operation (counted per session, from 1) to enc and returns its op
	// code; rng is the session's.
	// A reply whose header says OK is the request done: that is also
	// how a failed multi is told apart, by its header's error.
	request func(enc *proto.Encoder, slot int, seq int64, rng *rand.Rand) proto.OpCode
}

const (
	// wireTimeout is the session timeout wire sessions ask for; pings go
	// out at a third of it.
	wireTimeout = 10 * time.Second
	// wireIOTimeout bounds the wait for a reply or a write beyond the
	// end of the loop: a server that stops answering fails the run
	// instead of hanging it.
	wireIOTimeout = 30 * time.Second
	xidPing       = -2
)

// errWireReply is returned for a reply that is not the answer expected.
var errWireReply = errors.New("bench: wire: unexpected reply")

// wireSession is one client session on its own connection.
type wireSession struct {
	nc net.Conn
	r  *bufio.Reader

	wmu  sync.Mutex // serialises writes: the loop's requests, the pinger's pings
	enc  *proto.Encoder
	xid  int32
	sent atomic.Int64 // UnixNano of the last write, for the pinger

	stop chan struct{}
	done chan struct{}
}

// dialWire opens a session on addr and starts its pinger.
func dialWire(ctx context.Context, addr string) (*wireSession, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bench: wire: dial %s: %w", addr, err)
	}
	nc.SetDeadline(time.Now().Add(wireIOTimeout)) // for the handshake
	s := &wireSession{
		nc:   nc,
		r:    bufio.NewReaderSize(nc, 64<<10),
		enc:  proto.NewEncoder(make([]byte, 0, 512)),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	cr := &proto.ConnectRequest{TimeOut: int32(wireTimeout.Milliseconds()), Passwd: make([]byte, 16), HasReadOnly: true}
	if err := s.writeFrame(func(e *proto.Encoder) { cr.Encode(e) }); err != nil {
		nc.Close()
		return nil, err
	}
	body, err := s.readFrame()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bench: wire: handshake with %s: %w", addr, err)
	}
	var resp proto.ConnectResponse
	if err := proto.Decode(body, &resp); err != nil || resp.TimeOut <= 0 {
		nc.Close()
		return nil, fmt.Errorf("%w: handshake with %s refused (timeout %d, %v)", errWireReply, addr, resp.TimeOut, err)
	}
	// Deadlines are set per phase (runWireSession, close), not per
	// request: each one set is a runtime timer update, CPU the generator
	// needs for requests.
	nc.SetDeadline(time.Time{})
	go s.ping(time.Duration(resp.TimeOut) * time.Millisecond / 3)
	return s, nil
}

// writeFrame writes one length-prefixed packet whose payload body appends,
// in one write system call.
func (s *wireSession) writeFrame(body func(e *proto.Encoder)) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.enc.Reset()
	s.enc.Int(0)
	body(s.enc)
	b := s.enc.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := s.nc.Write(b); err != nil {
		return fmt.Errorf("bench: wire: write: %w", err)
	}
	s.sent.Store(time.Now().UnixNano())
	return nil
}

// send writes a request with the next xid and returns that xid; body
// appends the request's body and returns its op code.
func (s *wireSession) send(body func(e *proto.Encoder) proto.OpCode) (int32, error) {
	var xid int32
	err := s.writeFrame(func(e *proto.Encoder) {
		s.xid++
		xid = s.xid
		e.Int(xid)
		e.Int(0) // op code, patched below: the body knows it
		code := body(e)
		binary.BigEndian.PutUint32(e.Bytes()[8:], uint32(code))
	})
	return xid, err
}

// readFrame returns the payload of the next packet. It stays valid until
// the next read.
func (s *wireSession) readFrame() ([]byte, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(s.r, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("bench: wire: read: %w", err)
	}
	n := int(binary.BigEndian.Uint32(lenBuf[:]))
	if n > s.r.Size() {
		return nil, fmt.Errorf("%w: %d-byte reply is larger than the read buffer", errWireReply, n)
	}
	b, err := s.r.Peek(n)
	if err != nil {
		return nil, fmt.Errorf("bench: wire: read: %w", err)
	}
	s.r.Discard(n)
	return b, nil
}

// readReply returns the header of the next reply that is not a ping's.
func (s *wireSession) readReply() (proto.ReplyHeader, error) {
	for {
		b, err := s.readFrame()
		if err != nil {
			return proto.ReplyHeader{}, err
		}
		d := proto.NewDecoder(b)
		var hdr proto.ReplyHeader
		hdr.Decode(d)
		if err := d.Err(); err != nil {
			return hdr, fmt.Errorf("%w: reply header: %v", errWireReply, err)
		}
		if hdr.Xid != xidPing {
			return hdr, nil
		}
	}
}

// ping keeps the session alive while no request goes out.
func (s *wireSession) ping(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, s.sent.Load())) < every {
			continue
		}
		err := s.writeFrame(func(e *proto.Encoder) {
			hdr := proto.RequestHeader{Xid: xidPing, Type: proto.OpPing}
			hdr.Encode(e)
		})
		if err != nil {
			return
		}
	}
}

// close ends the session as a client's Close does: closeSession, its
// reply, then the server closing the connection. The loop must have
// stopped.
func (s *wireSession) close() error {
	close(s.stop)
	<-s.done
	defer s.nc.Close()
	s.nc.SetDeadline(time.Now().Add(wireIOTimeout))
	xid, err := s.send(func(*proto.Encoder) proto.OpCode { return proto.OpCloseSession })
	if err != nil {
		return err
	}
	hdr, err := s.readReply()
	if err != nil {
		return fmt.Errorf("bench: wire: closeSession: %w", err)
	}
	if hdr.Xid != xid || hdr.Err != proto.ErrOK {
		return fmt.Errorf("%w: closeSession answered with xid %d (want %d), %v", errWireReply, hdr.Xid, xid, hdr.Err)
	}
	if _, err := s.readFrame(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the server kept the connection open after closeSession (%v)", errWireReply, err)
	}
	return nil
}

// dialWireSessions opens n sessions in parallel; on error it closes those it opened.
func dialWireSessions(ctx context.Context, addr string, n int) ([]*wireSession, error) {
	sessions := make([]*wireSession, n)
	errs := make([]error, n)
	sem := make(chan struct{}, dialParallelism)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			sessions[i], errs[i] = dialWire(ctx, addr)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeWire(sessions)
		return nil, err
	}
	return sessions, nil
}

func closeWire(sessions []*wireSession) {
	var wg sync.WaitGroup
	for _, s := range sessions {
		if s != nil {
			wg.Go(func() { s.close() }) // teardown: the run's outcome is known
		}
	}
	wg.Wait()
}

// wireLoop is the measured closed loop for the wire generator: Clients
// sessions, each with InFlight requests outstanding, each request issued
// as soon as one of its session's returns, until the time or the
// operation limit runs out or a request fails. A slot (0 …
// Clients×InFlight-1) is one of the outstanding requests of one session;
// a server answers a session's requests in order, so the slot whose
// request returned issues the next.
func wireLoop(parent context.Context, e *env, limit int, timeout time.Duration, op wireOp) (Result, error) {
	const phase = "measuring"
	total := limit
	if limit <= 0 || limit > maxLoopOps {
		limit, total = maxLoopOps, 0
	}
	sessions, err := dialWireSessions(parent, e.o.Addr, e.o.Clients)
	if err != nil {
		return Result{}, err
	}
	defer closeWire(sessions)
	recs := make([]*recorder, len(sessions))
	for i := range recs {
		recs[i] = newRecorder(uint64(i))
	}
	return e.metered(parent, phase, true, timeout, func(ctx context.Context) (int, []*recorder, error) {
		var issued, done atomic.Int64
		p := newProgress(e.log, phase, total)
		inflight := e.o.InFlight
		err := runAll(ctx, len(sessions), func(ctx context.Context, i int) error {
			return runWireSession(ctx, sessions[i], i*inflight, inflight, op, recs[i],
				func() bool { return issued.Add(1) <= int64(limit) },
				func() { done.Add(1); p.add(1) })
		})
		return int(done.Load()), recs, err
	})
}

// runWireSession keeps inflight requests of op outstanding on s, for the
// slots firstSlot … firstSlot+inflight-1, while ctx lasts and more() allows
// another request; it records each latency and calls completed for each
// reply. It returns once every request it sent has been answered.
func runWireSession(ctx context.Context, s *wireSession, firstSlot, inflight int, op wireOp, rec *recorder, more func() bool, completed func()) error {
	type pending struct {
		xid  int32
		slot int
		at   time.Time
	}
	// ring holds the outstanding requests in the order they were sent,
	// which is the order a server answers them in: ring[head] is the
	// oldest of n.
	ring := make([]pending, inflight)
	head, n := 0, 0
	// The loop ends by ctx; a server that stops answering fails it
	// wireIOTimeout after that.
	deadline := time.Now().Add(wireIOTimeout)
	if d, ok := ctx.Deadline(); ok {
		deadline = d.Add(wireIOTimeout)
	}
	s.nc.SetDeadline(deadline)
	defer s.nc.SetDeadline(time.Time{})
	var seq int64
	rng := rand.New(rand.NewPCG(uint64(firstSlot), 0x3173))
	issue := func(slot int) error {
		if ctx.Err() != nil || !more() {
			return nil
		}
		seq++
		at := time.Now()
		xid, err := s.send(func(enc *proto.Encoder) proto.OpCode { return op.request(enc, slot, seq, rng) })
		if err != nil {
			return err
		}
		ring[(head+n)%inflight] = pending{xid: xid, slot: slot, at: at}
		n++
		return nil
	}
	for k := range inflight {
		if err := issue(firstSlot + k); err != nil {
			return err
		}
	}
	for n > 0 {
		if s.r.Buffered() == 0 {
			// Every reply already here has been handled: let the other
			// sessions handle theirs before this one reads again. A
			// session whose replies keep arriving would otherwise run
			// for a whole scheduler time slice (10 ms) while the replies
			// of the others wait, as separate client processes would not.
			runtime.Gosched()
		}
		hdr, err := s.readReply()
		if err != nil {
			return err
		}
		want := ring[head]
		head, n = (head+1)%inflight, n-1
		if hdr.Xid != want.xid {
			return fmt.Errorf("%w: xid %d, want %d", errWireReply, hdr.Xid, want.xid)
		}
		if hdr.Err != proto.ErrOK {
			return fmt.Errorf("%w: request %d failed: %v", errWireReply, hdr.Xid, hdr.Err)
		}
		rec.since(want.at)
		completed()
		if err := issue(want.slot); err != nil {
			return err
		}
	}
	return nil
}
