package proto

// AuthPacket is the body of an OpAuth request (sent with Xid XidAuth): add
// the credentials Auth under Scheme to the session, e.g. scheme "digest",
// auth "user:password".
type AuthPacket struct {
	Type   int32 // always 0; kept for wire compatibility
	Scheme string
	Auth   []byte
}

// Encode writes the packet.
func (r *AuthPacket) Encode(e *Encoder) { e.Int(r.Type); e.String(r.Scheme); e.Buffer(r.Auth) }

// Decode reads the packet.
func (r *AuthPacket) Decode(d *Decoder) {
	r.Type = d.Int()
	r.Scheme = d.String()
	r.Auth = d.Buffer()
}

// GetSASLRequest is the body of an OpSASL request: one SASL token from the
// client.
type GetSASLRequest struct {
	Token []byte
}

// Encode writes the request.
func (r *GetSASLRequest) Encode(e *Encoder) { e.Buffer(r.Token) }

// Decode reads the request.
func (r *GetSASLRequest) Decode(d *Decoder) { r.Token = d.Buffer() }

// SetSASLResponse is the server's SASL challenge answering a GetSASLRequest.
type SetSASLResponse struct {
	Token []byte
}

// Encode writes the response.
func (r *SetSASLResponse) Encode(e *Encoder) { e.Buffer(r.Token) }

// Decode reads the response.
func (r *SetSASLResponse) Decode(d *Decoder) { r.Token = d.Buffer() }

// ClientInfo is one identity of a session, as reported by whoAmI: for
// example {AuthScheme: "ip", User: "127.0.0.1"}.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// Encode writes the entry.
func (r *ClientInfo) Encode(e *Encoder) { e.String(r.AuthScheme); e.String(r.User) }

// Decode reads the entry.
func (r *ClientInfo) Decode(d *Decoder) { r.AuthScheme = d.String(); r.User = d.String() }

// WhoAmIResponse answers OpWhoAmI (which has no request body) with every
// identity the session holds.
type WhoAmIResponse struct {
	ClientInfo []ClientInfo
}

// Encode writes the response; a nil slice is written as length -1.
func (r *WhoAmIResponse) Encode(e *Encoder) {
	if r.ClientInfo == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(r.ClientInfo)))
	for i := range r.ClientInfo {
		r.ClientInfo[i].Encode(e)
	}
}

// Decode reads the response.
func (r *WhoAmIResponse) Decode(d *Decoder) {
	n, isNil := d.VectorLen(8) // two empty strings
	if isNil || d.Err() != nil {
		r.ClientInfo = nil
		return
	}
	r.ClientInfo = make([]ClientInfo, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		r.ClientInfo[i].Decode(d)
	}
}
