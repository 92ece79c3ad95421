package mysqldial

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
)

// FakeServer is a test double of a database server that says what the
// test wants: on every connection it sends Handshake as the first packet,
// then answers each packet the client sends with the next of Replies,
// and closes the connection when it has none left. It listens on
// loopback. Tests of other packages use it for servers that are not
// MySQL, or that a man in the middle rewrites.
type FakeServer struct {
	ln      net.Listener
	replies [][]byte
	wg      sync.WaitGroup
	mu      sync.Mutex
	// handshake is the first packet of the connections accepted from now.
	handshake []byte
	conns     map[net.Conn]bool
}

// NewFakeServer starts a FakeServer sending handshake (a packet payload:
// the packet header is added) and then replies.
func NewFakeServer(handshake []byte, replies ...[]byte) (*FakeServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &FakeServer{ln: ln, handshake: handshake, replies: replies, conns: map[net.Conn]bool{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// Addr is host:port of the server.
func (f *FakeServer) Addr() string { return f.ln.Addr().String() }

// SetHandshake changes the first packet of the connections accepted from
// now on: a fuzz target reuses one server (and its port) for every input.
func (f *FakeServer) SetHandshake(b []byte) {
	f.mu.Lock()
	f.handshake = b
	f.mu.Unlock()
}

// Close stops the server, closes its connections and waits for them.
func (f *FakeServer) Close() {
	f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *FakeServer) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns[c] = true
		handshake := f.handshake
		f.mu.Unlock()
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.serve(c, handshake)
			f.mu.Lock()
			delete(f.conns, c)
			f.mu.Unlock()
			c.Close()
		}()
	}
}

// serve plays the script on c; any error ends it.
func (f *FakeServer) serve(c net.Conn, handshake []byte) {
	if writePacket(c, 0, handshake) != nil {
		return
	}
	for _, r := range f.replies {
		seq, err := skipPacket(c)
		if err != nil {
			return
		}
		if writePacket(c, seq+1, r) != nil {
			return
		}
	}
}

// maxPayload is the largest payload one MySQL packet carries.
const maxPayload = 1<<24 - 1

func writePacket(w io.Writer, seq byte, payload []byte) error {
	if len(payload) >= maxPayload {
		return errors.New("mysqldial: fake packet too long")
	}
	hdr := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq}
	_, err := w.Write(append(hdr, payload...))
	return err
}

// skipPacket reads one packet and returns its sequence number.
func skipPacket(r io.Reader) (byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	n := int64(hdr[0]) | int64(hdr[1])<<8 | int64(hdr[2])<<16
	_, err := io.CopyN(io.Discard, r, n)
	return hdr[3], err
}

// capLongPassword is the one capability HandshakeV10 sets that the
// check does not read.
const capLongPassword = 1 << 0

// HandshakeV10 is a well-formed initial handshake of a MySQL server of
// version, offering mysql_native_password.
func HandshakeV10(version string) []byte {
	b := []byte{10}
	b = append(b, version...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 7) // connection id
	b = append(b, "abcdefgh"...)               // auth-plugin-data part 1
	b = append(b, 0)                           // filler
	caps := uint32(capLongPassword | capProtocol41 | capSecureConn | capPluginAuth)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps))
	b = append(b, 45)                          // utf8mb4_general_ci
	b = binary.LittleEndian.AppendUint16(b, 2) // status: autocommit
	b = binary.LittleEndian.AppendUint16(b, uint16(caps>>16))
	b = append(b, 21)                  // length of auth-plugin-data
	b = append(b, make([]byte, 10)...) // reserved
	b = append(b, "ijklmnopqrst"...)   // auth-plugin-data part 2
	b = append(b, 0)
	b = append(b, "mysql_native_password"...)
	return append(b, 0)
}

// ErrPacket is a server's error packet: code, SQL state and message.
func ErrPacket(code uint16, state, msg string) []byte {
	b := []byte{0xff}
	b = binary.LittleEndian.AppendUint16(b, code)
	b = append(b, '#')
	b = append(b, state...)
	return append(b, msg...)
}

// MalformedHandshake is the 32-byte handshake that made go-sql-driver
// v1.10.1 panic in readHandshakePacket: well-formed up to the capability
// flags, then too short for the fields the flags promise.
func MalformedHandshake() []byte {
	b := HandshakeV10("5.7.0")
	return b[:32]
}
