package core

import (
	"io"
	"net"
	"sync"
	"testing"
)

// partition forwards TCP connections from a loopback port to a server,
// and can cut a client off: Partition closes every connection and turns
// new ones away until Heal. The server sees its client vanish and expires
// its session after the session timeout; the client sees its connection
// fail (Suspended) and, unable to reconnect, declares the session lost.
type partition struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newPartition(t testing.TB, target string) *partition {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("partition listen: %v", err)
	}
	p := &partition{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *partition) Addr() string { return p.ln.Addr().String() }

func (p *partition) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
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
		go p.pump(s, c, shut)
		go p.pump(c, s, shut)
	}
}

func (p *partition) pump(dst, src net.Conn, shut func()) {
	defer p.wg.Done()
	defer shut()
	_, _ = io.Copy(dst, src)
}

// Partition cuts every connection and refuses new ones until Heal.
func (p *partition) Partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Heal accepts connections again.
func (p *partition) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func (p *partition) close() {
	p.ln.Close()
	p.Partition()
	p.wg.Wait()
}
