package compat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// The raw client speaks the ZooKeeper protocol byte by byte, for what
// go-zookeeper cannot send (bad paths, create2 in a multi, addWatch,
// whoAmI, unknown op codes …) or hides (duplicate notifications, the
// reply header's zxid and error, nil versus empty data).
//
// It lays out every record itself from the jute primitives instead of
// using coord/proto's records: the server under test is built on those
// records, and a field-order mistake shared by server and client would
// otherwise cancel out whenever the suite runs without ZooKeeper.

// wireTimeout bounds every read and write. No scenario step waits longer
// for the server unless it says so (session expiry).
const wireTimeout = 10 * time.Second

// wireReply is the header and body of one answer.
type wireReply struct {
	zxid int64
	err  proto.ErrCode
	body *proto.Decoder
}

// wireEvent is one watch notification.
type wireEvent struct {
	typ   proto.EventType
	state proto.KeeperState
	path  string
}

// connectReply is the server's answer to the handshake.
type connectReply struct {
	timeout   int32
	sessionID int64
	passwd    []byte
	readOnly  bool
	hasRO     bool
}

// wireConn is one connection. It is not safe for concurrent use: a
// scenario drives it from one goroutine, one request at a time, so the
// order of packets it sees is the order the server sent them.
type wireConn struct {
	nc  net.Conn
	xid int32
	// onEvent receives each notification when it is read, so the
	// transcript shows it where it arrived relative to replies.
	onEvent func(wireEvent)
}

// dialWire opens a connection and performs the handshake: sessionID 0
// creates a session, otherwise it resumes sessionID with passwd. The Java
// client ends its ConnectRequest with a readOnly byte, go-zookeeper does
// not; readOnlyByte chooses.
func dialWire(addr string, timeoutMs int32, sessionID int64, passwd []byte, readOnlyByte bool) (*wireConn, connectReply, error) {
	nc, err := net.DialTimeout("tcp", addr, wireTimeout)
	if err != nil {
		return nil, connectReply{}, fmt.Errorf("compat: dial %s: %w", addr, err)
	}
	w := &wireConn{nc: nc}
	e := proto.NewEncoder(nil)
	e.Int(0) // protocol version
	e.Long(0)
	e.Int(timeoutMs)
	e.Long(sessionID)
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	e.Buffer(passwd)
	if readOnlyByte {
		e.Bool(false)
	}
	if err := w.writePacket(e.Bytes()); err != nil {
		nc.Close()
		return nil, connectReply{}, err
	}
	b, err := w.readPacket(wireTimeout)
	if err != nil {
		nc.Close()
		return nil, connectReply{}, fmt.Errorf("compat: handshake with %s: %w", addr, err)
	}
	d := proto.NewDecoder(b)
	d.Int() // protocol version
	var r connectReply
	r.timeout = d.Int()
	r.sessionID = d.Long()
	r.passwd = d.Buffer()
	if d.Remaining() > 0 {
		r.hasRO = true
		r.readOnly = d.Bool()
	}
	if err := d.Err(); err != nil {
		nc.Close()
		return nil, connectReply{}, fmt.Errorf("compat: decode connect response: %w", err)
	}
	return w, r, nil
}

func (w *wireConn) close() error { return w.nc.Close() }

// release ends the session and the connection without waiting for an
// answer, so that a finished scenario leaves no session holding
// ephemerals until it times out. Errors are of no interest: the
// connection may be long gone.
func (w *wireConn) release() {
	e := proto.NewEncoder(nil)
	e.Int(w.xid + 1)
	e.Int(int32(proto.OpCloseSession))
	_ = w.writePacket(e.Bytes())
	w.nc.Close()
}

func (w *wireConn) writePacket(b []byte) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	_ = w.nc.SetWriteDeadline(time.Now().Add(wireTimeout))
	if _, err := w.nc.Write(append(hdr[:], b...)); err != nil {
		return fmt.Errorf("compat: write: %w", err)
	}
	return nil
}

func (w *wireConn) readPacket(timeout time.Duration) ([]byte, error) {
	_ = w.nc.SetReadDeadline(time.Now().Add(timeout))
	var hdr [4]byte
	if _, err := io.ReadFull(w.nc, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > 16<<20 {
		return nil, fmt.Errorf("compat: packet of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(w.nc, b); err != nil {
		return nil, err
	}
	return b, nil
}

// call sends one request and reads until its reply, passing any
// notification read on the way to onEvent.
func (w *wireConn) call(op proto.OpCode, body func(e *proto.Encoder)) (wireReply, error) {
	w.xid++
	return w.callXid(w.xid, op, body)
}

func (w *wireConn) callXid(xid int32, op proto.OpCode, body func(e *proto.Encoder)) (wireReply, error) {
	e := proto.NewEncoder(nil)
	e.Int(xid)
	e.Int(int32(op))
	if body != nil {
		body(e)
	}
	if err := w.writePacket(e.Bytes()); err != nil {
		return wireReply{}, err
	}
	for {
		b, err := w.readPacket(wireTimeout)
		if err != nil {
			return wireReply{}, fmt.Errorf("compat: await reply to %v: %w", op, err)
		}
		d := proto.NewDecoder(b)
		rxid, zxid, code := d.Int(), d.Long(), proto.ErrCode(d.Int())
		if err := d.Err(); err != nil {
			return wireReply{}, fmt.Errorf("compat: reply header: %w", err)
		}
		switch {
		case rxid == proto.XidNotification:
			ev, err := decodeEvent(d)
			if err != nil {
				return wireReply{}, err
			}
			if w.onEvent != nil {
				w.onEvent(ev)
			}
		case rxid == xid:
			return wireReply{zxid: zxid, err: code, body: d}, nil
		case rxid == proto.XidPing:
			// A late answer to a ping; nothing to record.
		default:
			return wireReply{}, fmt.Errorf("compat: reply xid %d while awaiting %d", rxid, xid)
		}
	}
}

// readUntilClosed reads and drops what the server still sends until it
// closes the connection; it reports whether it did within the timeout.
func (w *wireConn) readUntilClosed(timeout time.Duration) (closed bool) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := w.readPacket(time.Until(deadline)); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
	return false
}

func decodeEvent(d *proto.Decoder) (wireEvent, error) {
	ev := wireEvent{typ: proto.EventType(d.Int()), state: proto.KeeperState(d.Int()), path: d.String()}
	if err := d.Err(); err != nil {
		return wireEvent{}, fmt.Errorf("compat: decode notification: %w", err)
	}
	return ev, nil
}

// Record layouts, after zookeeper.jute.

func encodeACLs(e *proto.Encoder, acls []proto.ACL) {
	if acls == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(acls)))
	for _, a := range acls {
		e.Int(a.Perms)
		e.String(a.Id.Scheme)
		e.String(a.Id.ID)
	}
}

func decodeACLs(d *proto.Decoder) []proto.ACL {
	n := int(d.Int())
	var out []proto.ACL
	for i := 0; i < n && d.Err() == nil; i++ {
		out = append(out, proto.ACL{Perms: d.Int(), Id: proto.Id{Scheme: d.String(), ID: d.String()}})
	}
	return out
}

func decodeStat(d *proto.Decoder) proto.Stat {
	return proto.Stat{
		Czxid: d.Long(), Mzxid: d.Long(), Ctime: d.Long(), Mtime: d.Long(),
		Version: d.Int(), Cversion: d.Int(), Aversion: d.Int(),
		EphemeralOwner: d.Long(), DataLength: d.Int(), NumChildren: d.Int(), Pzxid: d.Long(),
	}
}
