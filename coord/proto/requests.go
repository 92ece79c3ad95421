package proto

// CreateRequest is the body of OpCreate, OpCreate2 and OpCreateContainer
// (and of those ops inside a multi). Flags is one of the Mode* constants.
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
}

// Encode writes the request.
func (r *CreateRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Int(r.Flags)
}

// Decode reads the request.
func (r *CreateRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.Flags = d.Int()
}

// CreateTTLRequest is the body of OpCreateTTL: a CreateRequest with the
// time-to-live, in milliseconds, of a ModePersistentWithTTL or
// ModePersistentSequentialWithTTL node.
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
	TTL   int64
}

// Encode writes the request.
func (r *CreateTTLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Int(r.Flags)
	e.Long(r.TTL)
}

// Decode reads the request.
func (r *CreateTTLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.Flags = d.Int()
	r.TTL = d.Long()
}

// DeleteRequest is the body of OpDelete. Version -1 matches any version.
type DeleteRequest struct {
	Path    string
	Version int32
}

// Encode writes the request.
func (r *DeleteRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Version) }

// Decode reads the request.
func (r *DeleteRequest) Decode(d *Decoder) { r.Path = d.String(); r.Version = d.Int() }

// ExistsRequest is the body of OpExists. Watch asks for a data watch, set
// even when the node does not exist (it then fires on creation).
type ExistsRequest struct {
	Path  string
	Watch bool
}

// Encode writes the request.
func (r *ExistsRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode reads the request.
func (r *ExistsRequest) Decode(d *Decoder) { r.Path = d.String(); r.Watch = d.Bool() }

// GetDataRequest is the body of OpGetData.
type GetDataRequest struct {
	Path  string
	Watch bool
}

// Encode writes the request.
func (r *GetDataRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode reads the request.
func (r *GetDataRequest) Decode(d *Decoder) { r.Path = d.String(); r.Watch = d.Bool() }

// SetDataRequest is the body of OpSetData. Version -1 matches any version.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// Encode writes the request.
func (r *SetDataRequest) Encode(e *Encoder) { e.String(r.Path); e.Buffer(r.Data); e.Int(r.Version) }

// Decode reads the request.
func (r *SetDataRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int()
}

// GetACLRequest is the body of OpGetACL.
type GetACLRequest struct {
	Path string
}

// Encode writes the request.
func (r *GetACLRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads the request.
func (r *GetACLRequest) Decode(d *Decoder) { r.Path = d.String() }

// SetACLRequest is the body of OpSetACL. Version is the expected ACL
// version (Stat.Aversion); -1 matches any.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

// Encode writes the request.
func (r *SetACLRequest) Encode(e *Encoder) { e.String(r.Path); EncodeACLs(e, r.ACL); e.Int(r.Version) }

// Decode reads the request.
func (r *SetACLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.ACL = DecodeACLs(d)
	r.Version = d.Int()
}

// GetChildrenRequest is the body of OpGetChildren.
type GetChildrenRequest struct {
	Path  string
	Watch bool
}

// Encode writes the request.
func (r *GetChildrenRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode reads the request.
func (r *GetChildrenRequest) Decode(d *Decoder) { r.Path = d.String(); r.Watch = d.Bool() }

// GetChildren2Request is the body of OpGetChildren2 (children plus the
// parent's Stat).
type GetChildren2Request struct {
	Path  string
	Watch bool
}

// Encode writes the request.
func (r *GetChildren2Request) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode reads the request.
func (r *GetChildren2Request) Decode(d *Decoder) { r.Path = d.String(); r.Watch = d.Bool() }

// SyncRequest is the body of OpSync.
type SyncRequest struct {
	Path string
}

// Encode writes the request.
func (r *SyncRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads the request.
func (r *SyncRequest) Decode(d *Decoder) { r.Path = d.String() }

// CheckVersionRequest is the body of OpCheck, inside a multi or on its own:
// fail with ErrBadVersion unless Path's data version is Version.
type CheckVersionRequest struct {
	Path    string
	Version int32
}

// Encode writes the request.
func (r *CheckVersionRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Version) }

// Decode reads the request.
func (r *CheckVersionRequest) Decode(d *Decoder) { r.Path = d.String(); r.Version = d.Int() }

// GetEphemeralsRequest is the body of OpGetEphemerals: the session's
// ephemeral nodes whose path starts with PrefixPath.
type GetEphemeralsRequest struct {
	PrefixPath string
}

// Encode writes the request.
func (r *GetEphemeralsRequest) Encode(e *Encoder) { e.String(r.PrefixPath) }

// Decode reads the request.
func (r *GetEphemeralsRequest) Decode(d *Decoder) { r.PrefixPath = d.String() }

// GetAllChildrenNumberRequest is the body of OpGetAllChildrenNumber: the
// number of descendants of Path.
type GetAllChildrenNumberRequest struct {
	Path string
}

// Encode writes the request.
func (r *GetAllChildrenNumberRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads the request.
func (r *GetAllChildrenNumberRequest) Decode(d *Decoder) { r.Path = d.String() }

// ReconfigRequest is the body of OpReconfig. A single-node server has no
// ensemble to change; it is decoded only so it can be refused with
// ErrReconfigDisabled, as ZooKeeper does by default.
type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64
}

// Encode writes the request.
func (r *ReconfigRequest) Encode(e *Encoder) {
	e.String(r.JoiningServers)
	e.String(r.LeavingServers)
	e.String(r.NewMembers)
	e.Long(r.CurConfigID)
}

// Decode reads the request.
func (r *ReconfigRequest) Decode(d *Decoder) {
	r.JoiningServers = d.String()
	r.LeavingServers = d.String()
	r.NewMembers = d.String()
	r.CurConfigID = d.Long()
}
