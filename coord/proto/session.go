package proto

// RequestHeader starts every client packet after the handshake.
type RequestHeader struct {
	Xid  int32 // client-chosen id echoed in the reply; negative ids are special (see XidPing …)
	Type OpCode
}

// Encode writes the header.
func (r *RequestHeader) Encode(e *Encoder) { e.Int(r.Xid); e.Int(int32(r.Type)) }

// Decode reads the header.
func (r *RequestHeader) Decode(d *Decoder) { r.Xid = d.Int(); r.Type = OpCode(d.Int()) }

// ReplyHeader starts every server packet after the handshake, including
// watch notifications (Xid XidNotification).
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  ErrCode
}

// Encode writes the header.
func (r *ReplyHeader) Encode(e *Encoder) { e.Int(r.Xid); e.Long(r.Zxid); e.Int(int32(r.Err)) }

// Decode reads the header.
func (r *ReplyHeader) Decode(d *Decoder) {
	r.Xid = d.Int()
	r.Zxid = d.Long()
	r.Err = ErrCode(d.Int())
}

// ConnectRequest is the first packet of a connection; it has no
// RequestHeader.
//
// The trailing readOnly byte is not part of zookeeper.jute: the Java client
// and kazoo append it, go-zookeeper does not. HasReadOnly records whether it
// was present so the server can answer in the same format (a client that did
// not send it does not expect it back).
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64 // highest zxid the client has seen, 0 for a new session
	TimeOut         int32 // requested session timeout, ms
	SessionID       int64 // 0 to create a session, else the session to resume
	Passwd          []byte
	ReadOnly        bool // the client accepts a read-only server
	HasReadOnly     bool // the readOnly byte was (or is to be) on the wire
}

// Encode writes the request; the readOnly byte only when HasReadOnly.
func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Long(r.LastZxidSeen)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode reads the request and the optional readOnly byte.
func (r *ConnectRequest) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int()
	r.LastZxidSeen = d.Long()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	r.ReadOnly, r.HasReadOnly = optionalBool(d)
}

// ConnectResponse is the server's answer to a ConnectRequest; it has no
// ReplyHeader. A rejected or expired session is answered with TimeOut 0,
// SessionID 0 and an all-zero password.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32 // negotiated session timeout, ms
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool // the server is read-only
	HasReadOnly     bool // write (or a trailing byte held) the readOnly flag
}

// Encode writes the response; the readOnly byte only when HasReadOnly, which
// the server copies from the client's ConnectRequest.
func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode reads the response and the optional readOnly byte.
func (r *ConnectResponse) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	r.ReadOnly, r.HasReadOnly = optionalBool(d)
}

// optionalBool reads a trailing boolean that older peers leave out: present
// only when the record so far decoded cleanly and a byte remains.
func optionalBool(d *Decoder) (v, present bool) {
	if d.Err() != nil || d.Remaining() == 0 {
		return false, false
	}
	return d.Bool(), true
}
