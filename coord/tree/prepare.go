package tree

import (
	"fmt"
	"strings"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// Op is one write request, or one op of a multi.
type Op struct {
	// Code is OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL,
	// OpDelete, OpDeleteContainer (server-internal), OpSetData, OpSetACL
	// or OpCheck.
	Code proto.OpCode
	Path string
	// Data and ACL are kept by the transaction and the tree, not copied:
	// the caller must not modify them after Prepare.
	Data  []byte
	ACL   []proto.ACL
	Flags int32 // create mode (proto.Mode*)
	TTL   int64 // ms, for OpCreateTTL
	// Version is the expected version (aversion for OpSetACL); -1 matches
	// any.
	Version int32
}

// record is what Prepare knows of a node: the tree's state, overlaid with
// the effects of the earlier ops of the same multi (ZooKeeper's
// ChangeRecord).
type record struct {
	meta
	acl      []proto.ACL
	children int
	exists   bool
}

// planner prepares the ops of one request against the tree without
// modifying it.
type planner struct {
	t       *Tree
	c       *Caller
	zxid    int64
	now     int64
	pending map[string]record // the multi's changes so far; nil for a single op
}

func (p *planner) lookup(path string) (record, bool) {
	if p.pending != nil {
		if r, ok := p.pending[path]; ok {
			return r, r.exists
		}
	}
	n := p.t.nodes[path]
	if n == nil {
		return record{}, false
	}
	return record{meta: n.meta, acl: n.acl.acls, children: len(n.children), exists: true}, true
}

func (p *planner) put(path string, r record) {
	if p.pending != nil {
		p.pending[path] = r
	}
}

// Prepare validates a write request against the current tree, the way
// ZooKeeper's PrepRequestProcessor does, and returns the transaction that
// carries it out. It does not modify the tree: the caller logs the
// transaction and passes it to Apply before preparing the next one.
//
// With multi false, ops holds exactly one op (anything else fails with
// ErrBadArguments, an op code that is not a write with ErrUnimplemented).
// With multi true the ops form one atomic multi: each op sees the effects
// of those before it, and if op i fails, the transaction records ErrOK for
// the ops before it, op i's error, and ErrRuntimeInconsistency for the
// rest, as ZooKeeper 3.8 reports them. A multi whose ops ZooKeeper cannot even decode (a setACL,
// deleteContainer or read inside it, or TTL create flags on a non-TTL
// create) fails as a whole with ErrMarshallingError.
//
// A request that fails still yields a transaction, an error transaction
// as ZooKeeper logs one: applying it changes nothing but the last zxid.
// Prepare never returns nil.
func (t *Tree) Prepare(c Caller, zxid int64, nowMs int64, ops []Op, multi bool) *Txn {
	txn := &Txn{zxid: zxid, time: nowMs, session: c.Session}
	p := planner{t: t, c: &c, zxid: zxid, now: nowMs}
	if !multi {
		if len(ops) != 1 {
			return txn.fail(proto.ErrBadArguments, false)
		}
		op, err := p.prepare(&ops[0])
		if err != proto.ErrOK {
			return txn.fail(err, false)
		}
		txn.kind = op.code
		txn.ops = []txnOp{op}
		return txn
	}

	normalized, ok := normalizeMulti(ops)
	if !ok {
		return txn.fail(proto.ErrMarshallingError, true)
	}
	txn.kind = proto.OpMulti
	txn.ops = make([]txnOp, 0, len(normalized))
	if len(normalized) > 1 {
		p.pending = make(map[string]record, 2*len(normalized))
	}
	failed := false
	for i := range normalized {
		if failed {
			txn.ops = append(txn.ops, txnOp{code: proto.OpError, err: proto.ErrRuntimeInconsistency})
			continue
		}
		op, err := p.prepare(&normalized[i])
		if err != proto.ErrOK {
			failed = true
			op = txnOp{code: proto.OpError, err: err}
		}
		txn.ops = append(txn.ops, op)
	}
	return txn
}

// fail turns t into the error transaction of a request that failed as a
// whole.
func (t *Txn) fail(err proto.ErrCode, inMulti bool) *Txn {
	t.kind, t.err, t.inMulti, t.ops = proto.OpError, err, inMulti, nil
	return t
}

// normalizeMulti gives each op of a multi the type ZooKeeper's
// MultiOperationRecord gives it when it decodes the request: a create's type
// follows its flags (container flags make a createContainer, and a createTTL
// without TTL flags is a plain create whose TTL is dropped), while TTL flags
// on a non-TTL create and any op that cannot be in a multi make the whole
// request undecodable.
func normalizeMulti(ops []Op) ([]Op, bool) {
	out := make([]Op, len(ops))
	for i, op := range ops {
		switch op.Code {
		case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL:
			mode, _ := modeOf(op.Flags) // unknown flags read as persistent here, and fail later
			switch {
			case mode.ttl && op.Code != proto.OpCreateTTL:
				return nil, false
			case mode.ttl:
			case mode.container:
				op.Code, op.TTL = proto.OpCreateContainer, 0
			default:
				op.Code, op.TTL = proto.OpCreate, 0
			}
		case proto.OpDelete, proto.OpSetData, proto.OpCheck:
		default:
			return nil, false
		}
		out[i] = op
	}
	return out, true
}

// PrepareCreateSession returns the transaction that registers a session
// with its timeout.
func (t *Tree) PrepareCreateSession(zxid, nowMs int64, session int64, timeoutMs int32) *Txn {
	return &Txn{zxid: zxid, time: nowMs, session: session, kind: proto.OpCreateSession, timeout: timeoutMs}
}

// PrepareCloseSession returns the transaction that ends a session and
// deletes its ephemeral nodes (listed in the transaction, in path order, as
// ZooKeeper's CloseSessionTxn lists them).
func (t *Tree) PrepareCloseSession(zxid, nowMs int64, session int64) *Txn {
	paths := t.Ephemerals(session, "")
	return &Txn{zxid: zxid, time: nowMs, session: session, kind: proto.OpCloseSession, paths: paths}
}

// prepare checks one op, in ZooKeeper's order of checks, and records its
// effects for the ops after it.
func (p *planner) prepare(op *Op) (txnOp, proto.ErrCode) {
	switch op.Code {
	case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL:
		return p.create(op)
	case proto.OpDelete:
		return p.delete(op)
	case proto.OpDeleteContainer:
		return p.deleteContainer(op)
	case proto.OpSetData:
		return p.setData(op)
	case proto.OpSetACL:
		return p.setACL(op)
	case proto.OpCheck:
		return p.check(op)
	}
	return txnOp{}, proto.ErrUnimplemented
}

func (p *planner) create(op *Op) (txnOp, proto.ErrCode) {
	mode, ok := modeOf(op.Flags)
	if !ok {
		return txnOp{}, proto.ErrBadArguments
	}
	// Only createTTL carries a TTL; ZooKeeper passes -1 for the others.
	ttl := int64(-1)
	if op.Code == proto.OpCreateTTL {
		ttl = op.TTL
	}
	if mode.ttl {
		if ttl <= 0 || ttl > MaxTTL {
			return txnOp{}, proto.ErrBadArguments
		}
	} else if ttl >= 0 || op.Code == proto.OpCreateTTL {
		// ZooKeeper refuses a TTL on a non-TTL mode; a createTTL with
		// non-TTL flags and a negative TTL would crash its apply step,
		// and is refused here too.
		return txnOp{}, proto.ErrBadArguments
	}
	path := op.Path
	slash := strings.LastIndexByte(path, '/')
	if slash < 0 || strings.IndexByte(path, 0) >= 0 {
		return txnOp{}, proto.ErrBadArguments
	}
	parentPath := path[:slash]
	if parentPath == "" {
		parentPath = "/"
	}
	acl, err := fixupACL(p.c, op.ACL)
	if err != proto.ErrOK {
		return txnOp{}, err
	}
	parent, ok := p.lookup(parentPath)
	if !ok {
		return txnOp{}, proto.ErrNoNode
	}
	if !p.c.allowed(parent.acl, proto.PermCreate) {
		return txnOp{}, proto.ErrNoAuth
	}
	if mode.sequential {
		path += seqSuffix(parent.cversion)
	}
	if proto.ValidatePath(path, false) != nil {
		return txnOp{}, proto.ErrBadArguments
	}
	if _, exists := p.lookup(path); exists {
		return txnOp{}, proto.ErrNodeExists
	}
	if kindOf(parent.owner) == kindSession {
		return txnOp{}, proto.ErrNoChildrenForEphemerals
	}

	// The node's kind comes from the op code (ZooKeeper's txn type), the
	// ephemeral bit from the flags: a plain create with container flags
	// makes a persistent node in ZooKeeper too.
	var owner int64
	switch {
	case op.Code == proto.OpCreateContainer:
		owner = containerOwner
	case op.Code == proto.OpCreateTTL:
		owner = ttlOwner(ttl)
	case mode.ephemeral:
		owner = p.c.Session
	}
	cver := parent.cversion + 1
	parent.children++
	parent.cversion = cver
	parent.pzxid = p.zxid
	p.put(parentPath, parent)
	p.put(path, record{
		meta: meta{czxid: p.zxid, mzxid: p.zxid, pzxid: p.zxid, ctime: p.now, mtime: p.now, owner: owner},
		acl:  acl, exists: true,
	})
	return txnOp{code: op.Code, path: path, data: op.Data, acl: acl, owner: owner, cver: cver}, proto.ErrOK
}

// seqSuffix formats a sequence number as ZooKeeper does with "%010d"
// (a negative cversion, after overflow, gives "-000000001").
func seqSuffix(cversion int32) string { return fmt.Sprintf("%010d", cversion) }

// deletablePath returns the parent of a path that delete may name:
// ZooKeeper refuses a path without "/", with NUL, and its own nodes.
func deletablePath(path string) (parent string, ok bool) {
	slash := strings.LastIndexByte(path, '/')
	if slash < 0 || strings.IndexByte(path, 0) >= 0 || isSpecial(path) {
		return "", false
	}
	if parent = path[:slash]; parent == "" {
		parent = "/"
	}
	return parent, true
}

// isSpecial reports the nodes ZooKeeper never lets anyone delete.
func isSpecial(path string) bool {
	switch path {
	case "/", zookeeperPath, quotaPath, configPath:
		return true
	}
	return false
}

func (p *planner) delete(op *Op) (txnOp, proto.ErrCode) {
	parentPath, ok := deletablePath(op.Path)
	if !ok {
		return txnOp{}, proto.ErrBadArguments
	}
	parent, ok := p.lookup(parentPath)
	if !ok {
		return txnOp{}, proto.ErrNoNode
	}
	if !p.c.allowed(parent.acl, proto.PermDelete) {
		return txnOp{}, proto.ErrNoAuth
	}
	n, ok := p.lookup(op.Path)
	if !ok {
		return txnOp{}, proto.ErrNoNode
	}
	if _, err := checkVersion(n.version, op.Version); err != proto.ErrOK {
		return txnOp{}, err
	}
	if n.children > 0 {
		return txnOp{}, proto.ErrNotEmpty
	}
	p.removed(parentPath, parent, op.Path)
	return txnOp{code: proto.OpDelete, path: op.Path}, proto.ErrOK
}

// deleteContainer is the reaper's delete. ZooKeeper only refuses ordinary
// ephemerals here; we also refuse persistent nodes and TTL nodes that are
// not (or no longer) expired, so that a node touched or converted since
// Reapable listed it is left alone. ErrBadVersion is ZooKeeper's answer
// for "not a candidate".
func (p *planner) deleteContainer(op *Op) (txnOp, proto.ErrCode) {
	parentPath, ok := deletablePath(op.Path)
	if !ok {
		return txnOp{}, proto.ErrBadArguments
	}
	n, ok := p.lookup(op.Path)
	if !ok {
		return txnOp{}, proto.ErrNoNode
	}
	if n.children > 0 {
		return txnOp{}, proto.ErrNotEmpty
	}
	switch kindOf(n.owner) {
	case kindContainer:
	case kindTTL:
		if ttl := ttlOf(n.owner); ttl == 0 || p.now-n.mtime <= ttl {
			return txnOp{}, proto.ErrBadVersion
		}
	default:
		return txnOp{}, proto.ErrBadVersion
	}
	parent, ok := p.lookup(parentPath)
	if !ok {
		return txnOp{}, proto.ErrNoNode
	}
	p.removed(parentPath, parent, op.Path)
	return txnOp{code: proto.OpDeleteContainer, path: op.Path}, proto.ErrOK
}

// removed records the deletion of path for the ops after it.
func (p *planner) removed(parentPath string, parent record, path string) {
	parent.children--
	parent.pzxid = p.zxid
	p.put(parentPath, parent)
	p.put(path, record{})
}

func (p *planner) setData(op *Op) (txnOp, proto.ErrCode) {
	if proto.ValidatePath(op.Path, false) != nil {
		return txnOp{}, proto.ErrBadArguments
	}
	n, ok := p.lookup(op.Path)
	if !ok {
		return txnOp{}, proto.ErrNoNode
	}
	if !p.c.allowed(n.acl, proto.PermWrite) {
		return txnOp{}, proto.ErrNoAuth
	}
	version, err := checkVersion(n.version, op.Version)
	if err != proto.ErrOK {
		return txnOp{}, err
	}
	n.version, n.mtime, n.mzxid = version, p.now, p.zxid
	p.put(op.Path, n)
	return txnOp{code: proto.OpSetData, path: op.Path, data: op.Data, version: version}, proto.ErrOK
}

func (p *planner) setACL(op *Op) (txnOp, proto.ErrCode) {
	if proto.ValidatePath(op.Path, false) != nil {
		return txnOp{}, proto.ErrBadArguments
	}
	acl, err := fixupACL(p.c, op.ACL)
	if err != proto.ErrOK {
		return txnOp{}, err
	}
	n, ok := p.lookup(op.Path)
	if !ok {
		return txnOp{}, proto.ErrNoNode
	}
	if !p.c.allowed(n.acl, proto.PermAdmin) {
		return txnOp{}, proto.ErrNoAuth
	}
	version, err := checkVersion(n.aversion, op.Version)
	if err != proto.ErrOK {
		return txnOp{}, err
	}
	n.aversion, n.acl = version, acl
	p.put(op.Path, n)
	return txnOp{code: proto.OpSetACL, path: op.Path, acl: acl, version: version}, proto.ErrOK
}

// check is the version assertion of a multi. ZooKeeper 3.8 asks for READ
// permission on the node.
func (p *planner) check(op *Op) (txnOp, proto.ErrCode) {
	if proto.ValidatePath(op.Path, false) != nil {
		return txnOp{}, proto.ErrBadArguments
	}
	n, ok := p.lookup(op.Path)
	if !ok {
		return txnOp{}, proto.ErrNoNode
	}
	if !p.c.allowed(n.acl, proto.PermRead) {
		return txnOp{}, proto.ErrNoAuth
	}
	version, err := checkVersion(n.version, op.Version)
	if err != proto.ErrOK {
		return txnOp{}, err
	}
	return txnOp{code: proto.OpCheck, path: op.Path, version: version}, proto.ErrOK
}

// checkVersion compares an expected version (-1 for any) with the current
// one and returns the next version, wrapping like a Java int.
func checkVersion(current, expected int32) (int32, proto.ErrCode) {
	if expected != -1 && expected != current {
		return 0, proto.ErrBadVersion
	}
	return current + 1, proto.ErrOK
}
