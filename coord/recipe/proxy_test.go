package recipe

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultProxy forwards TCP connections from a loopback port to a server
// and injects the network faults the fault tests need: cut every
// connection (the server sees the client vanish, the client sees EOF), or
// stall one direction (bytes are held, not delivered, until released) —
// a partition that keeps sockets open, so neither side learns of it but
// by its own timeouts.
type faultProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	up    *gate // client to server
	down  *gate // server to client

	accepted atomic.Int32 // client connections accepted so far

	wg sync.WaitGroup
}

// gate holds a direction's bytes while stalled, and delays each chunk
// it passes by delay.
type gate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	stalled bool
	delay   atomic.Int64 // time.Duration
	passed  atomic.Int64 // bytes let through so far
}

func newGate() *gate {
	g := &gate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) set(stalled bool) {
	g.mu.Lock()
	g.stalled = stalled
	g.mu.Unlock()
	g.cond.Broadcast()
}

// pass waits while the gate is stalled, then for its delay.
func (g *gate) pass() {
	g.mu.Lock()
	for g.stalled {
		g.cond.Wait()
	}
	g.mu.Unlock()
	time.Sleep(time.Duration(g.delay.Load()))
}

func newFaultProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &faultProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, up: newGate(), down: newGate()}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) Addr() string { return p.ln.Addr().String() }

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		p.conns[s] = struct{}{}
		p.mu.Unlock()
		shut := func() {
			c.Close()
			s.Close()
			p.mu.Lock()
			delete(p.conns, c)
			delete(p.conns, s)
			p.mu.Unlock()
		}
		p.wg.Add(2)
		go p.pump(s, c, p.up, shut)
		go p.pump(c, s, p.down, shut)
	}
}

// pump copies src to dst through g. A stalled gate holds what was read;
// a cut connection makes the write (or the read) fail and ends the pump.
func (p *faultProxy) pump(dst, src net.Conn, g *gate, shut func()) {
	defer p.wg.Done()
	defer shut()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			g.pass()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			g.passed.Add(int64(n))
		}
		if err != nil {
			return
		}
	}
}

// Cut closes every open connection; new ones are accepted as before.
func (p *faultProxy) Cut() {
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// Stall holds the bytes of both directions until Release.
func (p *faultProxy) Stall() { p.up.set(true); p.down.set(true) }

// StallReplies holds server-to-client bytes only: requests arrive and
// are executed, their replies do not.
func (p *faultProxy) StallReplies() { p.down.set(true) }

// DelayReplies delays each chunk of server-to-client bytes by d: a
// round trip takes at least d, and replies sent together arrive together.
func (p *faultProxy) DelayReplies(d time.Duration) { p.down.delay.Store(int64(d)) }

// Release lets held bytes through again.
func (p *faultProxy) Release() { p.up.set(false); p.down.set(false) }

func (p *faultProxy) close() {
	p.ln.Close()
	p.Release()
	p.Cut()
	p.wg.Wait()
}
