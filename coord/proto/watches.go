package proto

// WatcherEvent is the body of a notification (ReplyHeader Xid
// XidNotification, Zxid -1): a watch on Path fired with Type while the
// session was in State.
type WatcherEvent struct {
	Type  EventType
	State KeeperState
	Path  string
}

// Encode writes the event.
func (r *WatcherEvent) Encode(e *Encoder) {
	e.Int(int32(r.Type))
	e.Int(int32(r.State))
	e.String(r.Path)
}

// Decode reads the event.
func (r *WatcherEvent) Decode(d *Decoder) {
	r.Type = EventType(d.Int())
	r.State = KeeperState(d.Int())
	r.Path = d.String()
}

// SetWatches is the body of OpSetWatches (Xid XidSetWatches), sent on
// reconnect to re-register watches. Events after RelativeZxid that would
// have fired a watch are delivered at once.
type SetWatches struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// Encode writes the request.
func (r *SetWatches) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
}

// Decode reads the request.
func (r *SetWatches) Decode(d *Decoder) {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
}

// SetWatches2 is the body of OpSetWatches2: SetWatches plus persistent and
// persistent-recursive watches (those added with OpAddWatch).
type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// Encode writes the request.
func (r *SetWatches2) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
	e.Strings(r.PersistentWatches)
	e.Strings(r.PersistentRecursiveWatches)
}

// Decode reads the request.
func (r *SetWatches2) Decode(d *Decoder) {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
	r.PersistentWatches = d.Strings()
	r.PersistentRecursiveWatches = d.Strings()
}

// AddWatchRequest is the body of OpAddWatch. Mode is AddWatchPersistent or
// AddWatchPersistentRecursive.
type AddWatchRequest struct {
	Path string
	Mode int32
}

// Encode writes the request.
func (r *AddWatchRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Mode) }

// Decode reads the request.
func (r *AddWatchRequest) Decode(d *Decoder) { r.Path = d.String(); r.Mode = d.Int() }

// RemoveWatchesRequest is the body of OpRemoveWatches. Type is
// WatcherChildren, WatcherData or WatcherAny.
type RemoveWatchesRequest struct {
	Path string
	Type int32
}

// Encode writes the request.
func (r *RemoveWatchesRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Type) }

// Decode reads the request.
func (r *RemoveWatchesRequest) Decode(d *Decoder) { r.Path = d.String(); r.Type = d.Int() }

// CheckWatchesRequest is the body of OpCheckWatches: does the session hold
// a watch of Type on Path (ErrNoWatcher if not)?
type CheckWatchesRequest struct {
	Path string
	Type int32
}

// Encode writes the request.
func (r *CheckWatchesRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Type) }

// Decode reads the request.
func (r *CheckWatchesRequest) Decode(d *Decoder) { r.Path = d.String(); r.Type = d.Int() }
