package tree

import (
	"errors"
	"fmt"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// ErrCorruptTxn reports bytes that DecodeTxn cannot read as a transaction.
var ErrCorruptTxn = errors.New("tree: corrupt transaction")

// txnFormat is the first byte of an encoded transaction, so that the
// format can evolve without guessing.
const txnFormat byte = 1

// Txn is one transaction: what Prepare decided and Apply carries out. Like
// ZooKeeper's TxnHeader plus record, it holds everything Apply needs, so
// replaying logged transactions rebuilds the same tree.
type Txn struct {
	zxid    int64
	time    int64 // ms since the epoch, when the request was prepared
	session int64
	kind    proto.OpCode // an op code, OpMulti, OpCreateSession, OpCloseSession or OpError

	err     proto.ErrCode // OpError: why the request failed
	inMulti bool          // OpError: the failed request was a multi (no per-op results)
	timeout int32         // OpCreateSession
	paths   []string      // OpCloseSession: the ephemerals to delete
	ops     []txnOp       // a single op (len 1) or the ops of a multi
}

// txnOp is one change. Which fields are used depends on code.
type txnOp struct {
	code    proto.OpCode
	err     proto.ErrCode // OpError inside a multi
	path    string
	data    []byte
	acl     []proto.ACL
	owner   int64 // create: the new node's ephemeralOwner
	cver    int32 // create: the parent's new (persisted) cversion
	version int32 // setData, check: the new version; setACL: the new aversion
}

// Zxid returns the transaction's zxid.
func (t *Txn) Zxid() int64 { return t.zxid }

// Session returns the session that issued the transaction (0 for the
// server itself).
func (t *Txn) Session() int64 { return t.session }

// Time returns the transaction's time in milliseconds since the epoch.
func (t *Txn) Time() int64 { return t.time }

// Type returns what the transaction does: an op code, proto.OpMulti,
// proto.OpCreateSession, proto.OpCloseSession, or proto.OpError for a
// request that failed (it still consumes its zxid).
func (t *Txn) Type() proto.OpCode { return t.kind }

// Err returns the error of a failed request (Type() == proto.OpError), or
// the first failing op's error for a multi; proto.ErrOK otherwise.
func (t *Txn) Err() proto.ErrCode {
	if t.kind == proto.OpError {
		return t.err
	}
	for i := range t.ops {
		if t.ops[i].code == proto.OpError {
			return t.ops[i].err
		}
	}
	return proto.ErrOK
}

// EncodeTxn serialises txn for the transaction log.
func EncodeTxn(txn *Txn) []byte { return AppendTxn(nil, txn) }

// AppendTxn appends the encoding of txn to b, so a log writer can reuse
// its buffer.
func AppendTxn(b []byte, txn *Txn) []byte {
	b = append(b, txnFormat)
	e := proto.NewEncoder(b)
	e.Long(txn.zxid)
	e.Long(txn.time)
	e.Long(txn.session)
	e.Int(int32(txn.kind))
	switch txn.kind {
	case proto.OpError:
		e.Int(int32(txn.err))
		e.Bool(txn.inMulti)
	case proto.OpCreateSession:
		e.Int(txn.timeout)
	case proto.OpCloseSession:
		e.Strings(txn.paths)
	case proto.OpMulti:
		e.Int(int32(len(txn.ops)))
		for i := range txn.ops {
			e.Int(int32(txn.ops[i].code))
			encodeOp(e, &txn.ops[i])
		}
	default:
		encodeOp(e, &txn.ops[0])
	}
	return e.Bytes()
}

func encodeOp(e *proto.Encoder, op *txnOp) {
	switch op.code {
	case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL:
		e.String(op.path)
		e.Buffer(op.data)
		proto.EncodeACLs(e, op.acl)
		e.Long(op.owner)
		e.Int(op.cver)
	case proto.OpDelete, proto.OpDeleteContainer:
		e.String(op.path)
	case proto.OpSetData:
		e.String(op.path)
		e.Buffer(op.data)
		e.Int(op.version)
	case proto.OpSetACL:
		e.String(op.path)
		proto.EncodeACLs(e, op.acl)
		e.Int(op.version)
	case proto.OpCheck:
		e.String(op.path)
		e.Int(op.version)
	case proto.OpError:
		e.Int(int32(op.err))
	}
}

// DecodeTxn reads a transaction written by EncodeTxn. It never panics and
// refuses anything EncodeTxn could not have produced: unknown formats and
// op codes, truncated records and trailing bytes.
func DecodeTxn(b []byte) (*Txn, error) {
	if len(b) == 0 || b[0] != txnFormat {
		return nil, fmt.Errorf("%w: unknown format", ErrCorruptTxn)
	}
	d := proto.NewDecoder(b[1:])
	txn := &Txn{
		zxid:    d.Long(),
		time:    d.Long(),
		session: d.Long(),
		kind:    proto.OpCode(d.Int()),
	}
	if d.Err() != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrCorruptTxn, d.Err())
	}
	switch txn.kind {
	case proto.OpError:
		txn.err = proto.ErrCode(d.Int())
		txn.inMulti = d.Bool()
	case proto.OpCreateSession:
		txn.timeout = d.Int()
	case proto.OpCloseSession:
		txn.paths = d.Strings()
	case proto.OpMulti:
		// Every op takes at least 8 bytes (its code and a length or int).
		n, isNil := d.VectorLen(8)
		if isNil {
			return nil, fmt.Errorf("%w: multi without an op list", ErrCorruptTxn)
		}
		txn.ops = make([]txnOp, 0, n)
		for i := 0; i < n && d.Err() == nil; i++ {
			op := txnOp{code: proto.OpCode(d.Int())}
			if !multiOpCode(op.code) {
				return nil, fmt.Errorf("%w: op %d of multi has type %v", ErrCorruptTxn, i, op.code)
			}
			decodeOp(d, &op)
			txn.ops = append(txn.ops, op)
		}
	default:
		if !singleOpCode(txn.kind) {
			return nil, fmt.Errorf("%w: type %v", ErrCorruptTxn, txn.kind)
		}
		op := txnOp{code: txn.kind}
		decodeOp(d, &op)
		txn.ops = []txnOp{op}
	}
	if d.Err() != nil {
		return nil, fmt.Errorf("%w: %v at zxid %#x: %w", ErrCorruptTxn, txn.kind, txn.zxid, d.Err())
	}
	if d.Remaining() != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after %v at zxid %#x", ErrCorruptTxn, d.Remaining(), txn.kind, txn.zxid)
	}
	return txn, nil
}

func decodeOp(d *proto.Decoder, op *txnOp) {
	switch op.code {
	case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL:
		op.path = d.String()
		op.data = d.Buffer()
		op.acl = proto.DecodeACLs(d)
		op.owner = d.Long()
		op.cver = d.Int()
	case proto.OpDelete, proto.OpDeleteContainer:
		op.path = d.String()
	case proto.OpSetData:
		op.path = d.String()
		op.data = d.Buffer()
		op.version = d.Int()
	case proto.OpSetACL:
		op.path = d.String()
		op.acl = proto.DecodeACLs(d)
		op.version = d.Int()
	case proto.OpCheck:
		op.path = d.String()
		op.version = d.Int()
	case proto.OpError:
		op.err = proto.ErrCode(d.Int())
	}
}

// singleOpCode reports whether code may be a transaction on its own.
func singleOpCode(code proto.OpCode) bool {
	switch code {
	case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL,
		proto.OpDelete, proto.OpDeleteContainer, proto.OpSetData, proto.OpSetACL, proto.OpCheck:
		return true
	}
	return false
}

// multiOpCode reports whether code may appear inside a multi transaction,
// the types ZooKeeper's MultiTxn holds.
func multiOpCode(code proto.OpCode) bool {
	switch code {
	case proto.OpCreate, proto.OpCreateContainer, proto.OpCreateTTL,
		proto.OpDelete, proto.OpSetData, proto.OpCheck, proto.OpError:
		return true
	}
	return false
}
