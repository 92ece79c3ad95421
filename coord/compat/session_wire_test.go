package compat

import (
	"fmt"
	"strings"
	"time"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// defaultWireTimeout is the session timeout raw sessions ask for: long
// enough that no scenario needs to ping.
const defaultWireTimeout = 30000

// wireSession is a raw-protocol session. Notifications are written to the
// transcript as they are read, so their position relative to replies is
// part of what is compared.
type wireSession struct {
	s      *script
	w      *wireConn
	id     int64
	passwd []byte
	name   string
}

// wire opens a raw session with a 30 s timeout.
func (s *script) wire() *wireSession {
	s.t.Helper()
	return s.wireWith(defaultWireTimeout, 0, nil)
}

// wireWith opens a raw connection asking for timeoutMs, creating a session
// (sessionID 0) or resuming one. It writes the negotiated answer; an
// answer with session id 0 is ZooKeeper's "that session is expired".
func (s *script) wireWith(timeoutMs int32, sessionID int64, passwd []byte) *wireSession {
	s.t.Helper()
	return s.wireConnect(timeoutMs, sessionID, passwd, true)
}

// wireConnect is wireWith choosing whether the ConnectRequest carries the
// readOnly byte.
func (s *script) wireConnect(timeoutMs int32, sessionID int64, passwd []byte, readOnlyByte bool) *wireSession {
	s.t.Helper()
	w, r, err := dialWire(s.tg.addr, timeoutMs, sessionID, passwd, readOnlyByte)
	if err != nil {
		s.t.Fatalf("%s: %v", s.tg.name, err)
	}
	s.closers = append(s.closers, w.release)
	ws := &wireSession{s: s, w: w, id: r.sessionID, passwd: r.passwd, name: sess(r.sessionID)}
	w.onEvent = func(ev wireEvent) {
		s.tr.add("%s event %s", ws.name, fmtEvent(ev.typ, ev.state, ev.path))
	}
	resume := ""
	if sessionID != 0 {
		resume = " resume=" + sess(sessionID)
	}
	if !readOnlyByte {
		resume += " (no readOnly byte)"
	}
	ro := "absent"
	if r.hasRO {
		ro = fmt.Sprint(r.readOnly)
	}
	s.tr.add("%s connect timeout=%d%s -> timeout=%d session=%s passwd=%d bytes readOnly=%s",
		ws.name, timeoutMs, resume, r.timeout, sess(r.sessionID), len(r.passwd), ro)
	return ws
}

// result is one decoded answer, ready for the transcript.
type result struct {
	code proto.ErrCode
	zxid int64
	text string // decoded body when code is ok
}

// do sends op and writes "name args -> code | body". The reply header's
// zxid is written for successful writes only: for reads it is whatever
// the server last committed (other scenarios run concurrently), and a
// failed write's zxid is an error transaction that ZooKeeper logs and
// others need not.
func (ws *wireSession) do(name, args string, op proto.OpCode, write bool, body func(e *proto.Encoder), decode func(d *proto.Decoder) string) result {
	ws.s.t.Helper()
	r, err := ws.w.call(op, body)
	if err != nil {
		ws.s.tr.add("%s %s %s -> connection error", ws.name, name, args)
		ws.s.t.Logf("%s: %s: %v", ws.s.tg.name, name, err)
		return result{code: proto.ErrConnectionLoss}
	}
	res := result{code: r.err, zxid: r.zxid}
	line := fmt.Sprintf("%s %s %s -> %s", ws.name, name, args, fmtCode(r.err))
	if r.err == proto.ErrOK || op == proto.OpMulti || op == proto.OpMultiRead {
		if write && r.err == proto.ErrOK {
			line += " zxid=" + zx(r.zxid)
		}
		if decode != nil {
			res.text = decode(r.body)
			if err := r.body.Err(); err != nil {
				res.text += fmt.Sprintf(" (undecodable: %v)", err)
			}
			line += " | " + res.text
		}
	}
	ws.s.tr.add("%s", line)
	return res
}

func pathBody(p string) func(e *proto.Encoder) {
	return func(e *proto.Encoder) { e.String(p) }
}

func pathWatchBody(p string, watch bool) func(e *proto.Encoder) {
	return func(e *proto.Encoder) { e.String(p); e.Bool(watch) }
}

func decodeStatText(d *proto.Decoder) string { return fmtStat(decodeStat(d)) }

func createBody(p string, data []byte, acl []proto.ACL, mode int32) func(e *proto.Encoder) {
	return func(e *proto.Encoder) {
		e.String(p)
		e.Buffer(data)
		encodeACLs(e, acl)
		e.Int(mode)
	}
}

func fmtACLSuffix(acl []proto.ACL) string {
	if len(acl) == 1 && acl[0] == proto.ACLOpenUnsafe[0] {
		return ""
	}
	return " acl=" + fmtACLs(acl)
}

func (ws *wireSession) create(p string, data []byte, mode int32) result {
	return ws.createACL(p, data, mode, proto.ACLOpenUnsafe)
}

func (ws *wireSession) createACL(p string, data []byte, mode int32, acl []proto.ACL) result {
	return ws.do("create", fmt.Sprintf("%q %s %s%s", p, fmtData(data), fmtMode(mode), fmtACLSuffix(acl)), proto.OpCreate, true,
		createBody(p, data, acl, mode), func(d *proto.Decoder) string { return d.String() })
}

// create2 is create answering with the new node's Stat.
func (ws *wireSession) create2(p string, data []byte, mode int32) result {
	return ws.do("create2", fmt.Sprintf("%q %s %s", p, fmtData(data), fmtMode(mode)), proto.OpCreate2, true,
		createBody(p, data, proto.ACLOpenUnsafe, mode), decodeCreate2)
}

func decodeCreate2(d *proto.Decoder) string { return d.String() + " " + decodeStatText(d) }

func (ws *wireSession) createContainer(p string, data []byte) result {
	return ws.do("createContainer", fmt.Sprintf("%q %s", p, fmtData(data)), proto.OpCreateContainer, true,
		createBody(p, data, proto.ACLOpenUnsafe, proto.ModeContainer), decodeCreate2)
}

func (ws *wireSession) createTTL(p string, data []byte, mode int32, ttlMs int64) result {
	return ws.do("createTTL", fmt.Sprintf("%q %s %s ttl=%d", p, fmtData(data), fmtMode(mode), ttlMs), proto.OpCreateTTL, true,
		func(e *proto.Encoder) {
			createBody(p, data, proto.ACLOpenUnsafe, mode)(e)
			e.Long(ttlMs)
		}, decodeCreate2)
}

func (ws *wireSession) delete(p string, version int32) result {
	return ws.do("delete", fmt.Sprintf("%q v=%d", p, version), proto.OpDelete, true,
		func(e *proto.Encoder) { e.String(p); e.Int(version) }, nil)
}

func (ws *wireSession) set(p string, data []byte, version int32) result {
	return ws.do("set", fmt.Sprintf("%q %s v=%d", p, fmtData(data), version), proto.OpSetData, true,
		func(e *proto.Encoder) { e.String(p); e.Buffer(data); e.Int(version) }, decodeStatText)
}

func (ws *wireSession) get(p string, watch bool) result {
	return ws.do(watchName("get", watch), fmt.Sprintf("%q", p), proto.OpGetData, false, pathWatchBody(p, watch),
		func(d *proto.Decoder) string { return fmtData(d.Buffer()) + " " + decodeStatText(d) })
}

func (ws *wireSession) exists(p string, watch bool) result {
	return ws.do(watchName("exists", watch), fmt.Sprintf("%q", p), proto.OpExists, false, pathWatchBody(p, watch), decodeStatText)
}

func (ws *wireSession) children(p string, watch bool) result {
	return ws.do(watchName("getChildren", watch), fmt.Sprintf("%q", p), proto.OpGetChildren, false, pathWatchBody(p, watch),
		func(d *proto.Decoder) string { return fmtChildren(d.Strings()) })
}

func (ws *wireSession) children2(p string, watch bool) result {
	return ws.do(watchName("getChildren2", watch), fmt.Sprintf("%q", p), proto.OpGetChildren2, false, pathWatchBody(p, watch),
		func(d *proto.Decoder) string { return fmtChildren(d.Strings()) + " " + decodeStatText(d) })
}

func watchName(op string, watch bool) string {
	if watch {
		return op + "W"
	}
	return op
}

func (ws *wireSession) getACL(p string) result {
	return ws.do("getACL", fmt.Sprintf("%q", p), proto.OpGetACL, false, pathBody(p),
		func(d *proto.Decoder) string { return fmtACLs(decodeACLs(d)) + " " + decodeStatText(d) })
}

func (ws *wireSession) setACL(p string, acl []proto.ACL, version int32) result {
	return ws.do("setACL", fmt.Sprintf("%q %s v=%d", p, fmtACLs(acl), version), proto.OpSetACL, true,
		func(e *proto.Encoder) { e.String(p); encodeACLs(e, acl); e.Int(version) }, decodeStatText)
}

func (ws *wireSession) sync(p string) result {
	return ws.do("sync", fmt.Sprintf("%q", p), proto.OpSync, false, pathBody(p),
		func(d *proto.Decoder) string { return d.String() })
}

func (ws *wireSession) checkWatches(p string, typ int32) result {
	return ws.do("checkWatches", fmt.Sprintf("%q type=%d", p, typ), proto.OpCheckWatches, false,
		func(e *proto.Encoder) { e.String(p); e.Int(typ) }, nil)
}

func (ws *wireSession) removeWatches(p string, typ int32) result {
	return ws.do("removeWatches", fmt.Sprintf("%q type=%d", p, typ), proto.OpRemoveWatches, false,
		func(e *proto.Encoder) { e.String(p); e.Int(typ) }, nil)
}

func (ws *wireSession) addWatch(p string, mode int32) result {
	return ws.do("addWatch", fmt.Sprintf("%q mode=%d", p, mode), proto.OpAddWatch, false,
		func(e *proto.Encoder) { e.String(p); e.Int(mode) }, nil)
}

func (ws *wireSession) getEphemerals(prefix string) result {
	return ws.do("getEphemerals", fmt.Sprintf("%q", prefix), proto.OpGetEphemerals, false, pathBody(prefix),
		func(d *proto.Decoder) string { return fmtChildren(d.Strings()) })
}

func (ws *wireSession) getAllChildrenNumber(p string) result {
	return ws.do("getAllChildrenNumber", fmt.Sprintf("%q", p), proto.OpGetAllChildrenNumber, false, pathBody(p),
		func(d *proto.Decoder) string { return fmt.Sprint(d.Int()) })
}

func (ws *wireSession) whoAmI() result {
	return ws.do("whoAmI", "", proto.OpWhoAmI, false, nil, func(d *proto.Decoder) string {
		n := int(d.Int())
		var ids []string
		for i := 0; i < n && d.Err() == nil; i++ {
			ids = append(ids, d.String()+":"+d.String())
		}
		return "[" + strings.Join(ids, " ") + "]"
	})
}

// raw sends an arbitrary op code with the given body.
func (ws *wireSession) raw(name string, op proto.OpCode, body func(e *proto.Encoder)) result {
	return ws.do(name, fmt.Sprintf("op=%d", int32(op)), op, false, body, nil)
}

// barrier makes a round trip that is not written, so that notifications
// the server queued before it are read (and written) now.
func (ws *wireSession) barrier() {
	ws.s.t.Helper()
	if _, err := ws.w.call(proto.OpExists, pathWatchBody("/", false)); err != nil {
		ws.s.tr.add("%s barrier -> connection error", ws.name)
	}
}

// addAuth sends an auth packet (xid -4). A rejected one is answered with
// AuthFailed and the server closes the connection; that is written too.
func (ws *wireSession) addAuth(scheme, auth string) result {
	r, err := ws.w.callXid(proto.XidAuth, proto.OpAuth, func(e *proto.Encoder) {
		e.Int(0)
		e.String(scheme)
		e.Buffer([]byte(auth))
	})
	if err != nil {
		ws.s.tr.add("%s addAuth %s %s -> connection error", ws.name, scheme, auth)
		return result{code: proto.ErrConnectionLoss}
	}
	ws.s.tr.add("%s addAuth %s %s -> %s", ws.name, scheme, auth, fmtCode(r.err))
	return result{code: r.err}
}

// closeSession ends the session the way a clean client does.
func (ws *wireSession) closeSession() result {
	return ws.do("closeSession", "", proto.OpCloseSession, false, nil, nil)
}

// drop closes the socket without ending the session: a crashed client.
func (ws *wireSession) drop() {
	ws.w.close()
	ws.s.tr.add("%s drop connection", ws.name)
}

// closedByServer writes whether the server closed the connection within
// timeout.
func (ws *wireSession) closedByServer(timeout time.Duration) {
	ws.s.tr.add("%s server closed connection: %v", ws.name, ws.w.readUntilClosed(timeout))
}

// multiOp is one operation of a multi or multiRead.
type multiOp struct {
	op   proto.OpCode
	text string
	body func(e *proto.Encoder)
}

func mCreate(p string, data []byte, mode int32) multiOp {
	return multiOp{proto.OpCreate, fmt.Sprintf("create %s %s %s", p, fmtData(data), fmtMode(mode)), createBody(p, data, proto.ACLOpenUnsafe, mode)}
}

func mCreate2(p string, data []byte, mode int32) multiOp {
	return multiOp{proto.OpCreate2, fmt.Sprintf("create2 %s %s %s", p, fmtData(data), fmtMode(mode)), createBody(p, data, proto.ACLOpenUnsafe, mode)}
}

func mSet(p string, data []byte, version int32) multiOp {
	return multiOp{proto.OpSetData, fmt.Sprintf("set %s %s v=%d", p, fmtData(data), version),
		func(e *proto.Encoder) { e.String(p); e.Buffer(data); e.Int(version) }}
}

func mDelete(p string, version int32) multiOp {
	return multiOp{proto.OpDelete, fmt.Sprintf("delete %s v=%d", p, version),
		func(e *proto.Encoder) { e.String(p); e.Int(version) }}
}

func mCheck(p string, version int32) multiOp {
	return multiOp{proto.OpCheck, fmt.Sprintf("check %s v=%d", p, version),
		func(e *proto.Encoder) { e.String(p); e.Int(version) }}
}

func mGet(p string) multiOp {
	return multiOp{proto.OpGetData, "get " + p, pathWatchBody(p, false)}
}

func mChildren(p string) multiOp {
	return multiOp{proto.OpGetChildren, "getChildren " + p, pathWatchBody(p, false)}
}

// multi sends ops as a multi (or, with read, a multiRead) and writes each
// result as the server tagged it.
func (ws *wireSession) multi(read bool, ops ...multiOp) result {
	op, name := proto.OpMulti, "multi"
	if read {
		op, name = proto.OpMultiRead, "multiRead"
	}
	texts := make([]string, len(ops))
	for i, o := range ops {
		texts[i] = o.text
	}
	// The header zxid of a multi is not written: a failed or empty multi is
	// still a transaction in ZooKeeper, with a zxid no other server owes.
	// The zxids of what a multi wrote show in the Stats it returns.
	return ws.do(name, "["+strings.Join(texts, ", ")+"]", op, false, func(e *proto.Encoder) {
		for _, o := range ops {
			e.Int(int32(o.op))
			e.Bool(false)
			e.Int(-1)
			o.body(e)
		}
		e.Int(-1)
		e.Bool(true)
		e.Int(-1)
	}, decodeMultiResults)
}

// decodeMultiResults reads MultiHeader-prefixed results until the done
// header, naming each by the type the server put in its header.
func decodeMultiResults(d *proto.Decoder) string {
	var parts []string
	for d.Err() == nil && d.Remaining() > 0 {
		typ, done, errc := proto.OpCode(d.Int()), d.Bool(), proto.ErrCode(d.Int())
		if done {
			break
		}
		var p string
		switch typ {
		case proto.OpCreate:
			p = "create " + d.String()
		case proto.OpCreate2:
			p = "create2 " + d.String() + " " + decodeStatText(d)
		case proto.OpSetData:
			p = "set " + decodeStatText(d)
		case proto.OpDelete, proto.OpCheck:
			p = typ.String()
		case proto.OpGetData:
			p = "get " + fmtData(d.Buffer()) + " " + decodeStatText(d)
		case proto.OpGetChildren:
			p = "getChildren " + fmtChildren(d.Strings())
		case proto.OpError:
			p = "error " + fmtCode(proto.ErrCode(d.Int()))
		default:
			p = fmt.Sprintf("%v ?", typ)
		}
		if errc != -1 && errc != proto.ErrOK {
			p += fmt.Sprintf(" hdrErr=%s", fmtCode(errc))
		}
		parts = append(parts, p)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// setWatches re-registers watches the way a client does after
// reconnecting (xid -8): the server fires at once those whose node
// changed after relZxid and keeps the others. With persistent or
// recursive paths it sends setWatches2.
func (ws *wireSession) setWatches(relZxid int64, data, exist, child, persistent, recursive []string) {
	op, name := proto.OpSetWatches, "setWatches"
	if persistent != nil || recursive != nil {
		op, name = proto.OpSetWatches2, "setWatches2"
	}
	r, err := ws.w.callXid(proto.XidSetWatches, op, func(e *proto.Encoder) {
		e.Long(relZxid)
		for _, v := range [][]string{data, exist, child} {
			e.Strings(nonNil(v))
		}
		if op == proto.OpSetWatches2 {
			e.Strings(nonNil(persistent))
			e.Strings(nonNil(recursive))
		}
	})
	args := fmt.Sprintf("rel=%s data=%v exist=%v child=%v", zx(relZxid), data, exist, child)
	if op == proto.OpSetWatches2 {
		args += fmt.Sprintf(" persistent=%v recursive=%v", persistent, recursive)
	}
	if err != nil {
		ws.s.tr.add("%s %s %s -> connection error", ws.name, name, args)
		ws.s.t.Logf("%s: %s: %v", ws.s.tg.name, name, err)
		return
	}
	ws.s.tr.add("%s %s %s -> %s", ws.name, name, args, fmtCode(r.err))
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}
