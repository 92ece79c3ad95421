package proto

import (
	"errors"
	"reflect"
	"testing"
)

func TestNewRequest(t *testing.T) {
	tests := []struct {
		op     OpCode
		want   Record // nil: no body
		wantOK bool
	}{
		{OpCreate, &CreateRequest{}, true},
		{OpCreate2, &CreateRequest{}, true},
		{OpCreateContainer, &CreateRequest{}, true},
		{OpCreateTTL, &CreateTTLRequest{}, true},
		{OpDelete, &DeleteRequest{}, true},
		{OpExists, &ExistsRequest{}, true},
		{OpGetData, &GetDataRequest{}, true},
		{OpSetData, &SetDataRequest{}, true},
		{OpGetACL, &GetACLRequest{}, true},
		{OpSetACL, &SetACLRequest{}, true},
		{OpGetChildren, &GetChildrenRequest{}, true},
		{OpGetChildren2, &GetChildren2Request{}, true},
		{OpSync, &SyncRequest{}, true},
		{OpCheck, &CheckVersionRequest{}, true},
		{OpMulti, &MultiRequest{}, true},
		{OpMultiRead, &MultiRequest{}, true},
		{OpReconfig, &ReconfigRequest{}, true},
		{OpCheckWatches, &CheckWatchesRequest{}, true},
		{OpRemoveWatches, &RemoveWatchesRequest{}, true},
		{OpAuth, &AuthPacket{}, true},
		{OpSetWatches, &SetWatches{}, true},
		{OpSetWatches2, &SetWatches2{}, true},
		{OpSASL, &GetSASLRequest{}, true},
		{OpGetEphemerals, &GetEphemeralsRequest{}, true},
		{OpGetAllChildrenNumber, &GetAllChildrenNumberRequest{}, true},
		{OpAddWatch, &AddWatchRequest{}, true},
		{OpPing, nil, true},
		{OpCloseSession, nil, true},
		{OpWhoAmI, nil, true},
		{OpNotification, nil, false},
		{OpCreateSession, nil, false},
		{OpDeleteContainer, nil, false},
		{OpError, nil, false},
		{OpCode(10), nil, false},
		{OpCode(50), nil, false},
		{OpCode(-2), nil, false},
	}
	seen := map[OpCode]bool{}
	for _, tc := range tests {
		seen[tc.op] = true
		got, ok := NewRequest(tc.op)
		if ok != tc.wantOK {
			t.Errorf("NewRequest(%v) ok = %v, want %v", tc.op, ok, tc.wantOK)
		}
		if reflect.TypeOf(got) != reflect.TypeOf(tc.want) {
			t.Errorf("NewRequest(%v) = %T, want %T", tc.op, got, tc.want)
			continue
		}
		if got != nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("NewRequest(%v) = %+v, want a zero record", tc.op, got)
		}
	}
	for op := range opNames {
		if !seen[op] {
			t.Errorf("op %v has no NewRequest case in this table", op)
		}
	}
}

func TestNewRequestFreshEachCall(t *testing.T) {
	a, _ := NewRequest(OpGetData)
	b, _ := NewRequest(OpGetData)
	if a == b {
		t.Fatal("NewRequest returned the same record twice; concurrent decodes would share it")
	}
}

func TestDecodeRequest(t *testing.T) {
	getData := Encode(&GetDataRequest{Path: "/a", Watch: true})
	tests := []struct {
		name    string
		op      OpCode
		body    []byte
		want    Record
		wantErr error
	}{
		{"getData", OpGetData, getData, &GetDataRequest{Path: "/a", Watch: true}, nil},
		{"trailing bytes ignored", OpGetData, append(append([]byte{}, getData...), 9, 9), &GetDataRequest{Path: "/a", Watch: true}, nil},
		{"ping has no body", OpPing, nil, nil, nil},
		{"whoAmI ignores a body", OpWhoAmI, []byte{1, 2}, nil, nil},
		{"truncated getData", OpGetData, getData[:len(getData)-1], nil, ErrShortBuffer},
		{"hostile length", OpSync, []byte{0x7f, 0xff, 0xff, 0xff, '/'}, nil, ErrBadLength},
		{"unknown op", OpCode(77), getData, nil, ErrUnknownOp},
		{"notification is not a request", OpNotification, nil, nil, ErrUnknownOp},
		{"multi with exists", OpMulti, multiFrame(hdr(OpExists), &ExistsRequest{Path: "/"}, endHdr), nil, ErrUnknownMultiOp},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeRequest(tc.op, tc.body)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("record = %#v, want %#v", got, tc.want)
			}
		})
	}
}
