package mysqldial

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
)

// maxHandshake bounds the first packet a server may send: real ones are
// under 200 bytes, and a service that is not MySQL (its first bytes read
// as a length of megabytes) must not make us wait for, or hold, more.
const maxHandshake = 16 << 10

// Protocol values the check reads.
const (
	protocolV10    = 10
	errPacket      = 0xff
	capProtocol41  = 1 << 9
	capSecureConn  = 1 << 15
	capPluginAuth  = 1 << 19
	scrambleFiller = 0
)

// checkHandshake checks the first packet's payload of a server by the
// layout of MySQL's HandshakeV10 (or an error packet in its place), so
// that both client libraries can parse it without indexing past its end:
// go-sql-driver v1.10.1 and go-mysql v1.16.0 trust the lengths the
// fields promise. It is stricter than either (every field the
// capabilities promise must be there), never less strict. It returns why
// p is refused.
func checkHandshake(p []byte) error {
	switch {
	case len(p) == 0:
		return fmt.Errorf("empty first packet")
	case p[0] == errPacket:
		return checkErrPacket(p)
	case p[0] != protocolV10:
		return fmt.Errorf("protocol version %d, want %d", p[0], protocolV10)
	}
	end := bytes.IndexByte(p[1:], 0)
	if end < 0 {
		return fmt.Errorf("server version is not NUL-terminated")
	}
	pos := 1 + end + 1
	// connection id 4, scramble part 1 8, filler 1, capabilities (low) 2
	if len(p) < pos+15 {
		return fmt.Errorf("%d bytes end before the capability flags", len(p))
	}
	if p[pos+12] != scrambleFiller {
		return fmt.Errorf("byte %d after the scramble is %#x, want 0", pos+12, p[pos+12])
	}
	caps := uint32(binary.LittleEndian.Uint16(p[pos+13:]))
	pos += 15
	if caps&capProtocol41 == 0 {
		return fmt.Errorf("no CLIENT_PROTOCOL_41: a server older than MySQL 4.1")
	}
	// character set 1, status 2, capabilities (high) 2, scramble length
	// 1, reserved 10. MySQL 4.1 and later always send them; without them
	// the scramble is 8 bytes, and go-mysql reads 20 of it.
	if len(p) < pos+16 {
		return fmt.Errorf("%d bytes end inside the fields after the capability flags", len(p))
	}
	caps |= uint32(binary.LittleEndian.Uint16(p[pos+3:])) << 16
	scrambleLen := int(p[pos+5])
	pos += 16
	if caps&capSecureConn == 0 {
		return fmt.Errorf("no CLIENT_SECURE_CONNECTION")
	}
	// The second part of the scramble is max(13, length-8) bytes; both
	// libraries step over at least 13.
	rest := max(scrambleLen-8, 13)
	if len(p) < pos+rest {
		return fmt.Errorf("%d bytes end inside the scramble", len(p))
	}
	pos += rest
	if caps&capPluginAuth != 0 && bytes.IndexByte(p[pos:], 0) < 0 {
		return fmt.Errorf("auth plugin name is not NUL-terminated")
	}
	return nil
}

// checkErrPacket checks an error packet sent instead of the handshake
// (e.g. "host is not allowed to connect"): code, an optional #state, a
// message.
func checkErrPacket(p []byte) error {
	switch {
	case len(p) < 4:
		return fmt.Errorf("error packet of %d bytes", len(p))
	case p[3] == '#' && len(p) < 9:
		return fmt.Errorf("error packet of %d bytes ends inside its SQL state", len(p))
	}
	return nil
}

// gatedConn holds back the server's first packet until checkHandshake
// passes it: a malformed one is an error of the first Read, which the
// client library handles as a failed read (cleaning up after itself),
// instead of a panic in its parser.
type gatedConn struct {
	net.Conn
	checked bool
	pending []byte // the checked packet, not yet read by the library
	err     error
	// refused is told why the packet was refused, for the dialer to
	// name the cause (the libraries report the read error as a bare
	// "invalid connection").
	refused func(error)
	// wrote, when set, notes the first write: a library writes only once
	// it has parsed the server's handshake (HandshakeAccepted).
	wrote *atomic.Bool
}

func (c *gatedConn) Read(b []byte) (int, error) {
	if !c.checked {
		c.checked = true
		c.pending, c.err = readFirstPacket(c.Conn)
		if r, ok := c.err.(*refusal); ok {
			c.refused(r.reason)
		}
	}
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	if c.err != nil {
		return 0, c.err
	}
	return c.Conn.Read(b)
}

func (c *gatedConn) Write(b []byte) (int, error) {
	if c.wrote != nil {
		c.wrote.Store(true)
	}
	return c.Conn.Write(b)
}

// SyscallConn lets go-sql-driver check a pooled connection's liveness
// before reusing it, as it does on a bare TCP connection.
func (c *gatedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("mysqldial: %T has no file descriptor", c.Conn)
	}
	return sc.SyscallConn()
}

// refusal is readFirstPacket's verdict on a packet it read whole (or
// whose length alone is too much), as opposed to a failure to read.
type refusal struct{ reason error }

func (r *refusal) Error() string { return "malformed handshake: " + r.reason.Error() }

// readFirstPacket reads one packet (header and payload) and returns its
// bytes if checkHandshake passes the payload.
func readFirstPacket(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	if n > maxHandshake {
		return nil, &refusal{fmt.Errorf("first packet of %d bytes (more than %d)", n, maxHandshake)}
	}
	if hdr[3] != 0 {
		return nil, &refusal{fmt.Errorf("first packet has sequence number %d, want 0", hdr[3])}
	}
	pkt := make([]byte, 4+n)
	copy(pkt, hdr[:])
	if _, err := io.ReadFull(r, pkt[4:]); err != nil {
		return nil, err
	}
	if err := checkHandshake(pkt[4:]); err != nil {
		return nil, &refusal{err}
	}
	return pkt, nil
}
