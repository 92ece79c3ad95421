package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRecover feeds arbitrary bytes to recovery as the only log segment.
// Recovery must never panic; it either refuses with ErrCorrupt and leaves
// the file alone, or returns increasing records that a second recovery
// returns again unchanged, and after which appending still works.
func FuzzRecover(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, logName(1))
		if err := os.WriteFile(path, data, 0o640); err != nil {
			t.Fatal(err)
		}
		opts := Options{Dir: dir, NoSync: true, Logger: quietLogger}
		recs, err := fuzzRecover(opts)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("recovery failed with %v, want ErrCorrupt or success", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatalf("refusing recovery changed the segment")
			}
			return
		}
		for i, r := range recs {
			if r.Zxid <= 0 || (i > 0 && r.Zxid <= recs[i-1].Zxid) || (i == 0 && r.Zxid != 1) {
				t.Fatalf("record %d has zxid %d after %v", i, r.Zxid, recs[:i])
			}
		}
		again, err := fuzzRecover(opts)
		if err != nil {
			t.Fatalf("second recovery failed: %v", err)
		}
		if !recordsEqual(recs, again) {
			t.Fatalf("second recovery returned %d records, first %d", len(again), len(recs))
		}

		s, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recover(); err != nil {
			t.Fatal(err)
		}
		next := s.LastZxid() + 1
		if err := s.Append(next, []byte("after")); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		final, err := fuzzRecover(opts)
		if err != nil {
			t.Fatalf("recovery after appending to the repaired log: %v", err)
		}
		if want := append(recs, Record{Zxid: next, Data: []byte("after")}); !recordsEqual(final, want) {
			t.Fatalf("after appending zxid %d recovered %d records, want %d", next, len(final), len(want))
		}
	})
}

// fuzzRecover opens, recovers and closes, returning copies of the records.
func fuzzRecover(opts Options) ([]Record, error) {
	s, err := Open(opts)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rec, err := s.Recover()
	if err != nil {
		return nil, err
	}
	out := make([]Record, len(rec.Records))
	for i, r := range rec.Records {
		out[i] = Record{Zxid: r.Zxid, Data: bytes.Clone(r.Data)}
	}
	return out, nil
}

func recordsEqual(a, b []Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Zxid != b[i].Zxid || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

// fuzzSeeds are segments named log.0000000000000001: intact, torn, zeroed
// and damaged. The same inputs are committed under testdata/fuzz.
func fuzzSeeds() [][]byte {
	good := segmentBytes(1, 0, 1, 2, 3, 4)
	badMiddle := bytes.Clone(good)
	badMiddle[segHeaderSize+recHeaderSize+2] ^= 1
	return [][]byte{
		nil,
		good,
		good[:len(good)-3],
		append(bytes.Clone(good), make([]byte, 100)...),
		badMiddle,
		segmentBytes(1, 0),
		segmentBytes(1, 0, 1, 3, 2),
		segmentBytes(2, 1, 2),
		make([]byte, segHeaderSize),
		[]byte("SHEPLOG\x00 not really"),
	}
}
