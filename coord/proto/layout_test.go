package proto

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// wire builds expected encodings field by field, independently of Encoder,
// so a field order mistake made identically in Encode and Decode (which a
// round trip cannot see) still fails TestWireLayout.
type wire struct{ b []byte }

func w() *wire { return &wire{} }

func (x *wire) i32(v int32) *wire { x.b = binary.BigEndian.AppendUint32(x.b, uint32(v)); return x }
func (x *wire) i64(v int64) *wire { x.b = binary.BigEndian.AppendUint64(x.b, uint64(v)); return x }
func (x *wire) op(v OpCode) *wire { return x.i32(int32(v)) }

func (x *wire) boolean(v bool) *wire {
	if v {
		x.b = append(x.b, 1)
	} else {
		x.b = append(x.b, 0)
	}
	return x
}

func (x *wire) str(s string) *wire { x.i32(int32(len(s))); x.b = append(x.b, s...); return x }

// buf writes a buffer; nil is length -1.
func (x *wire) buf(b []byte) *wire {
	if b == nil {
		return x.i32(-1)
	}
	x.i32(int32(len(b)))
	x.b = append(x.b, b...)
	return x
}

// strs writes a vector<ustring> of the given strings (never nil).
func (x *wire) strs(ss ...string) *wire {
	x.i32(int32(len(ss)))
	for _, s := range ss {
		x.str(s)
	}
	return x
}

func (x *wire) acls(a []ACL) *wire {
	if a == nil {
		return x.i32(-1)
	}
	x.i32(int32(len(a)))
	for _, e := range a {
		x.i32(e.Perms).str(e.Id.Scheme).str(e.Id.ID)
	}
	return x
}

// stat writes a Stat in data.Stat order: czxid mzxid ctime mtime version
// cversion aversion ephemeralOwner dataLength numChildren pzxid.
func (x *wire) stat(s Stat) *wire {
	return x.i64(s.Czxid).i64(s.Mzxid).i64(s.Ctime).i64(s.Mtime).
		i32(s.Version).i32(s.Cversion).i32(s.Aversion).i64(s.EphemeralOwner).
		i32(s.DataLength).i32(s.NumChildren).i64(s.Pzxid)
}

func (x *wire) multiHdr(t OpCode, done bool, err int32) *wire { return x.op(t).boolean(done).i32(err) }
func (x *wire) multiEnd() *wire                               { return x.multiHdr(-1, true, -1) }

// expectedLayout gives, for the samples of samples(), the bytes
// zookeeper.jute prescribes. Every record type must appear at least once.
func expectedLayout() map[string][]byte {
	ss := sampleStat
	return map[string][]byte{
		"RequestHeader": w().i32(7).op(OpGetData).b,
		"ReplyHeader":   w().i32(7).i64(0x200000003).i32(int32(ErrNoNode)).b,
		"ConnectRequest/readOnly": w().i32(0).i64(0x300000004).i32(30000).i64(0x0100000c02c20004).
			buf([]byte("0123456789abcdef")).boolean(true).b,
		"ConnectRequest/no-readOnly":  w().i32(0).i64(0).i32(10000).i64(0).buf(make([]byte, 16)).b,
		"ConnectResponse/readOnly":    w().i32(0).i32(10000).i64(42).buf([]byte("pw")).boolean(true).b,
		"ConnectResponse/no-readOnly": w().i32(0).i32(10000).i64(42).buf([]byte("pw")).b,
		"AuthPacket":                  w().i32(0).str("digest").buf([]byte("bob:secret")).b,
		"GetSASLRequest":              w().buf([]byte{1, 2, 3}).b,
		"SetSASLResponse":             w().buf(nil).b,
		"ClientInfo":                  w().str("ip").str("127.0.0.1").b,
		"WhoAmIResponse":              w().i32(2).str("ip").str("127.0.0.1").str("digest").str("bob").b,
		"WhoAmIResponse/nil":          w().i32(-1).b,
		"CreateRequest": w().str("/a/b").buf([]byte("payload")).acls(sampleACL).
			i32(ModeEphemeralSequential).b,
		"CreateRequest/nil-data-nil-acl": w().str("/a").buf(nil).acls(nil).i32(0).b,
		"CreateTTLRequest": w().str("/ttl").buf([]byte{}).acls(sampleACL[:1]).
			i32(ModePersistentWithTTL).i64(60_000).b,
		"DeleteRequest":                w().str("/a").i32(-1).b,
		"ExistsRequest":                w().str("/a").boolean(true).b,
		"GetDataRequest":               w().str("/a").boolean(true).b,
		"SetDataRequest":               w().str("/a").buf([]byte("v2")).i32(3).b,
		"GetACLRequest":                w().str("/a").b,
		"SetACLRequest":                w().str("/a").acls(sampleACL).i32(5).b,
		"GetChildrenRequest":           w().str("/").boolean(true).b,
		"GetChildren2Request":          w().str("/x").boolean(false).b,
		"SyncRequest":                  w().str("/a").b,
		"CheckVersionRequest":          w().str("/a").i32(9).b,
		"GetEphemeralsRequest":         w().str("/locks").b,
		"GetAllChildrenNumberRequest":  w().str("/a").b,
		"ReconfigRequest":              w().str("server.2=h:2888:3888").str("").str("").i64(-1).b,
		"CreateResponse":               w().str("/q/item-0000000001").b,
		"Create2Response":              w().str("/a").stat(ss).b,
		"ExistsResponse":               w().stat(ss).b,
		"GetDataResponse":              w().buf([]byte("v")).stat(ss).b,
		"GetDataResponse/nil-data":     w().buf(nil).stat(ss).b,
		"SetDataResponse":              w().stat(ss).b,
		"GetACLResponse":               w().acls(sampleACL).stat(ss).b,
		"SetACLResponse":               w().stat(ss).b,
		"GetChildrenResponse":          w().strs("a", "b", "").b,
		"GetChildrenResponse/nil":      w().i32(-1).b,
		"GetChildren2Response":         w().strs("x").stat(ss).b,
		"SyncResponse":                 w().str("/a").b,
		"GetEphemeralsResponse":        w().strs("/locks/l-1", "/e").b,
		"GetAllChildrenNumberResponse": w().i32(12345).b,
		"ErrorResponse":                w().i32(int32(ErrNodeExists)).b,
		"WatcherEvent":                 w().i32(int32(EventNodeChildrenChanged)).i32(int32(StateSyncConnected)).str("/a").b,
		"SetWatches":                   w().i64(99).strs("/d").strs().strs("/c1", "/c2").b,
		"SetWatches2": w().i64(100).strs("/d").strs("/e").i32(-1).strs("/p").
			strs("/r", "/r2").b,
		"AddWatchRequest":      w().str("/a").i32(AddWatchPersistentRecursive).b,
		"RemoveWatchesRequest": w().str("/a").i32(WatcherAny).b,
		"CheckWatchesRequest":  w().str("/a").i32(WatcherData).b,
		"MultiHeader":          w().multiHdr(OpCreate, false, -1).b,
		"MultiRequest/reads": w().
			multiHdr(OpGetData, false, -1).str("/a").boolean(false).
			multiHdr(OpGetChildren, false, -1).str("/").boolean(false).
			multiEnd().b,
		"MultiRequest/writes": w().
			multiHdr(OpCreate, false, -1).str("/m/a").buf([]byte("1")).acls(sampleACL).i32(ModePersistent).
			multiHdr(OpCreate2, false, -1).str("/m/b").buf(nil).acls(sampleACL[:1]).i32(ModeEphemeral).
			multiHdr(OpCreateContainer, false, -1).str("/m/c").buf(nil).acls(sampleACL[:1]).i32(ModeContainer).
			multiHdr(OpCreateTTL, false, -1).str("/m/d").buf(nil).acls(sampleACL[:1]).i32(ModePersistentWithTTL).i64(5).
			multiHdr(OpSetData, false, -1).str("/m").buf([]byte("x")).i32(2).
			multiHdr(OpCheck, false, -1).str("/m").i32(3).
			multiHdr(OpDelete, false, -1).str("/m/a").i32(-1).
			multiEnd().b,
		"MultiRequest/empty": w().multiEnd().b,
		"MultiResponse": w().
			multiHdr(OpCreate, false, 0).str("/m/a").
			multiHdr(OpCreate2, false, 0).str("/m/b").stat(ss).
			multiHdr(OpSetData, false, 0).stat(ss).
			multiHdr(OpCheck, false, 0).
			multiHdr(OpDelete, false, 0).
			multiHdr(OpGetData, false, 0).buf([]byte("d")).stat(ss).
			multiHdr(OpGetChildren, false, 0).strs("x", "y").
			multiHdr(OpError, false, int32(ErrNoNode)).i32(int32(ErrNoNode)).
			multiEnd().b,
		"Id":   w().str("ip").str("10.0.0.1").b,
		"ACL":  w().i32(PermCreate).str("auth").str("").b,
		"Stat": w().stat(ss).b,
	}
}

func TestWireLayout(t *testing.T) {
	layout := expectedLayout()
	covered := map[reflect.Type]bool{}
	for _, s := range samples() {
		want, ok := layout[s.name]
		if !ok {
			continue
		}
		covered[reflect.TypeOf(s.rec)] = true
		delete(layout, s.name)
		if got := Encode(s.rec); !bytes.Equal(got, want) {
			t.Errorf("%s: encoding\n got: %x\nwant: %x", s.name, got, want)
		}
	}
	for name := range layout {
		t.Errorf("layout %q names no sample", name)
	}
	for _, s := range samples() {
		if !covered[reflect.TypeOf(s.rec)] {
			t.Errorf("no expected layout for any sample of %T", s.rec)
		}
	}
}
