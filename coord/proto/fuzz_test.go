package proto

import (
	"reflect"
	"testing"
)

// Each fuzz target checks two things for any input: decoding never panics,
// and a record that decodes survives encode → decode unchanged (the
// encoding is canonical, so it may differ from the input: a -1 string
// length comes back as 0, a boolean byte 7 as 1). Seeds live under
// testdata/fuzz/<target>/ and are kept in sync by TestFuzzCorpus.

// checkReencode decodes enc into a fresh record like got and compares.
func checkReencode(t *testing.T, got Record) {
	t.Helper()
	enc := Encode(got)
	again := newLike(got)
	if err := Decode(enc, again); err != nil {
		t.Fatalf("re-decoding our own encoding %x of %+v: %v", enc, got, err)
	}
	if !reflect.DeepEqual(again, got) {
		t.Fatalf("encode/decode changed the record\nfirst:  %+v\nsecond: %+v", got, again)
	}
}

func fuzzRecord(f *testing.F, newRecord func() Record) {
	f.Fuzz(func(t *testing.T, body []byte) {
		r := newRecord()
		if Decode(body, r) != nil {
			return
		}
		checkReencode(t, r)
	})
}

func FuzzDecodeRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, op int32, body []byte) {
		r, err := DecodeRequest(OpCode(op), body)
		if err != nil || r == nil {
			return
		}
		again, err := DecodeRequest(OpCode(op), Encode(r))
		if err != nil {
			t.Fatalf("re-decoding %v request %+v: %v", OpCode(op), r, err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("encode/decode changed the %v request\nfirst:  %+v\nsecond: %+v", OpCode(op), r, again)
		}
	})
}

func FuzzConnectRequest(f *testing.F) {
	fuzzRecord(f, func() Record { return &ConnectRequest{} })
}

func FuzzMultiRequest(f *testing.F) {
	fuzzRecord(f, func() Record { return &MultiRequest{} })
}

func FuzzMultiResponse(f *testing.F) {
	fuzzRecord(f, func() Record { return &MultiResponse{} })
}

func FuzzWatcherEvent(f *testing.F) {
	fuzzRecord(f, func() Record { return &WatcherEvent{} })
}

// FuzzDecodeRecord covers the decoders no other target reaches (responses,
// headers, ConnectResponse): kind picks the record type from samples().
func FuzzDecodeRecord(f *testing.F) {
	all := samples()
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		r := newLike(all[int(kind)%len(all)].rec)
		if Decode(body, r) != nil {
			return
		}
		checkReencode(t, r)
	})
}

func FuzzValidatePath(f *testing.F) {
	f.Fuzz(func(t *testing.T, path string, sequential bool) {
		err := ValidatePath(path, sequential)
		if want := javaPathValid(path, sequential); (err == nil) != want {
			t.Fatalf("ValidatePath(%q, %v) = %v; the UTF-16 reference says valid=%v", path, sequential, err, want)
		}
	})
}
