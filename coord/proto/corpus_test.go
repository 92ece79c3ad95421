package proto

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the seed files under testdata/fuzz")

// seedFile is one committed fuzz seed: testdata/fuzz/<target>/<name>.
type seedFile struct {
	target, name string
	values       []any // the fuzz function's arguments after *testing.T
}

// seedFiles builds every seed from valid encodings: the sample records and
// the frames captured from ZooKeeper.
func seedFiles(t *testing.T) []seedFile {
	var out []seedFile
	add := func(target, name string, values ...any) {
		out = append(out, seedFile{target, name, values})
	}
	for op := range opNames {
		r, ok := NewRequest(op)
		if !ok || r == nil {
			continue
		}
		for _, s := range samples() {
			if fmt.Sprintf("%T", s.rec) == fmt.Sprintf("%T", r) {
				add("FuzzDecodeRequest", fmt.Sprintf("%s-%s", op, s.name), int32(op), Encode(s.rec))
				break
			}
		}
	}
	for i, s := range samples() {
		add("FuzzDecodeRecord", s.name, uint8(i), Encode(s.rec))
	}
	for _, s := range samples() {
		switch s.rec.(type) {
		case *ConnectRequest:
			add("FuzzConnectRequest", s.name, Encode(s.rec))
		case *MultiRequest:
			add("FuzzMultiRequest", s.name, Encode(s.rec))
		case *MultiResponse:
			add("FuzzMultiResponse", s.name, Encode(s.rec))
		case *WatcherEvent:
			add("FuzzWatcherEvent", s.name, Encode(s.rec))
		}
	}
	for i, g := range goldenFrames {
		body := g.want
		if seq, ok := body.(recordSeq); ok {
			body = seq[len(seq)-1] // drop the header
		}
		name := fmt.Sprintf("zookeeper-capture-%02d", i)
		switch body.(type) {
		case *ConnectRequest:
			add("FuzzConnectRequest", name, Encode(body))
		case *MultiRequest:
			add("FuzzMultiRequest", name, Encode(body))
			add("FuzzDecodeRequest", name, int32(OpMulti), Encode(body))
		case *MultiResponse:
			add("FuzzMultiResponse", name, Encode(body))
		case *WatcherEvent:
			add("FuzzWatcherEvent", name, Encode(body))
		}
	}
	for i, p := range []struct {
		path string
		seq  bool
	}{
		{"/", false}, {"/a/b", false}, {"/q/", true}, {"/a/../b", false},
		{"/é/\U0001F600", false}, {"/a\x00b", false}, {"/a\xffb", false},
	} {
		add("FuzzValidatePath", fmt.Sprintf("path-%02d", i), p.path, p.seq)
	}
	return out
}

// encodeSeed writes values in the "go test fuzz v1" corpus format.
func encodeSeed(values []any) []byte {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, v := range values {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		default:
			fmt.Fprintf(&b, "%T(%v)\n", v, v)
		}
	}
	return b.Bytes()
}

// TestFuzzCorpus checks that every seed built by seedFiles is committed
// with the current encoding; run with -update-corpus to rewrite them. Extra
// files (crashers kept as regressions) are left alone.
func TestFuzzCorpus(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range seedFiles(t) {
		path := filepath.Join("testdata", "fuzz", s.target, sanitize(s.name))
		if seen[path] {
			t.Fatalf("two seeds named %s", path)
		}
		seen[path] = true
		want := encodeSeed(s.values)
		if *updateCorpus {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("seed missing (go test ./coord/proto -run TestFuzzCorpus -update-corpus): %v", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("seed %s is stale; rerun with -update-corpus", path)
		}
	}
}

// sanitize makes a seed name usable as a file name.
func sanitize(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}
