package proto

import (
	"errors"
	"reflect"
	"testing"
)

func TestRecordsRoundTrip(t *testing.T) {
	for _, s := range samples() {
		t.Run(s.name, func(t *testing.T) {
			enc := Encode(s.rec)
			got := newLike(s.rec)
			d := NewDecoder(enc)
			got.Decode(d)
			if err := d.Err(); err != nil {
				t.Fatalf("decode %x: %v", enc, err)
			}
			if d.Remaining() != 0 {
				t.Errorf("decode left %d of %d bytes unread", d.Remaining(), len(enc))
			}
			if !reflect.DeepEqual(got, s.rec) {
				t.Errorf("round trip changed the record\n got: %+v\nwant: %+v", got, s.rec)
			}
			if again := Encode(got); string(again) != string(enc) {
				t.Errorf("re-encoding differs\n got: %x\nwant: %x", again, enc)
			}
		})
	}
}

// TestRecordsTruncated checks that every strict prefix of an encoding is
// refused, except where the last field is optional on the wire.
func TestRecordsTruncated(t *testing.T) {
	for _, s := range samples() {
		t.Run(s.name, func(t *testing.T) {
			enc := Encode(s.rec)
			for n := 0; n < len(enc); n++ {
				err := Decode(enc[:n], newLike(s.rec))
				if n == len(enc)-1 && hasOptionalTrailer(s.rec) {
					if err != nil {
						t.Errorf("prefix without the optional last byte: %v", err)
					}
					continue
				}
				if !errors.Is(err, ErrShortBuffer) && !errors.Is(err, ErrBadLength) {
					t.Fatalf("decode of %d/%d bytes: err = %v, want ErrShortBuffer or ErrBadLength", n, len(enc), err)
				}
			}
		})
	}
}

func hasOptionalTrailer(r Record) bool {
	switch r := r.(type) {
	case *ConnectRequest:
		return r.HasReadOnly
	case *ConnectResponse:
		return r.HasReadOnly
	}
	return false
}

// TestSamplesCoverRequests keeps the round-trip table and the fuzz seeds
// honest: every request body NewRequest can return has a sample.
func TestSamplesCoverRequests(t *testing.T) {
	have := map[reflect.Type]bool{}
	for _, s := range samples() {
		have[reflect.TypeOf(s.rec)] = true
	}
	for op := range opNames {
		r, ok := NewRequest(op)
		if !ok || r == nil {
			continue
		}
		if !have[reflect.TypeOf(r)] {
			t.Errorf("no sample of %T (request body of %v)", r, op)
		}
	}
}

func TestConnectRequestReadOnlyByte(t *testing.T) {
	base := ConnectRequest{TimeOut: 5000, Passwd: make([]byte, 16)}
	without := Encode(&base)
	if len(without) != 44 {
		t.Fatalf("encoding without readOnly is %d bytes, want 44", len(without))
	}
	tests := []struct {
		name         string
		in           []byte
		wantReadOnly bool
		wantHas      bool
	}{
		{"absent", without, false, false},
		{"false", append(append([]byte{}, without...), 0), false, true},
		{"true", append(append([]byte{}, without...), 1), true, true},
		{"non-zero is true", append(append([]byte{}, without...), 7), true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got ConnectRequest
			if err := Decode(tc.in, &got); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got.ReadOnly != tc.wantReadOnly || got.HasReadOnly != tc.wantHas {
				t.Errorf("ReadOnly, HasReadOnly = %v, %v; want %v, %v",
					got.ReadOnly, got.HasReadOnly, tc.wantReadOnly, tc.wantHas)
			}
		})
	}
	t.Run("encode omits the byte unless HasReadOnly", func(t *testing.T) {
		r := base
		r.ReadOnly = true
		if n := len(Encode(&r)); n != 44 {
			t.Errorf("ReadOnly without HasReadOnly encodes %d bytes, want 44", n)
		}
		r.HasReadOnly = true
		if b := Encode(&r); len(b) != 45 || b[44] != 1 {
			t.Errorf("with HasReadOnly: %x, want 45 bytes ending in 01", b)
		}
	})
}

func TestConnectRequestTruncatedPasswdKeepsNoReadOnly(t *testing.T) {
	// A broken record must not be mistaken for one with a readOnly byte.
	b := Encode(&ConnectRequest{TimeOut: 1, Passwd: []byte("0123456789abcdef"), HasReadOnly: true})
	var got ConnectRequest
	if err := Decode(b[:30], &got); err == nil {
		t.Fatalf("decoding 30 of %d bytes succeeded: %+v", len(b), got)
	}
	if got.HasReadOnly {
		t.Errorf("HasReadOnly set on a truncated record")
	}
}
