package proto

import (
	"errors"
	"fmt"
)

// ErrUnknownOp reports a request op code that no client may send.
// ZooKeeper answers it with ErrUnimplemented.
var ErrUnknownOp = errors.New("proto: unknown request op code")

// NewRequest returns an empty request record for op, ready to Decode. Ops
// whose requests have no body (ping, closeSession, whoAmI) give (nil, true);
// op codes no client sends give (nil, false). Among the latter are
// createSession (the ConnectRequest travels without a RequestHeader),
// notification, error and deleteContainer, which ZooKeeper only issues to
// itself (its body is a bare path, not a jute record).
func NewRequest(op OpCode) (Record, bool) {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}, true
	case OpCreateTTL:
		return &CreateTTLRequest{}, true
	case OpDelete:
		return &DeleteRequest{}, true
	case OpExists:
		return &ExistsRequest{}, true
	case OpGetData:
		return &GetDataRequest{}, true
	case OpSetData:
		return &SetDataRequest{}, true
	case OpGetACL:
		return &GetACLRequest{}, true
	case OpSetACL:
		return &SetACLRequest{}, true
	case OpGetChildren:
		return &GetChildrenRequest{}, true
	case OpGetChildren2:
		return &GetChildren2Request{}, true
	case OpSync:
		return &SyncRequest{}, true
	case OpCheck:
		return &CheckVersionRequest{}, true
	case OpMulti, OpMultiRead:
		return &MultiRequest{}, true
	case OpReconfig:
		return &ReconfigRequest{}, true
	case OpCheckWatches:
		return &CheckWatchesRequest{}, true
	case OpRemoveWatches:
		return &RemoveWatchesRequest{}, true
	case OpAuth:
		return &AuthPacket{}, true
	case OpSetWatches:
		return &SetWatches{}, true
	case OpSetWatches2:
		return &SetWatches2{}, true
	case OpSASL:
		return &GetSASLRequest{}, true
	case OpGetEphemerals:
		return &GetEphemeralsRequest{}, true
	case OpGetAllChildrenNumber:
		return &GetAllChildrenNumberRequest{}, true
	case OpAddWatch:
		return &AddWatchRequest{}, true
	case OpPing, OpCloseSession, OpWhoAmI:
		return nil, true
	}
	return nil, false
}

// DecodeRequest decodes the body of a request of type op (the bytes after
// the RequestHeader). It returns (nil, nil) for ops without a body, an error
// wrapping ErrUnknownOp for op codes no client sends, and the decoder's
// error (ErrShortBuffer, ErrBadLength, ErrUnknownMultiOp, ErrMixedMultiOps)
// for a malformed body, which ZooKeeper answers with ErrMarshallingError.
// Trailing bytes are ignored, as ZooKeeper does.
func DecodeRequest(op OpCode, body []byte) (Record, error) {
	r, ok := NewRequest(op)
	if !ok {
		return nil, fmt.Errorf("%w: %v", ErrUnknownOp, op)
	}
	if r == nil {
		return nil, nil
	}
	if err := Decode(body, r); err != nil {
		return nil, fmt.Errorf("proto: decode %v request (%d bytes): %w", op, len(body), err)
	}
	return r, nil
}
