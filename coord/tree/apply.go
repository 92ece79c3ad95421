package tree

import (
	"slices"

	"github.com/shepherd-dev/shepherd/coord/proto"
	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// Result is what applying a transaction did.
type Result struct {
	// Err is the request's error: a single op's error, or for a multi
	// ErrOK or the first failing op's error.
	Err proto.ErrCode
	// Ops has one result per op (len 1 for a single op). It is nil for
	// session transactions and for a multi that failed as a whole
	// (ErrMarshallingError): ZooKeeper answers that one with an error
	// header and no per-op results.
	Ops []OpResult
	// Events are the watch triggers, in the order ZooKeeper fires them.
	Events []Event
}

// OpResult is the outcome of one op.
type OpResult struct {
	// Code is the op's type as applied (a create inside a multi may have
	// changed type, see Prepare), or OpError for every op of a request
	// that failed.
	Code proto.OpCode
	Err  proto.ErrCode
	// Path is the node's path; for a sequential create, the name made.
	Path string
	// Stat is the node's stat after a create, setData or setACL.
	Stat proto.Stat
}

// Event is a watch trigger: NodeCreated, NodeDeleted and NodeDataChanged
// at the node's path, NodeChildrenChanged at its parent's.
type Event struct {
	Type proto.EventType
	Path string
	// ACL is the ACL of the node at Path when the event happened (of the
	// deleted node for NodeDeleted). As in ZooKeeper since the fix for
	// CVE-2024-23944, only watchers with READ on it may be told; see
	// Caller.CanRead. It is shared and must not be modified.
	ACL []proto.ACL
}

// Apply carries out a transaction from Prepare or DecodeTxn and advances
// the last zxid. It depends on nothing but the transaction and the tree,
// so replaying a log rebuilds the same state. A transaction that does not
// fit the tree (it was not prepared against this state) fails the way
// ZooKeeper's DataTree.processTxn fails, changing nothing for that op.
func (t *Tree) Apply(txn *Txn) Result {
	var r Result
	switch txn.kind {
	case proto.OpCreateSession:
		t.sessions[txn.session] = txn.timeout
	case proto.OpCloseSession:
		t.killSession(txn, &r)
	case proto.OpError:
		r.Err = txn.err
		if !txn.inMulti {
			r.Ops = []OpResult{{Code: proto.OpError, Err: txn.err}}
		}
	case proto.OpMulti:
		t.applyMulti(txn, &r)
	default:
		if len(txn.ops) != 1 || !singleOpCode(txn.kind) {
			r.Err = proto.ErrUnimplemented
			break
		}
		r.Events = make([]Event, 0, 2)
		res := t.applyOp(txn, &txn.ops[0], &r.Events)
		r.Err = res.Err
		r.Ops = []OpResult{res}
	}
	if txn.zxid > t.lastZxid {
		t.lastZxid = txn.zxid
	}
	return r
}

// applyMulti applies every op of a successful multi in order; a multi with
// an error op changes nothing and reports, as ZooKeeper does, ErrOK for the
// ops before the failure and ErrRuntimeInconsistency after it.
func (t *Tree) applyMulti(txn *Txn, r *Result) {
	r.Ops = make([]OpResult, 0, len(txn.ops))
	failed := slices.ContainsFunc(txn.ops, func(op txnOp) bool { return op.code == proto.OpError })
	if failed {
		after := false
		for i := range txn.ops {
			err := proto.ErrOK
			switch {
			case txn.ops[i].code == proto.OpError:
				after = true
				err = txn.ops[i].err
			case after:
				err = proto.ErrRuntimeInconsistency
			}
			r.Ops = append(r.Ops, OpResult{Code: proto.OpError, Err: err})
			if err != proto.ErrOK && r.Err == proto.ErrOK {
				r.Err = err
			}
		}
		return
	}
	r.Events = make([]Event, 0, 2*len(txn.ops))
	for i := range txn.ops {
		res := t.applyOp(txn, &txn.ops[i], &r.Events)
		r.Ops = append(r.Ops, res)
		if res.Err != proto.ErrOK && r.Err == proto.ErrOK {
			r.Err = res.Err
		}
	}
}

func (t *Tree) applyOp(txn *Txn, op *txnOp, ev *[]Event) OpResult {
	switch op.code {
	case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL:
		return t.applyCreate(txn, op, ev)
	case proto.OpDelete, proto.OpDeleteContainer:
		return OpResult{Code: op.code, Path: op.path, Err: t.deleteNode(op.path, txn.zxid, ev)}
	case proto.OpSetData:
		return t.applySetData(txn, op, ev)
	case proto.OpSetACL:
		return t.applySetACL(op)
	case proto.OpCheck:
		return OpResult{Code: op.code, Path: op.path}
	}
	return OpResult{Code: op.code, Path: op.path, Err: proto.ErrUnimplemented}
}

func (t *Tree) applyCreate(txn *Txn, op *txnOp, ev *[]Event) OpResult {
	res := OpResult{Code: op.code, Path: op.path}
	if op.path == "/" || proto.ValidatePath(op.path, false) != nil {
		res.Err = proto.ErrBadArguments
		return res
	}
	parentPath, name := zpath.Split(op.path)
	parent := t.nodes[parentPath]
	if parent == nil {
		res.Err = proto.ErrNoNode
		return res
	}
	if _, exists := parent.children[name]; exists {
		// ZooKeeper still moves the parent's cversion forward for a plain
		// create, to repair replays over a fuzzy snapshot.
		if op.code == proto.OpCreate {
			t.raiseCversion(parent, op.cver, txn.zxid)
		}
		res.Err = proto.ErrNodeExists
		return res
	}
	t.raiseCversion(parent, op.cver, txn.zxid)
	n := &node{
		meta: meta{
			czxid: txn.zxid, mzxid: txn.zxid, pzxid: txn.zxid,
			ctime: txn.time, mtime: txn.time, owner: op.owner,
		},
		data: op.data,
		acl:  t.acls.acquire(op.acl),
	}
	t.insert(op.path, n)
	// The reply shows the node as created, before a stats node's data is
	// rewritten, as ZooKeeper copies the stat before its quota update.
	res.Stat = n.stat()
	t.quotaCreated(op.path, n)
	*ev = append(*ev,
		Event{Type: proto.EventNodeCreated, Path: op.path, ACL: n.acl.acls},
		Event{Type: proto.EventNodeChildrenChanged, Path: parentPath, ACL: parent.acl.acls})
	return res
}

// raiseCversion sets a parent's cversion from a create transaction (-1
// means "one more"); like ZooKeeper it never moves cversion backwards,
// which is also why a cversion that overflowed stays at its maximum.
func (t *Tree) raiseCversion(parent *node, cver int32, zxid int64) {
	if cver == -1 {
		cver = parent.cversion + 1
	}
	if cver > parent.cversion {
		parent.cversion = cver
		parent.pzxid = zxid
	}
}

// deleteNode removes a childless node; see ZooKeeper's DataTree.deleteNode.
func (t *Tree) deleteNode(path string, zxid int64, ev *[]Event) proto.ErrCode {
	if path == "" || path[0] != '/' || path == "/" {
		return proto.ErrBadArguments
	}
	parentPath, _ := zpath.Split(path)
	parent := t.nodes[parentPath]
	if parent == nil {
		return proto.ErrNoNode
	}
	n := t.nodes[path]
	if n != nil && len(n.children) > 0 {
		// ZooKeeper would orphan the children; only a transaction that
		// was not prepared against this tree can ask for it.
		return proto.ErrNotEmpty
	}
	if zxid > parent.pzxid {
		parent.pzxid = zxid
	}
	if n == nil {
		return proto.ErrNoNode
	}
	t.remove(path, n, parent)
	t.chargeQuota(path, -int64(len(n.data)), -1)
	*ev = append(*ev,
		Event{Type: proto.EventNodeDeleted, Path: path, ACL: n.acl.acls},
		Event{Type: proto.EventNodeChildrenChanged, Path: parentPath, ACL: parent.acl.acls})
	return proto.ErrOK
}

func (t *Tree) applySetData(txn *Txn, op *txnOp, ev *[]Event) OpResult {
	n := t.nodes[op.path]
	if n == nil {
		return OpResult{Code: op.code, Path: op.path, Err: proto.ErrNoNode}
	}
	delta := int64(len(op.data) - len(n.data))
	t.dataBytes += delta
	n.data = op.data
	n.mtime = txn.time
	n.mzxid = txn.zxid
	n.version = op.version
	st := n.stat() // before the quota update, as ZooKeeper copies it
	t.chargeQuota(op.path, delta, 0)
	*ev = append(*ev, Event{Type: proto.EventNodeDataChanged, Path: op.path, ACL: n.acl.acls})
	return OpResult{Code: op.code, Path: op.path, Stat: st}
}

func (t *Tree) applySetACL(op *txnOp) OpResult {
	n := t.nodes[op.path]
	if n == nil {
		return OpResult{Code: op.code, Path: op.path, Err: proto.ErrNoNode}
	}
	old := n.acl
	n.acl = t.acls.acquire(op.acl)
	t.acls.release(old)
	n.aversion = op.version
	return OpResult{Code: op.code, Path: op.path, Stat: n.stat()}
}

// killSession deletes the ephemerals listed in a closeSession transaction,
// then any other ephemeral the session still owns (ZooKeeper does the
// same, with a warning), and forgets the session.
func (t *Tree) killSession(txn *Txn, r *Result) {
	for _, p := range txn.paths {
		t.deleteNode(p, txn.zxid, &r.Events)
	}
	if rest := t.ephemerals[txn.session]; len(rest) > 0 {
		paths := make([]string, 0, len(rest))
		for p := range rest {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		for _, p := range paths {
			t.deleteNode(p, txn.zxid, &r.Events)
		}
	}
	delete(t.sessions, txn.session)
}
