package coord

import (
	"sort"
	"strings"

	"github.com/shepherd-dev/shepherd/coord/proto"
	"github.com/shepherd-dev/shepherd/coord/tree"
	"github.com/shepherd-dev/shepherd/coord/watch"
)

// handle processes one request on the pipeline goroutine.
func (p *pipeline) handle(r *request) {
	if r.fn != nil {
		r.fn()
		return
	}
	c := r.conn
	if c.dead {
		return
	}
	if r.connect != nil {
		p.connect(r)
		return
	}
	sess := c.sess.Load()
	if sess == nil {
		return
	}
	p.countRequest(r.hdr.Type)
	switch {
	case r.malformed && r.hdr.Type == proto.OpMultiRead:
		p.reply(r, proto.ErrMarshallingError, &proto.MultiResponse{})
		return
	case r.malformed:
		p.reply(r, proto.ErrMarshallingError, nil)
		return
	case r.hdr.Type == proto.OpDeleteContainer:
		// Server-internal in ZooKeeper; a client sending it gets this.
		p.reply(r, proto.ErrBadArguments, nil)
		return
	case r.hdr.Type == proto.OpCreateSession:
		p.reply(r, proto.ErrMarshallingError, nil)
		return
	case r.unknown:
		// ZooKeeper answers, then drops a client that speaks ops it does
		// not know: its requests can no longer be trusted to be in step.
		p.reply(r, proto.ErrUnimplemented, nil)
		p.out(r.conn, outMsg{bare: true, closeAfter: true})
		r.conn.dead = true
		return
	}
	switch body := r.body.(type) {
	case *proto.CreateRequest:
		p.writeOne(r, tree.Op{Code: r.hdr.Type, Path: body.Path, Data: body.Data, ACL: body.ACL, Flags: body.Flags, Version: -1})
	case *proto.CreateTTLRequest:
		p.writeOne(r, tree.Op{Code: r.hdr.Type, Path: body.Path, Data: body.Data, ACL: body.ACL, Flags: body.Flags, TTL: body.TTL, Version: -1})
	case *proto.DeleteRequest:
		p.writeOne(r, tree.Op{Code: proto.OpDelete, Path: body.Path, Version: body.Version})
	case *proto.SetDataRequest:
		p.writeOne(r, tree.Op{Code: proto.OpSetData, Path: body.Path, Data: body.Data, Version: body.Version})
	case *proto.SetACLRequest:
		p.writeOne(r, tree.Op{Code: proto.OpSetACL, Path: body.Path, ACL: body.ACL, Version: body.Version})
	case *proto.CheckVersionRequest:
		p.writeOne(r, tree.Op{Code: proto.OpCheck, Path: body.Path, Version: body.Version})
	case *proto.MultiRequest:
		if r.hdr.Type == proto.OpMultiRead {
			if !body.Matches(proto.OpMultiRead) {
				p.reply(r, proto.ErrMarshallingError, &proto.MultiResponse{})
				return
			}
			p.multiRead(r, body)
		} else {
			p.multi(r, body)
		}
	case *proto.GetDataRequest:
		data, st, err := p.tree.Get(p.caller(c), body.Path)
		if err == nil && body.Watch {
			p.watches.Add(sess.id, body.Path, watch.Data)
		}
		p.replyRead(r, err, &proto.GetDataResponse{Data: data, Stat: st})
	case *proto.ExistsRequest:
		st, ok := p.tree.Stat(body.Path)
		if body.Watch && proto.ValidatePath(body.Path, false) == nil {
			p.watches.Add(sess.id, body.Path, watch.Data)
		}
		if !ok {
			p.reply(r, proto.ErrNoNode, nil)
			return
		}
		p.reply(r, proto.ErrOK, &proto.ExistsResponse{Stat: st})
	case *proto.GetChildrenRequest:
		kids, _, err := p.tree.Children(p.caller(c), body.Path)
		if err == nil && body.Watch {
			p.watches.Add(sess.id, body.Path, watch.Child)
		}
		p.replyRead(r, err, &proto.GetChildrenResponse{Children: kids})
	case *proto.GetChildren2Request:
		kids, st, err := p.tree.Children(p.caller(c), body.Path)
		if err == nil && body.Watch {
			p.watches.Add(sess.id, body.Path, watch.Child)
		}
		p.replyRead(r, err, &proto.GetChildren2Response{Children: kids, Stat: st})
	case *proto.GetACLRequest:
		acl, st, err := p.tree.GetACL(p.caller(c), body.Path)
		p.replyRead(r, err, &proto.GetACLResponse{ACL: acl, Stat: st})
	case *proto.SyncRequest:
		// Single node: every earlier write is already applied; the reply
		// leaves after the writes before it are durable, which is all sync
		// promises.
		p.reply(r, proto.ErrOK, &proto.SyncResponse{Path: body.Path})
	case *proto.ReconfigRequest:
		// A standalone ZooKeeper 3.8 has reconfig disabled and says so.
		p.reply(r, proto.ErrReconfigDisabled, nil)
	case *proto.GetSASLRequest:
		p.saslFailed(r)
	case *proto.AuthPacket:
		p.auth(r, body)
	case *proto.SetWatches:
		p.setWatches(r, sess, body.RelativeZxid, body.DataWatches, body.ExistWatches, body.ChildWatches, nil, nil)
	case *proto.SetWatches2:
		p.setWatches(r, sess, body.RelativeZxid, body.DataWatches, body.ExistWatches, body.ChildWatches,
			body.PersistentWatches, body.PersistentRecursiveWatches)
	case *proto.AddWatchRequest:
		p.addWatch(r, sess, body)
	case *proto.RemoveWatchesRequest:
		p.replyWatcherQuery(r, body.Type, func() bool { return p.watches.Remove(sess.id, body.Path, body.Type) })
	case *proto.CheckWatchesRequest:
		p.replyWatcherQuery(r, body.Type, func() bool { return p.watches.Has(sess.id, body.Path, body.Type) })
	case *proto.GetEphemeralsRequest:
		eph := p.tree.Ephemerals(sess.id, body.PrefixPath)
		sort.Strings(eph)
		p.reply(r, proto.ErrOK, &proto.GetEphemeralsResponse{Ephemerals: eph})
	case *proto.GetAllChildrenNumberRequest:
		n, err := p.tree.AllChildrenNumber(p.caller(c), body.Path)
		p.replyRead(r, err, &proto.GetAllChildrenNumberResponse{TotalNumber: n})
	case nil:
		p.bodyless(r, sess)
	default:
		p.reply(r, proto.ErrUnimplemented, nil)
	}
}

// replyWatcherQuery answers removeWatches and checkWatches: an unknown
// watcher type is undecodable to ZooKeeper 3.8, no match is NoWatcher.
func (p *pipeline) replyWatcherQuery(r *request, watcherType int32, found func() bool) {
	switch {
	case !watch.ValidWatcherType(watcherType):
		p.reply(r, proto.ErrMarshallingError, nil)
	case !found():
		p.reply(r, proto.ErrNoWatcher, nil)
	default:
		p.reply(r, proto.ErrOK, nil)
	}
}

// bodyless handles the requests that carry only a header.
func (p *pipeline) bodyless(r *request, sess *session) {
	switch r.hdr.Type {
	case proto.OpPing:
		p.out(r.conn, outMsg{hdr: proto.ReplyHeader{Xid: proto.XidPing, Zxid: p.tree.LastZxid()}})
	case proto.OpCloseSession:
		p.reply(r, proto.ErrOK, nil)
		p.closeSession(sess)
	case proto.OpWhoAmI:
		p.reply(r, proto.ErrOK, &proto.WhoAmIResponse{ClientInfo: whoAmI(r.conn)})
	default:
		p.reply(r, proto.ErrUnimplemented, nil)
	}
}

// replyRead answers a read: the body on success, the error code otherwise.
func (p *pipeline) replyRead(r *request, err error, body proto.Record) {
	if err != nil {
		p.reply(r, errCode(err), nil)
		return
	}
	p.reply(r, proto.ErrOK, body)
}

// errCode maps a tree error to the code on the wire.
func errCode(err error) proto.ErrCode {
	if code, ok := err.(proto.ErrCode); ok {
		return code
	}
	return proto.ErrSystemError
}

func (p *pipeline) writeOne(r *request, op tree.Op) {
	res := p.commit(p.tree.Prepare(p.caller(r.conn), p.nextZxid(), nowMs(), []tree.Op{op}, false))
	if res.Err != proto.ErrOK {
		p.reply(r, res.Err, nil)
		return
	}
	o := res.Ops[0]
	switch op.Code {
	case proto.OpCreate:
		p.reply(r, proto.ErrOK, &proto.CreateResponse{Path: o.Path})
	case proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL:
		p.reply(r, proto.ErrOK, &proto.Create2Response{Path: o.Path, Stat: o.Stat})
	case proto.OpSetData:
		p.reply(r, proto.ErrOK, &proto.SetDataResponse{Stat: o.Stat})
	case proto.OpSetACL:
		p.reply(r, proto.ErrOK, &proto.SetACLResponse{Stat: o.Stat})
	default: // delete, check
		p.reply(r, proto.ErrOK, nil)
	}
}

// multi applies a transaction of write ops atomically.
func (p *pipeline) multi(r *request, m *proto.MultiRequest) {
	ops := make([]tree.Op, 0, len(m.Ops))
	for _, mo := range m.Ops {
		ops = append(ops, multiOp(mo))
	}
	res := p.commit(p.tree.Prepare(p.caller(r.conn), p.nextZxid(), nowMs(), ops, true))
	if res.Ops == nil && res.Err != proto.ErrOK {
		// The multi as a whole was refused (ZooKeeper: MarshallingError for
		// TTL flags on a plain create, or a read among the writes): an
		// error header and no body.
		p.reply(r, res.Err, nil)
		return
	}
	out := &proto.MultiResponse{Results: make([]proto.MultiResult, len(res.Ops))}
	for i, o := range res.Ops {
		mr := &out.Results[i]
		if res.Err != proto.ErrOK {
			mr.Type, mr.Err = proto.OpError, o.Err
			continue
		}
		mr.Type = o.Code
		switch o.Code {
		case proto.OpCreate, proto.OpCreate2:
			// ZooKeeper 3.8 answers create2 inside a multi with a plain
			// create result (path, no stat); clients expect exactly that.
			mr.Type, mr.Path = proto.OpCreate, o.Path
		case proto.OpCreateContainer, proto.OpCreateTTL:
			mr.Type, mr.Path, mr.Stat = proto.OpCreate2, o.Path, o.Stat
		case proto.OpSetData:
			mr.Stat = o.Stat
		}
	}
	p.reply(r, proto.ErrOK, out)
}

// multiOp converts one op of a multi. Ops the tree does not write (reads
// slipped into a write multi) still go to Prepare, which refuses the whole
// multi as ZooKeeper does.
func multiOp(mo proto.MultiOp) tree.Op {
	switch b := mo.Op.(type) {
	case *proto.CreateRequest:
		return tree.Op{Code: mo.Type, Path: b.Path, Data: b.Data, ACL: b.ACL, Flags: b.Flags, Version: -1}
	case *proto.CreateTTLRequest:
		return tree.Op{Code: mo.Type, Path: b.Path, Data: b.Data, ACL: b.ACL, Flags: b.Flags, TTL: b.TTL, Version: -1}
	case *proto.DeleteRequest:
		return tree.Op{Code: proto.OpDelete, Path: b.Path, Version: b.Version}
	case *proto.SetDataRequest:
		return tree.Op{Code: proto.OpSetData, Path: b.Path, Data: b.Data, Version: b.Version}
	case *proto.CheckVersionRequest:
		return tree.Op{Code: proto.OpCheck, Path: b.Path, Version: b.Version}
	case *proto.GetDataRequest:
		return tree.Op{Code: proto.OpGetData, Path: b.Path}
	case *proto.GetChildrenRequest:
		return tree.Op{Code: proto.OpGetChildren, Path: b.Path}
	}
	return tree.Op{Code: mo.Type}
}

// multiRead answers a batch of reads; each succeeds or fails on its own.
func (p *pipeline) multiRead(r *request, m *proto.MultiRequest) {
	caller := p.caller(r.conn)
	out := &proto.MultiResponse{Results: make([]proto.MultiResult, len(m.Ops))}
	for i, mo := range m.Ops {
		mr := &out.Results[i]
		var err error
		switch b := mo.Op.(type) {
		case *proto.GetDataRequest:
			mr.Type = proto.OpGetData
			mr.Data, mr.Stat, err = p.tree.Get(caller, b.Path)
		case *proto.GetChildrenRequest:
			mr.Type = proto.OpGetChildren
			mr.Children, _, err = p.tree.Children(caller, b.Path)
		default:
			err = proto.ErrBadArguments
		}
		if err != nil {
			*mr = proto.MultiResult{Type: proto.OpError, Err: errCode(err)}
		}
	}
	p.reply(r, proto.ErrOK, out)
}

// auth handles addauth with ZooKeeper's two stock schemes. "digest" adds
// the identity named by the payload (see tree.DigestOf); "ip" adds nothing
// new, since every connection already carries its peer address. Any other
// scheme fails and, as in ZooKeeper, closes the connection.
func (p *pipeline) auth(r *request, a *proto.AuthPacket) {
	c := r.conn
	switch a.Scheme {
	case "digest":
		id := tree.DigestOf(string(a.Auth))
		c.addAuth(proto.Id{Scheme: "digest", ID: id})
		if p.s.cfg.SuperDigest != "" && id == p.s.cfg.SuperDigest {
			c.super = true
			c.addAuth(proto.Id{Scheme: "super", ID: ""})
		}
	case "ip":
	default:
		p.s.log.Info("authentication failed: unknown scheme", "scheme", a.Scheme, "remote", c.remote)
		p.out(c, outMsg{hdr: proto.ReplyHeader{Xid: r.hdr.Xid, Err: proto.ErrAuthFailed}, closeAfter: true})
		c.dead = true
		return
	}
	// The reply echoes the request's xid: the Java client uses -4, but
	// go-zookeeper sends auth with an ordinary xid and waits for it.
	p.out(c, outMsg{hdr: proto.ReplyHeader{Xid: r.hdr.Xid}, received: r.received})
}

// saslFailed answers a SASL token. This server has no SASL users, so every
// SASL authentication fails, and it fails the way a ZooKeeper with SASL
// configured fails a client whose credentials it does not know: an
// AuthFailed header with a null token, then the connection is closed (the
// session lives on until it times out). Clients report AuthFailed (kazoo's
// AuthFailedError) rather than a lost connection, and never believe they
// authenticated.
func (p *pipeline) saslFailed(r *request) {
	c := r.conn
	p.s.log.Info("authentication failed: SASL is not supported; use digest authentication (addauth digest user:password)", "remote", c.remote)
	p.out(c, outMsg{hdr: proto.ReplyHeader{Xid: r.hdr.Xid, Err: proto.ErrAuthFailed}, body: &proto.SetSASLResponse{}, closeAfter: true})
	c.dead = true
}

// addAuth adds an identity once, as ZooKeeper does for a repeated addauth.
func (c *conn) addAuth(id proto.Id) {
	for _, have := range c.auth {
		if have == id {
			return
		}
	}
	c.auth = append(c.auth, id)
}

// whoAmI lists the connection's identities, sorted by scheme (ZooKeeper's
// order is that of a hash set; sorted is stable and matches it for the
// usual digest + ip pair).
func whoAmI(c *conn) []proto.ClientInfo {
	out := make([]proto.ClientInfo, 0, len(c.auth))
	for _, id := range c.auth {
		user := id.ID
		if id.Scheme == "digest" {
			user, _, _ = strings.Cut(id.ID, ":")
		}
		out = append(out, proto.ClientInfo{AuthScheme: id.Scheme, User: user})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].AuthScheme < out[j].AuthScheme })
	return out
}

// setWatches re-registers a reconnecting client's watches. Whatever changed
// since the last zxid the client saw fires at once, so no change is missed
// while the client was away. The events are queued after the watches are
// registered: an event that cuts off a client that does not read (see
// pipeline.cutOff) then drops every watch this request added.
func (p *pipeline) setWatches(r *request, sess *session, rel int64, data, exist, child, persistent, recursive []string) {
	type event struct {
		typ  proto.EventType
		path string
	}
	var fire []event
	for _, path := range data {
		st, ok := p.tree.Stat(path)
		switch {
		case !ok:
			fire = append(fire, event{proto.EventNodeDeleted, path})
		case st.Mzxid > rel:
			fire = append(fire, event{proto.EventNodeDataChanged, path})
		default:
			p.watches.Add(sess.id, path, watch.Data)
		}
	}
	for _, path := range exist {
		if _, ok := p.tree.Stat(path); ok {
			fire = append(fire, event{proto.EventNodeCreated, path})
		} else {
			p.watches.Add(sess.id, path, watch.Data)
		}
	}
	for _, path := range child {
		st, ok := p.tree.Stat(path)
		switch {
		case !ok:
			fire = append(fire, event{proto.EventNodeDeleted, path})
		case st.Pzxid > rel:
			fire = append(fire, event{proto.EventNodeChildrenChanged, path})
		default:
			p.watches.Add(sess.id, path, watch.Child)
		}
	}
	for _, path := range persistent {
		p.watches.Add(sess.id, path, watch.Persistent)
	}
	for _, path := range recursive {
		p.watches.Add(sess.id, path, watch.PersistentRecursive)
	}
	for _, e := range fire {
		p.notifyConn(r.conn, e.typ, e.path)
	}
	p.reply(r, proto.ErrOK, nil) // echoes the xid (-8 from the Java client, any from others)
}

func (p *pipeline) addWatch(r *request, sess *session, a *proto.AddWatchRequest) {
	// ZooKeeper 3.8 registers whatever path it is given (real clients
	// validate it first) and refuses an unknown mode as undecodable.
	switch a.Mode {
	case proto.AddWatchPersistent:
		p.watches.Add(sess.id, a.Path, watch.Persistent)
	case proto.AddWatchPersistentRecursive:
		p.watches.Add(sess.id, a.Path, watch.PersistentRecursive)
	default:
		p.reply(r, proto.ErrMarshallingError, nil)
		return
	}
	p.reply(r, proto.ErrOK, &proto.ErrorResponse{Err: 0})
}
