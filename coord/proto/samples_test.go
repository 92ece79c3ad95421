package proto

import (
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

// sampleStat has a distinct value in every field so a swapped field order
// cannot round-trip by accident.
var sampleStat = Stat{
	Czxid: 0x100000001, Mzxid: 0x100000002, Ctime: 1_700_000_000_001, Mtime: 1_700_000_000_002,
	Version: 3, Cversion: 4, Aversion: 5, EphemeralOwner: 0x0100000c02c20004,
	DataLength: 6, NumChildren: 7, Pzxid: 0x100000008,
}

var sampleACL = []ACL{
	{Perms: PermAll, Id: Id{Scheme: "world", ID: "anyone"}},
	{Perms: PermRead | PermAdmin, Id: Id{Scheme: "digest", ID: "bob:x1y2"}},
}

// sample is one named, populated record.
type sample struct {
	name string
	rec  Record
}

// samples returns fresh values of every record type in the package, with
// nil/empty variants where the encoding tells them apart. Tests may mutate
// what they get.
func samples() []sample {
	return []sample{
		{"RequestHeader", &RequestHeader{Xid: 7, Type: OpGetData}},
		{"RequestHeader/ping", &RequestHeader{Xid: XidPing, Type: OpPing}},
		{"ReplyHeader", &ReplyHeader{Xid: 7, Zxid: 0x200000003, Err: ErrNoNode}},
		{"ConnectRequest/no-readOnly", &ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)}},
		{"ConnectRequest/readOnly", &ConnectRequest{ProtocolVersion: 0, LastZxidSeen: 0x300000004, TimeOut: 30000,
			SessionID: 0x0100000c02c20004, Passwd: []byte("0123456789abcdef"), ReadOnly: true, HasReadOnly: true}},
		{"ConnectRequest/readOnly-false", &ConnectRequest{TimeOut: 4000, Passwd: []byte{}, HasReadOnly: true}},
		{"ConnectResponse/no-readOnly", &ConnectResponse{TimeOut: 10000, SessionID: 42, Passwd: []byte("pw")}},
		{"ConnectResponse/readOnly", &ConnectResponse{TimeOut: 10000, SessionID: 42, Passwd: []byte("pw"),
			ReadOnly: true, HasReadOnly: true}},
		{"AuthPacket", &AuthPacket{Scheme: "digest", Auth: []byte("bob:secret")}},
		{"GetSASLRequest", &GetSASLRequest{Token: []byte{1, 2, 3}}},
		{"SetSASLResponse", &SetSASLResponse{Token: nil}},
		{"ClientInfo", &ClientInfo{AuthScheme: "ip", User: "127.0.0.1"}},
		{"WhoAmIResponse", &WhoAmIResponse{ClientInfo: []ClientInfo{{"ip", "127.0.0.1"}, {"digest", "bob"}}}},
		{"WhoAmIResponse/empty", &WhoAmIResponse{ClientInfo: []ClientInfo{}}},
		{"WhoAmIResponse/nil", &WhoAmIResponse{}},
		{"CreateRequest", &CreateRequest{Path: "/a/b", Data: []byte("payload"), ACL: sampleACL, Flags: ModeEphemeralSequential}},
		{"CreateRequest/nil-data-nil-acl", &CreateRequest{Path: "/a"}},
		{"CreateTTLRequest", &CreateTTLRequest{Path: "/ttl", Data: []byte{}, ACL: sampleACL[:1],
			Flags: ModePersistentWithTTL, TTL: 60_000}},
		{"DeleteRequest", &DeleteRequest{Path: "/a", Version: -1}},
		{"ExistsRequest", &ExistsRequest{Path: "/a", Watch: true}},
		{"GetDataRequest", &GetDataRequest{Path: "/a", Watch: true}},
		{"SetDataRequest", &SetDataRequest{Path: "/a", Data: []byte("v2"), Version: 3}},
		{"GetACLRequest", &GetACLRequest{Path: "/a"}},
		{"SetACLRequest", &SetACLRequest{Path: "/a", ACL: sampleACL, Version: 5}},
		{"GetChildrenRequest", &GetChildrenRequest{Path: "/", Watch: true}},
		{"GetChildren2Request", &GetChildren2Request{Path: "/x", Watch: false}},
		{"SyncRequest", &SyncRequest{Path: "/a"}},
		{"CheckVersionRequest", &CheckVersionRequest{Path: "/a", Version: 9}},
		{"GetEphemeralsRequest", &GetEphemeralsRequest{PrefixPath: "/locks"}},
		{"GetAllChildrenNumberRequest", &GetAllChildrenNumberRequest{Path: "/a"}},
		{"ReconfigRequest", &ReconfigRequest{JoiningServers: "server.2=h:2888:3888", NewMembers: "", CurConfigID: -1}},
		{"CreateResponse", &CreateResponse{Path: "/q/item-0000000001"}},
		{"Create2Response", &Create2Response{Path: "/a", Stat: sampleStat}},
		{"ExistsResponse", &ExistsResponse{Stat: sampleStat}},
		{"GetDataResponse", &GetDataResponse{Data: []byte("v"), Stat: sampleStat}},
		{"GetDataResponse/nil-data", &GetDataResponse{Stat: sampleStat}},
		{"SetDataResponse", &SetDataResponse{Stat: sampleStat}},
		{"GetACLResponse", &GetACLResponse{ACL: sampleACL, Stat: sampleStat}},
		{"SetACLResponse", &SetACLResponse{Stat: sampleStat}},
		{"GetChildrenResponse", &GetChildrenResponse{Children: []string{"a", "b", ""}}},
		{"GetChildrenResponse/empty", &GetChildrenResponse{Children: []string{}}},
		{"GetChildrenResponse/nil", &GetChildrenResponse{}},
		{"GetChildren2Response", &GetChildren2Response{Children: []string{"x"}, Stat: sampleStat}},
		{"SyncResponse", &SyncResponse{Path: "/a"}},
		{"GetEphemeralsResponse", &GetEphemeralsResponse{Ephemerals: []string{"/locks/l-1", "/e"}}},
		{"GetAllChildrenNumberResponse", &GetAllChildrenNumberResponse{TotalNumber: 12345}},
		{"ErrorResponse", &ErrorResponse{Err: int32(ErrNodeExists)}},
		{"WatcherEvent", &WatcherEvent{Type: EventNodeChildrenChanged, State: StateSyncConnected, Path: "/a"}},
		{"WatcherEvent/session", &WatcherEvent{Type: EventNone, State: StateExpired}},
		{"SetWatches", &SetWatches{RelativeZxid: 99, DataWatches: []string{"/d"}, ExistWatches: []string{},
			ChildWatches: []string{"/c1", "/c2"}}},
		{"SetWatches2", &SetWatches2{RelativeZxid: 100, DataWatches: []string{"/d"}, ExistWatches: []string{"/e"},
			ChildWatches: nil, PersistentWatches: []string{"/p"}, PersistentRecursiveWatches: []string{"/r", "/r2"}}},
		{"AddWatchRequest", &AddWatchRequest{Path: "/a", Mode: AddWatchPersistentRecursive}},
		{"RemoveWatchesRequest", &RemoveWatchesRequest{Path: "/a", Type: WatcherAny}},
		{"CheckWatchesRequest", &CheckWatchesRequest{Path: "/a", Type: WatcherData}},
		{"MultiHeader", &MultiHeader{Type: OpCreate, Done: false, Err: -1}},
		{"MultiRequest/writes", &MultiRequest{Ops: []MultiOp{
			{OpCreate, &CreateRequest{Path: "/m/a", Data: []byte("1"), ACL: sampleACL, Flags: ModePersistent}},
			{OpCreate2, &CreateRequest{Path: "/m/b", ACL: sampleACL[:1], Flags: ModeEphemeral}},
			{OpCreateContainer, &CreateRequest{Path: "/m/c", ACL: sampleACL[:1], Flags: ModeContainer}},
			{OpCreateTTL, &CreateTTLRequest{Path: "/m/d", ACL: sampleACL[:1], Flags: ModePersistentWithTTL, TTL: 5}},
			{OpSetData, &SetDataRequest{Path: "/m", Data: []byte("x"), Version: 2}},
			{OpCheck, &CheckVersionRequest{Path: "/m", Version: 3}},
			{OpDelete, &DeleteRequest{Path: "/m/a", Version: -1}},
		}}},
		{"MultiRequest/reads", &MultiRequest{Ops: []MultiOp{
			{OpGetData, &GetDataRequest{Path: "/a"}},
			{OpGetChildren, &GetChildrenRequest{Path: "/"}},
		}}},
		{"MultiRequest/empty", &MultiRequest{}},
		{"MultiResponse", &MultiResponse{Results: []MultiResult{
			{Type: OpCreate, Path: "/m/a"},
			{Type: OpCreate2, Path: "/m/b", Stat: sampleStat},
			{Type: OpSetData, Stat: sampleStat},
			{Type: OpCheck},
			{Type: OpDelete},
			{Type: OpGetData, Data: []byte("d"), Stat: sampleStat},
			{Type: OpGetChildren, Children: []string{"x", "y"}},
			{Type: OpError, Err: ErrNoNode},
		}}},
		{"MultiResponse/empty", &MultiResponse{}},
		{"Id", &Id{Scheme: "ip", ID: "10.0.0.1"}},
		{"ACL", &ACL{Perms: PermCreate, Id: Id{Scheme: "auth", ID: ""}}},
		{"Stat", func() *Stat { s := sampleStat; return &s }()},
	}
}

// newLike returns a zero value of r's concrete type.
func newLike(r Record) Record {
	return reflect.New(reflect.TypeOf(r).Elem()).Interface().(Record)
}

// unhex decodes hex written with optional spaces and line breaks.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// recordSeq is several records back to back, as in a frame holding a
// header and a body.
type recordSeq []Record

func (s recordSeq) Encode(e *Encoder) {
	for _, r := range s {
		r.Encode(e)
	}
}

func (s recordSeq) Decode(d *Decoder) {
	for _, r := range s {
		r.Decode(d)
	}
}
