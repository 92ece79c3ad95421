package proto

import "fmt"

// OpCode identifies a request type (the "type" field of RequestHeader).
type OpCode int32

// Op codes, as numbered by ZooKeeper's ZooDefs.OpCode.
const (
	OpNotification         OpCode = 0
	OpCreate               OpCode = 1
	OpDelete               OpCode = 2
	OpExists               OpCode = 3
	OpGetData              OpCode = 4
	OpSetData              OpCode = 5
	OpGetACL               OpCode = 6
	OpSetACL               OpCode = 7
	OpGetChildren          OpCode = 8
	OpSync                 OpCode = 9
	OpPing                 OpCode = 11
	OpGetChildren2         OpCode = 12
	OpCheck                OpCode = 13
	OpMulti                OpCode = 14
	OpCreate2              OpCode = 15
	OpReconfig             OpCode = 16
	OpCheckWatches         OpCode = 17
	OpRemoveWatches        OpCode = 18
	OpCreateContainer      OpCode = 19
	OpDeleteContainer      OpCode = 20
	OpCreateTTL            OpCode = 21
	OpMultiRead            OpCode = 22
	OpAuth                 OpCode = 100
	OpSetWatches           OpCode = 101
	OpSASL                 OpCode = 102
	OpGetEphemerals        OpCode = 103
	OpGetAllChildrenNumber OpCode = 104
	OpSetWatches2          OpCode = 105
	OpAddWatch             OpCode = 106
	OpWhoAmI               OpCode = 107
	OpCreateSession        OpCode = -10
	OpCloseSession         OpCode = -11
	OpError                OpCode = -1
)

var opNames = map[OpCode]string{
	OpNotification: "notification", OpCreate: "create", OpDelete: "delete",
	OpExists: "exists", OpGetData: "getData", OpSetData: "setData",
	OpGetACL: "getACL", OpSetACL: "setACL", OpGetChildren: "getChildren",
	OpSync: "sync", OpPing: "ping", OpGetChildren2: "getChildren2",
	OpCheck: "check", OpMulti: "multi", OpCreate2: "create2",
	OpReconfig: "reconfig", OpCheckWatches: "checkWatches",
	OpRemoveWatches: "removeWatches", OpCreateContainer: "createContainer",
	OpDeleteContainer: "deleteContainer", OpCreateTTL: "createTTL",
	OpMultiRead: "multiRead", OpAuth: "auth", OpSetWatches: "setWatches",
	OpSASL: "sasl", OpGetEphemerals: "getEphemerals",
	OpGetAllChildrenNumber: "getAllChildrenNumber", OpSetWatches2: "setWatches2",
	OpAddWatch: "addWatch", OpWhoAmI: "whoAmI", OpCreateSession: "createSession",
	OpCloseSession: "closeSession", OpError: "error",
}

// Known reports whether o is an op code of ZooKeeper's protocol.
func (o OpCode) Known() bool {
	_, ok := opNames[o]
	return ok
}

func (o OpCode) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("op(%d)", int32(o))
}

// Special xids in RequestHeader/ReplyHeader.
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)

// ErrCode is a ZooKeeper error code (KeeperException.Code).
type ErrCode int32

// Error codes, as numbered by ZooKeeper.
const (
	ErrOK                       ErrCode = 0
	ErrSystemError              ErrCode = -1
	ErrRuntimeInconsistency     ErrCode = -2
	ErrDataInconsistency        ErrCode = -3
	ErrConnectionLoss           ErrCode = -4
	ErrMarshallingError         ErrCode = -5
	ErrUnimplemented            ErrCode = -6
	ErrOperationTimeout         ErrCode = -7
	ErrBadArguments             ErrCode = -8
	ErrNewConfigNoQuorum        ErrCode = -13
	ErrReconfigInProgress       ErrCode = -14
	ErrUnknownSession           ErrCode = -12
	ErrAPIError                 ErrCode = -100
	ErrNoNode                   ErrCode = -101
	ErrNoAuth                   ErrCode = -102
	ErrBadVersion               ErrCode = -103
	ErrNoChildrenForEphemerals  ErrCode = -108
	ErrNodeExists               ErrCode = -110
	ErrNotEmpty                 ErrCode = -111
	ErrSessionExpired           ErrCode = -112
	ErrInvalidCallback          ErrCode = -113
	ErrInvalidACL               ErrCode = -114
	ErrAuthFailed               ErrCode = -115
	ErrSessionMoved             ErrCode = -118
	ErrNotReadOnly              ErrCode = -119
	ErrEphemeralOnLocalSession  ErrCode = -120
	ErrNoWatcher                ErrCode = -121
	ErrRequestTimeout           ErrCode = -122
	ErrReconfigDisabled         ErrCode = -123
	ErrSessionClosedRequireSASL ErrCode = -124
	ErrQuotaExceeded            ErrCode = -125
	ErrThrottledOp              ErrCode = -127
)

var errNames = map[ErrCode]string{
	ErrOK: "ok", ErrSystemError: "system error",
	ErrRuntimeInconsistency: "runtime inconsistency", ErrDataInconsistency: "data inconsistency",
	ErrConnectionLoss: "connection loss", ErrMarshallingError: "marshalling error",
	ErrUnimplemented: "unimplemented", ErrOperationTimeout: "operation timeout",
	ErrBadArguments: "bad arguments", ErrNewConfigNoQuorum: "new config no quorum",
	ErrReconfigInProgress: "reconfig in progress", ErrUnknownSession: "unknown session",
	ErrAPIError: "api error", ErrNoNode: "no node", ErrNoAuth: "not authenticated",
	ErrBadVersion: "bad version", ErrNoChildrenForEphemerals: "no children for ephemerals",
	ErrNodeExists: "node exists", ErrNotEmpty: "directory not empty",
	ErrSessionExpired: "session expired", ErrInvalidCallback: "invalid callback",
	ErrInvalidACL: "invalid ACL", ErrAuthFailed: "authentication failed",
	ErrSessionMoved: "session moved", ErrNotReadOnly: "not a read-only call",
	ErrEphemeralOnLocalSession: "ephemeral on local session", ErrNoWatcher: "no watcher",
	ErrRequestTimeout: "request timeout", ErrReconfigDisabled: "reconfig disabled",
	ErrSessionClosedRequireSASL: "session closed, SASL required",
	ErrQuotaExceeded:            "quota exceeded", ErrThrottledOp: "throttled",
}

// Error makes ErrCode usable as an error value ("zk: node exists").
func (c ErrCode) Error() string {
	if n, ok := errNames[c]; ok {
		return "zk: " + n
	}
	return fmt.Sprintf("zk: error %d", int32(c))
}

// Create mode flags (the "flags" field of CreateRequest), as ZooKeeper's
// CreateMode.toFlag.
const (
	ModePersistent                  int32 = 0
	ModeEphemeral                   int32 = 1
	ModePersistentSequential        int32 = 2
	ModeEphemeralSequential         int32 = 3
	ModeContainer                   int32 = 4
	ModePersistentWithTTL           int32 = 5
	ModePersistentSequentialWithTTL int32 = 6
)

// Permission bits of an ACL entry.
const (
	PermRead   int32 = 1 << 0
	PermWrite  int32 = 1 << 1
	PermCreate int32 = 1 << 2
	PermDelete int32 = 1 << 3
	PermAdmin  int32 = 1 << 4
	PermAll    int32 = PermRead | PermWrite | PermCreate | PermDelete | PermAdmin
)

// EventType is the type of a WatcherEvent.
type EventType int32

// Event types, as ZooKeeper's Watcher.Event.EventType.
const (
	EventNone                   EventType = -1
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

// KeeperState is the session state carried by a WatcherEvent.
type KeeperState int32

// Keeper states, as ZooKeeper's Watcher.Event.KeeperState.
const (
	StateDisconnected      KeeperState = 0
	StateSyncConnected     KeeperState = 3
	StateAuthFailed        KeeperState = 4
	StateConnectedReadOnly KeeperState = 5
	StateSaslAuthenticated KeeperState = 6
	StateExpired           KeeperState = -112
	StateClosed            KeeperState = 7
)

// Watcher types for checkWatches/removeWatches (WatcherType in ZooKeeper).
const (
	WatcherChildren int32 = 1
	WatcherData     int32 = 2
	WatcherAny      int32 = 3
)

// AddWatch modes (AddWatchMode in ZooKeeper).
const (
	AddWatchPersistent          int32 = 0
	AddWatchPersistentRecursive int32 = 1
)

// Id is an ACL identity: a scheme and an id within it.
type Id struct {
	Scheme string
	ID     string
}

func (r *Id) Encode(e *Encoder) { e.String(r.Scheme); e.String(r.ID) }
func (r *Id) Decode(d *Decoder) { r.Scheme = d.String(); r.ID = d.String() }

// ACL is one access control entry.
type ACL struct {
	Perms int32
	Id    Id
}

func (r *ACL) Encode(e *Encoder) { e.Int(r.Perms); r.Id.Encode(e) }
func (r *ACL) Decode(d *Decoder) { r.Perms = d.Int(); r.Id.Decode(d) }

// Well-known ACLs (ZooDefs.Ids).
var (
	ACLOpenUnsafe = []ACL{{Perms: PermAll, Id: Id{Scheme: "world", ID: "anyone"}}}
	ACLReadUnsafe = []ACL{{Perms: PermRead, Id: Id{Scheme: "world", ID: "anyone"}}}
	ACLCreatorAll = []ACL{{Perms: PermAll, Id: Id{Scheme: "auth", ID: ""}}}
)

// EncodeACLs writes a vector<ACL>; nil is written as length -1.
func EncodeACLs(e *Encoder, acls []ACL) {
	if acls == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(acls)))
	for i := range acls {
		acls[i].Encode(e)
	}
}

// DecodeACLs reads a vector<ACL>.
func DecodeACLs(d *Decoder) []ACL {
	n, isNil := d.VectorLen(12) // perms + two empty strings
	if isNil || d.Err() != nil {
		return nil
	}
	out := make([]ACL, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		out[i].Decode(d)
	}
	return out
}

// Stat is a znode's metadata, field for field as ZooKeeper's data.Stat.
type Stat struct {
	Czxid          int64 // zxid of the create
	Mzxid          int64 // zxid of the last data change
	Ctime          int64 // create time, ms since epoch
	Mtime          int64 // last data change time, ms since epoch
	Version        int32 // data version
	Cversion       int32 // children version
	Aversion       int32 // ACL version
	EphemeralOwner int64 // owning session of an ephemeral, else 0
	DataLength     int32
	NumChildren    int32
	Pzxid          int64 // zxid of the last child create/delete
}

func (s *Stat) Encode(e *Encoder) {
	e.Long(s.Czxid)
	e.Long(s.Mzxid)
	e.Long(s.Ctime)
	e.Long(s.Mtime)
	e.Int(s.Version)
	e.Int(s.Cversion)
	e.Int(s.Aversion)
	e.Long(s.EphemeralOwner)
	e.Int(s.DataLength)
	e.Int(s.NumChildren)
	e.Long(s.Pzxid)
}

func (s *Stat) Decode(d *Decoder) {
	s.Czxid = d.Long()
	s.Mzxid = d.Long()
	s.Ctime = d.Long()
	s.Mtime = d.Long()
	s.Version = d.Int()
	s.Cversion = d.Int()
	s.Aversion = d.Int()
	s.EphemeralOwner = d.Long()
	s.DataLength = d.Int()
	s.NumChildren = d.Int()
	s.Pzxid = d.Long()
}
