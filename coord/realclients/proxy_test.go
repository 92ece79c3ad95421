package realclients

import (
	"io"
	"net"
	"sync"
	"testing"
)

// gatedProxy relays TCP connections to a server. Hold cuts every relayed
// connection and turns new ones away (accepted, then closed at once) until
// Release, which keeps a client away from the server for exactly as long
// as a test needs, with its session alive on the server.
type gatedProxy struct {
	ln     net.Listener
	target func() string // the server's address, read at each dial

	mu    sync.Mutex
	held  bool
	conns map[net.Conn]struct{}

	wg sync.WaitGroup // the accept loop and every pump
}

// newGatedProxy listens on a free loopback port and relays to target();
// it is closed when the test ends.
func newGatedProxy(t *testing.T, target func() string) *gatedProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &gatedProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *gatedProxy) Addr() string { return p.ln.Addr().String() }

func (p *gatedProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		held := p.held
		p.mu.Unlock()
		if held {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target())
		if err != nil {
			c.Close() // the server is down: the client sees a dropped connection
			continue
		}
		p.mu.Lock()
		if p.held { // Hold ran while dialing
			p.mu.Unlock()
			c.Close()
			s.Close()
			continue
		}
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pump(c, s)
		go p.pump(s, c)
	}
}

// pump copies src to dst; when either side ends, both are closed, so the
// client notices a server that went away.
func (p *gatedProxy) pump(dst, src net.Conn) {
	defer p.wg.Done()
	// However the copy ends (EOF, a reset, a Hold closing the sockets),
	// the relay is over.
	_, _ = io.Copy(dst, src)
	p.mu.Lock()
	delete(p.conns, src)
	delete(p.conns, dst)
	p.mu.Unlock()
	src.Close()
	dst.Close()
}

// Hold cuts every relayed connection and refuses new ones until Release.
func (p *gatedProxy) Hold() {
	p.mu.Lock()
	p.held = true
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// Release lets connections through again.
func (p *gatedProxy) Release() {
	p.mu.Lock()
	p.held = false
	p.mu.Unlock()
}

func (p *gatedProxy) close() {
	p.ln.Close() // ends the accept loop
	p.Hold()
	p.wg.Wait()
}
