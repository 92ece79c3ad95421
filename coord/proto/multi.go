package proto

import (
	"errors"
	"fmt"
)

// ErrUnknownMultiOp reports an op type that may not appear inside a multi
// request or response. ZooKeeper answers such a request with
// ErrMarshallingError.
var ErrUnknownMultiOp = errors.New("proto: op not allowed in a multi")

// ErrMixedMultiOps reports a multi request mixing reads (getData,
// getChildren) with writes. ZooKeeper refuses to deserialise one, answering
// ErrMarshallingError.
var ErrMixedMultiOps = errors.New("proto: multi mixes read and write ops")

// MultiHeader precedes each op of a multi request and each result of a multi
// response; a header with Done set ends the list.
type MultiHeader struct {
	Type OpCode
	Done bool
	Err  int32
}

// Encode writes the header.
func (r *MultiHeader) Encode(e *Encoder) { e.Int(int32(r.Type)); e.Bool(r.Done); e.Int(r.Err) }

// Decode reads the header.
func (r *MultiHeader) Decode(d *Decoder) {
	r.Type = OpCode(d.Int())
	r.Done = d.Bool()
	r.Err = d.Int()
}

// encodeMultiEnd writes the header that ends a multi request or response;
// ZooKeeper writes {-1, true, -1} in both directions.
func encodeMultiEnd(e *Encoder) {
	end := MultiHeader{Type: -1, Done: true, Err: -1}
	end.Encode(e)
}

// MultiOp is one operation of a MultiRequest. Op is the request body whose
// concrete type newMultiOpBody gives for Type (e.g. *CreateRequest for
// OpCreate2).
type MultiOp struct {
	Type OpCode
	Op   Record
}

// MultiRequest is the body of OpMulti (all writes, applied atomically) and
// OpMultiRead (all reads).
type MultiRequest struct {
	Ops []MultiOp
}

// newMultiOpBody returns an empty body for an op allowed in a multi, or nil.
func newMultiOpBody(op OpCode) Record {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}
	case OpCreateTTL:
		return &CreateTTLRequest{}
	case OpDelete:
		return &DeleteRequest{}
	case OpSetData:
		return &SetDataRequest{}
	case OpCheck:
		return &CheckVersionRequest{}
	case OpGetChildren:
		return &GetChildrenRequest{}
	case OpGetData:
		return &GetDataRequest{}
	}
	return nil
}

// isMultiRead reports whether op is one of the reads a multiRead may hold.
func isMultiRead(op OpCode) bool { return op == OpGetData || op == OpGetChildren }

// Encode writes each op behind its header, then the terminator. Every Op
// must be non-nil and of the type newMultiOpBody gives for its Type.
func (r *MultiRequest) Encode(e *Encoder) {
	for i := range r.Ops {
		h := MultiHeader{Type: r.Ops[i].Type, Done: false, Err: -1}
		h.Encode(e)
		r.Ops[i].Op.Encode(e)
	}
	encodeMultiEnd(e)
}

// Decode reads ops until the terminating header. It fails on an op type a
// multi may not carry (ErrUnknownMultiOp) and on a mix of reads and writes
// (ErrMixedMultiOps). The op count needs no separate bound: each op costs at
// least a 9-byte header and a 4-byte path, so a packet of n bytes yields at
// most n/13 ops.
func (r *MultiRequest) Decode(d *Decoder) {
	r.Ops = nil
	for d.Err() == nil {
		var h MultiHeader
		h.Decode(d)
		if d.Err() != nil || h.Done {
			return
		}
		body := newMultiOpBody(h.Type)
		if body == nil {
			d.Fail(fmt.Errorf("%w: %v", ErrUnknownMultiOp, h.Type))
			return
		}
		if len(r.Ops) > 0 && isMultiRead(h.Type) != isMultiRead(r.Ops[0].Type) {
			d.Fail(fmt.Errorf("%w: %v after %v", ErrMixedMultiOps, h.Type, r.Ops[0].Type))
			return
		}
		body.Decode(d)
		r.Ops = append(r.Ops, MultiOp{Type: h.Type, Op: body})
	}
}

// Matches reports whether the ops may be carried by a request of type op:
// OpMulti takes only writes, OpMultiRead only reads, and an empty list fits
// both. ZooKeeper answers a mismatch with ErrMarshallingError.
func (r *MultiRequest) Matches(op OpCode) bool {
	var wantRead bool
	switch op {
	case OpMulti:
		wantRead = false
	case OpMultiRead:
		wantRead = true
	default:
		return false
	}
	for i := range r.Ops {
		if isMultiRead(r.Ops[i].Type) != wantRead {
			return false
		}
	}
	return true
}

// MultiResult is the outcome of one op of a multi. Type selects which other
// fields are meaningful:
//
//	OpCreate                Path
//	OpCreate2               Path, Stat (also used for container and TTL creates)
//	OpDelete, OpCheck       none
//	OpSetData               Stat
//	OpGetData               Data, Stat
//	OpGetChildren           Children
//	OpError                 Err
//
// ZooKeeper 3.8 reports a create or create2 op inside a multi as OpCreate
// (path only) and a container or TTL create as OpCreate2 (path and Stat).
// When a multi fails it reports every op as OpError: those before the
// failing op with ErrOK, the failing one with its code and those after with
// ErrRuntimeInconsistency; the ReplyHeader's Err stays ErrOK.
type MultiResult struct {
	Type     OpCode
	Err      ErrCode
	Path     string
	Stat     Stat
	Data     []byte
	Children []string
}

// MultiResponse answers OpMulti and OpMultiRead, one result per op in
// request order.
type MultiResponse struct {
	Results []MultiResult
}

// Encode writes each result behind its header, then the terminator, exactly
// as ZooKeeper 3.8 does: the header's Err is the error code for an OpError
// result and 0 otherwise; OpCreateContainer and OpCreateTTL results go out
// as OpCreate2 and OpDeleteContainer as OpDelete, the types ZooKeeper gives
// them. A result of any other type is a server bug; it is written as an
// ErrSystemError failure so the client still gets a stream it can parse.
func (r *MultiResponse) Encode(e *Encoder) {
	for i := range r.Results {
		r.Results[i].encode(e)
	}
	encodeMultiEnd(e)
}

func (r *MultiResult) encode(e *Encoder) {
	header := func(t OpCode, err int32) {
		h := MultiHeader{Type: t, Done: false, Err: err}
		h.Encode(e)
	}
	switch r.Type {
	case OpCreate:
		header(OpCreate, 0)
		e.String(r.Path)
	case OpCreate2, OpCreateContainer, OpCreateTTL:
		header(OpCreate2, 0)
		e.String(r.Path)
		r.Stat.Encode(e)
	case OpDelete, OpDeleteContainer:
		header(OpDelete, 0)
	case OpCheck:
		header(OpCheck, 0)
	case OpSetData:
		header(OpSetData, 0)
		r.Stat.Encode(e)
	case OpGetData:
		header(OpGetData, 0)
		e.Buffer(r.Data)
		r.Stat.Encode(e)
	case OpGetChildren:
		header(OpGetChildren, 0)
		e.Strings(r.Children)
	case OpError:
		header(OpError, int32(r.Err))
		e.Int(int32(r.Err))
	default:
		header(OpError, int32(ErrSystemError))
		e.Int(int32(ErrSystemError))
	}
}

// Decode reads results until the terminating header; an unknown result type
// fails with ErrUnknownMultiOp. Each result costs at least its 9-byte
// header, which bounds the count by the packet size.
func (r *MultiResponse) Decode(d *Decoder) {
	r.Results = nil
	for d.Err() == nil {
		var h MultiHeader
		h.Decode(d)
		if d.Err() != nil || h.Done {
			return
		}
		res := MultiResult{Type: h.Type}
		switch h.Type {
		case OpCreate:
			res.Path = d.String()
		case OpCreate2:
			res.Path = d.String()
			res.Stat.Decode(d)
		case OpDelete, OpCheck:
		case OpSetData:
			res.Stat.Decode(d)
		case OpGetData:
			res.Data = d.Buffer()
			res.Stat.Decode(d)
		case OpGetChildren:
			res.Children = d.Strings()
		case OpError:
			// The header repeats the code; ZooKeeper's client trusts the body.
			res.Err = ErrCode(d.Int())
		default:
			d.Fail(fmt.Errorf("%w: result type %v", ErrUnknownMultiOp, h.Type))
			return
		}
		r.Results = append(r.Results, res)
	}
}
