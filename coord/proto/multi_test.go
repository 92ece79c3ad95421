package proto

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// multiFrame encodes multi headers and bodies back to back.
func multiFrame(parts ...Record) []byte { return Encode(recordSeq(parts)) }

func hdr(t OpCode) *MultiHeader { return &MultiHeader{Type: t, Err: -1} }

var endHdr = &MultiHeader{Type: -1, Done: true, Err: -1}

func TestMultiRequestDecodeErrors(t *testing.T) {
	create := &CreateRequest{Path: "/a", ACL: openACL}
	get := &GetDataRequest{Path: "/a"}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"exists is not a multi op", multiFrame(hdr(OpExists), &ExistsRequest{Path: "/a"}, endHdr), ErrUnknownMultiOp},
		{"sync is not a multi op", multiFrame(hdr(OpCreate), create, hdr(OpSync), &SyncRequest{Path: "/"}, endHdr), ErrUnknownMultiOp},
		{"type -1 without done", multiFrame(hdr(OpCreate), create, hdr(-1)), ErrUnknownMultiOp},
		{"write then read", multiFrame(hdr(OpCreate), create, hdr(OpGetData), get, endHdr), ErrMixedMultiOps},
		{"read then write", multiFrame(hdr(OpGetData), get, hdr(OpDelete), &DeleteRequest{Path: "/a"}, endHdr), ErrMixedMultiOps},
		{"no terminator", multiFrame(hdr(OpCreate), create), ErrShortBuffer},
		{"empty input", nil, ErrShortBuffer},
		{"truncated body", multiFrame(hdr(OpCreate), create)[:12], ErrShortBuffer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m MultiRequest
			err := Decode(tc.in, &m)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestMultiRequestDoneEndsWhateverTheType(t *testing.T) {
	// ZooKeeper stops at the first header with done set, whatever its type.
	in := multiFrame(hdr(OpDelete), &DeleteRequest{Path: "/a", Version: 1},
		&MultiHeader{Type: OpCreate, Done: true, Err: 0})
	var m MultiRequest
	if err := Decode(in, &m); err != nil {
		t.Fatal(err)
	}
	want := []MultiOp{{OpDelete, &DeleteRequest{Path: "/a", Version: 1}}}
	if !reflect.DeepEqual(m.Ops, want) {
		t.Errorf("ops = %+v, want %+v", m.Ops, want)
	}
}

func TestMultiRequestBodyTypes(t *testing.T) {
	want := map[OpCode]Record{
		OpCreate: &CreateRequest{}, OpCreate2: &CreateRequest{}, OpCreateContainer: &CreateRequest{},
		OpCreateTTL: &CreateTTLRequest{}, OpDelete: &DeleteRequest{}, OpSetData: &SetDataRequest{},
		OpCheck: &CheckVersionRequest{}, OpGetChildren: &GetChildrenRequest{}, OpGetData: &GetDataRequest{},
	}
	for op := range opNames {
		got := newMultiOpBody(op)
		if w, ok := want[op]; ok {
			if reflect.TypeOf(got) != reflect.TypeOf(w) {
				t.Errorf("body for %v is %T, want %T", op, got, w)
			}
		} else if got != nil {
			t.Errorf("%v accepted in a multi with body %T; ZooKeeper refuses it", op, got)
		}
	}
}

func TestMultiRequestMatches(t *testing.T) {
	writes := &MultiRequest{Ops: []MultiOp{{OpCreate, &CreateRequest{}}, {OpCheck, &CheckVersionRequest{}}}}
	reads := &MultiRequest{Ops: []MultiOp{{OpGetData, &GetDataRequest{}}, {OpGetChildren, &GetChildrenRequest{}}}}
	empty := &MultiRequest{}
	tests := []struct {
		name string
		req  *MultiRequest
		op   OpCode
		want bool
	}{
		{"writes in multi", writes, OpMulti, true},
		{"writes in multiRead", writes, OpMultiRead, false},
		{"reads in multiRead", reads, OpMultiRead, true},
		{"reads in multi", reads, OpMulti, false},
		{"empty in multi", empty, OpMulti, true},
		{"empty in multiRead", empty, OpMultiRead, true},
		{"not a multi op", writes, OpCreate, false},
	}
	for _, tc := range tests {
		if got := tc.req.Matches(tc.op); got != tc.want {
			t.Errorf("%s: Matches(%v) = %v, want %v", tc.name, tc.op, got, tc.want)
		}
	}
}

func TestMultiResponseEncodeNormalises(t *testing.T) {
	tests := []struct {
		name string
		in   MultiResult
		want MultiResult // the same result as ZooKeeper would label it
	}{
		{"container create", MultiResult{Type: OpCreateContainer, Path: "/c", Stat: sampleStat},
			MultiResult{Type: OpCreate2, Path: "/c", Stat: sampleStat}},
		{"TTL create", MultiResult{Type: OpCreateTTL, Path: "/t", Stat: sampleStat},
			MultiResult{Type: OpCreate2, Path: "/t", Stat: sampleStat}},
		{"container delete", MultiResult{Type: OpDeleteContainer}, MultiResult{Type: OpDelete}},
		{"unknown type becomes a system error", MultiResult{Type: OpExists, Path: "/x"},
			MultiResult{Type: OpError, Err: ErrSystemError}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Encode(&MultiResponse{Results: []MultiResult{tc.in}})
			want := Encode(&MultiResponse{Results: []MultiResult{tc.want}})
			if !bytes.Equal(got, want) {
				t.Errorf("encoding\n got: %x\nwant: %x", got, want)
			}
		})
	}
}

func TestMultiResponseErrorHeaderCarriesCode(t *testing.T) {
	got := Encode(&MultiResponse{Results: []MultiResult{{Type: OpError, Err: ErrNoNode}, {Type: OpCheck}}})
	want := multiFrame(
		&MultiHeader{Type: OpError, Done: false, Err: int32(ErrNoNode)}, &ErrorResponse{Err: int32(ErrNoNode)},
		&MultiHeader{Type: OpCheck, Done: false, Err: 0},
		endHdr)
	if !bytes.Equal(got, want) {
		t.Errorf("encoding\n got: %x\nwant: %x", got, want)
	}
}

func TestMultiResponseDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"exists result", multiFrame(&MultiHeader{Type: OpExists}, &ExistsResponse{}, endHdr), ErrUnknownMultiOp},
		{"createTTL result", multiFrame(&MultiHeader{Type: OpCreateTTL}, &Create2Response{}, endHdr), ErrUnknownMultiOp},
		{"no terminator", multiFrame(&MultiHeader{Type: OpDelete}), ErrShortBuffer},
		{"truncated stat", multiFrame(&MultiHeader{Type: OpSetData}, &SetDataResponse{})[:20], ErrShortBuffer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m MultiResponse
			if err := Decode(tc.in, &m); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
