package proto

// CreateResponse answers OpCreate with the created path (which differs from
// the requested one for sequential nodes).
type CreateResponse struct {
	Path string
}

// Encode writes the response.
func (r *CreateResponse) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads the response.
func (r *CreateResponse) Decode(d *Decoder) { r.Path = d.String() }

// Create2Response answers OpCreate2, OpCreateContainer and OpCreateTTL with
// the created path and the new node's Stat.
type Create2Response struct {
	Path string
	Stat Stat
}

// Encode writes the response.
func (r *Create2Response) Encode(e *Encoder) { e.String(r.Path); r.Stat.Encode(e) }

// Decode reads the response.
func (r *Create2Response) Decode(d *Decoder) { r.Path = d.String(); r.Stat.Decode(d) }

// ExistsResponse answers OpExists for a node that exists (a missing node is
// an ErrNoNode reply with no body).
type ExistsResponse struct {
	Stat Stat
}

// Encode writes the response.
func (r *ExistsResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode reads the response.
func (r *ExistsResponse) Decode(d *Decoder) { r.Stat.Decode(d) }

// GetDataResponse answers OpGetData.
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// Encode writes the response.
func (r *GetDataResponse) Encode(e *Encoder) { e.Buffer(r.Data); r.Stat.Encode(e) }

// Decode reads the response.
func (r *GetDataResponse) Decode(d *Decoder) { r.Data = d.Buffer(); r.Stat.Decode(d) }

// SetDataResponse answers OpSetData with the node's new Stat.
type SetDataResponse struct {
	Stat Stat
}

// Encode writes the response.
func (r *SetDataResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode reads the response.
func (r *SetDataResponse) Decode(d *Decoder) { r.Stat.Decode(d) }

// GetACLResponse answers OpGetACL.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// Encode writes the response.
func (r *GetACLResponse) Encode(e *Encoder) { EncodeACLs(e, r.ACL); r.Stat.Encode(e) }

// Decode reads the response.
func (r *GetACLResponse) Decode(d *Decoder) { r.ACL = DecodeACLs(d); r.Stat.Decode(d) }

// SetACLResponse answers OpSetACL with the node's new Stat.
type SetACLResponse struct {
	Stat Stat
}

// Encode writes the response.
func (r *SetACLResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode reads the response.
func (r *SetACLResponse) Decode(d *Decoder) { r.Stat.Decode(d) }

// GetChildrenResponse answers OpGetChildren with child names (not paths).
type GetChildrenResponse struct {
	Children []string
}

// Encode writes the response.
func (r *GetChildrenResponse) Encode(e *Encoder) { e.Strings(r.Children) }

// Decode reads the response.
func (r *GetChildrenResponse) Decode(d *Decoder) { r.Children = d.Strings() }

// GetChildren2Response answers OpGetChildren2: child names and the parent's
// Stat.
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// Encode writes the response.
func (r *GetChildren2Response) Encode(e *Encoder) { e.Strings(r.Children); r.Stat.Encode(e) }

// Decode reads the response.
func (r *GetChildren2Response) Decode(d *Decoder) { r.Children = d.Strings(); r.Stat.Decode(d) }

// SyncResponse answers OpSync with the synced path.
type SyncResponse struct {
	Path string
}

// Encode writes the response.
func (r *SyncResponse) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads the response.
func (r *SyncResponse) Decode(d *Decoder) { r.Path = d.String() }

// GetEphemeralsResponse answers OpGetEphemerals with full paths.
type GetEphemeralsResponse struct {
	Ephemerals []string
}

// Encode writes the response.
func (r *GetEphemeralsResponse) Encode(e *Encoder) { e.Strings(r.Ephemerals) }

// Decode reads the response.
func (r *GetEphemeralsResponse) Decode(d *Decoder) { r.Ephemerals = d.Strings() }

// GetAllChildrenNumberResponse answers OpGetAllChildrenNumber.
type GetAllChildrenNumberResponse struct {
	TotalNumber int32
}

// Encode writes the response.
func (r *GetAllChildrenNumberResponse) Encode(e *Encoder) { e.Int(r.TotalNumber) }

// Decode reads the response.
func (r *GetAllChildrenNumberResponse) Decode(d *Decoder) { r.TotalNumber = d.Int() }

// ErrorResponse is the body of a failed operation inside a MultiResponse.
type ErrorResponse struct {
	Err int32
}

// Encode writes the response.
func (r *ErrorResponse) Encode(e *Encoder) { e.Int(r.Err) }

// Decode reads the response.
func (r *ErrorResponse) Decode(d *Decoder) { r.Err = d.Int() }
