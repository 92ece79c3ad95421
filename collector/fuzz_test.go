package collector

import (
	"net/http"
	"testing"
)

// FuzzValidateSource: any string is either refused or yields a reader,
// and never panics.
func FuzzValidateSource(f *testing.F) {
	for _, s := range []string{"file:///var/log/a*.log", "https://h/x", "file://h/x", "http://", "file:///[", "::", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		err := ValidateSource(uri)
		rd, rerr := newReader(uri, http.DefaultClient)
		if (err == nil) != (rerr == nil) || (rerr == nil && rd == nil) {
			t.Fatalf("ValidateSource(%q) = %v but newReader = %v, %v", uri, err, rd, rerr)
		}
		if err == nil && SourceKey(uri) == "" {
			t.Fatalf("SourceKey(%q) is empty", uri)
		}
	})
}

// FuzzDecodeDocuments: malformed documents are errors, never panics.
func FuzzDecodeDocuments(f *testing.F) {
	f.Add([]byte(`{"version":1,"sources":["file:///x"]}`))
	f.Add([]byte(`{"version":1,"sources":[{"uri":"file:///x","lease":"1-1"}]}`))
	f.Add([]byte(`{"version":1,"progress":{"u":{"seq":3,"pos":{"offset":-1}}}}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Sources
		var a Assignment
		var st Status
		_ = decode("sources", data, &s)
		if decode("assignment", data, &a) == nil {
			a.URIs()
		}
		_ = decode("status", data, &st)
	})
}

// FuzzContentRangeTotal: the parser never panics and never invents a
// negative total other than -1.
func FuzzContentRangeTotal(f *testing.F) {
	for _, s := range []string{"bytes 0-9/100", "bytes */42", "bytes 0-9/*", "", "/", "bytes 1-2/-5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if n := contentRangeTotal(v); n < -1 {
			t.Fatalf("contentRangeTotal(%q) = %d", v, n)
		}
	})
}
