package collector

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// drain reads rd from pos until it returns nothing new, and returns what
// it read and where it stopped.
func drain(t *testing.T, rd reader, pos Position, max int) (string, Position) {
	t.Helper()
	var out bytes.Buffer
	for i := 0; i < 1000; i++ {
		data, next, _, err := rd.Read(context.Background(), pos, max)
		if err != nil {
			t.Fatalf("read at %+v: %v", pos, err)
		}
		if len(data) == 0 && next == pos {
			return out.String(), pos
		}
		out.Write(data)
		pos = next
	}
	t.Fatalf("reader did not settle after 1000 reads")
	return "", pos
}

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// setMtime makes file p look modified at base+d, so that rotation order
// does not depend on the file system's clock granularity.
func setMtime(t *testing.T, p string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

func TestFileReaderRotationAndTruncation(t *testing.T) {
	dir := t.TempDir()
	active := filepath.Join(dir, "app.log")
	rd := &fileReader{glob: filepath.Join(dir, "app.log*")}
	base := time.Now().Add(-time.Hour)

	appendFile(t, active, "a1\na2\npart")
	setMtime(t, active, base)
	got, pos := drain(t, rd, Position{}, 64)
	if got != "a1\na2\n" {
		t.Fatalf("first read %q, want the two complete lines", got)
	}
	appendFile(t, active, "ial\n")
	setMtime(t, active, base.Add(time.Second))
	if got, pos = drain(t, rd, pos, 64); got != "partial\n" {
		t.Fatalf("after completing the line read %q, want %q", got, "partial\n")
	}

	// Rotation: the active file is renamed, written once more through the
	// old handle's name, and a new active file is created.
	if err := os.Rename(active, active+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, active+".1", "a3\n")
	setMtime(t, active+".1", base.Add(2*time.Second))
	appendFile(t, active, "b1\nb2\n")
	setMtime(t, active, base.Add(3*time.Second))
	if got, pos = drain(t, rd, pos, 64); got != "a3\nb1\nb2\n" {
		t.Fatalf("across the rotation read %q, want the rotated file's tail then the new file", got)
	}

	// Truncation in place (copytruncate): start again at 0.
	if err := os.Truncate(active, 0); err != nil {
		t.Fatal(err)
	}
	appendFile(t, active, "c1\n")
	setMtime(t, active, base.Add(4*time.Second))
	if got, pos = drain(t, rd, pos, 64); got != "c1\n" {
		t.Fatalf("after truncation read %q, want %q", got, "c1\n")
	}

	// The rotated file is deleted: nothing breaks, the active file goes on.
	if err := os.Remove(active + ".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, active, "c2\n")
	if got, _ = drain(t, rd, pos, 64); got != "c2\n" {
		t.Fatalf("after deleting the rotated file read %q, want %q", got, "c2\n")
	}
}

func TestFileReaderLongLineAndSmallReads(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.log")
	long := strings.Repeat("x", 25) + "\n"
	appendFile(t, p, "a\n"+long+"b\n")
	got, _ := drain(t, &fileReader{glob: p}, Position{}, 10)
	if got != "a\n"+long+"b\n" {
		t.Fatalf("with 10-byte reads got %q, want every byte once, in order", got)
	}
}

// rangeServer serves a growing document with http.ServeContent, which
// answers Range requests as real servers do.
type rangeServer struct {
	mu   sync.Mutex
	body string
	// noRange makes it ignore Range and send everything (200).
	noRange bool
}

func (s *rangeServer) set(body string) {
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

func (s *rangeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	body, noRange := s.body, s.noRange
	s.mu.Unlock()
	if noRange {
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, "log", time.Time{}, strings.NewReader(body))
}

func TestHTTPReader(t *testing.T) {
	for _, noRange := range []bool{false, true} {
		name := "range"
		if noRange {
			name = "no-range"
		}
		t.Run(name, func(t *testing.T) {
			rs := &rangeServer{noRange: noRange}
			srv := httptest.NewServer(rs)
			defer srv.Close()
			rd := &httpReader{url: srv.URL, client: srv.Client()}
			rs.set("l1\nl2\npar")
			got, pos := drain(t, rd, Position{}, 4)
			if got != "l1\nl2\n" {
				t.Fatalf("read %q, want the complete lines", got)
			}
			rs.set("l1\nl2\npartial\nl3\n")
			if got, pos = drain(t, rd, pos, 4); got != "partial\nl3\n" {
				t.Fatalf("read %q after growth, want the new lines", got)
			}
			rs.set("n1\n") // replaced by a shorter document
			if got, _ = drain(t, rd, pos, 4); got != "n1\n" {
				t.Fatalf("read %q after truncation, want the new document", got)
			}
		})
	}
}

func TestHTTPReaderErrorStatus(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	rd := &httpReader{url: srv.URL, client: srv.Client()}
	if _, _, _, err := rd.Read(context.Background(), Position{}, 10); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("Read of a missing URL: error %v, want one naming status 404", err)
	}
}

func TestValidateSource(t *testing.T) {
	for _, tc := range []struct {
		uri string
		ok  bool
	}{
		{"file:///var/log/app*.log", true},
		{"file://localhost/var/log/app.log", true},
		{"https://example.com/log", true},
		{"http://127.0.0.1:8080/x.log", true},
		{"file://host/var/log/x", false},
		{"file:relative.log", false},
		{"ftp://example.com/x", false},
		{"http:///nohost", false},
		{"file:///var/[log", false},
	} {
		if err := ValidateSource(tc.uri); (err == nil) != tc.ok {
			t.Errorf("ValidateSource(%q) = %v, want ok=%v", tc.uri, err, tc.ok)
		}
	}
}

func TestSourceKeyDistinct(t *testing.T) {
	a, b := SourceKey("file:///a/b.log"), SourceKey("file:///a_b.log")
	if a == b || strings.ContainsAny(a, "/:") {
		t.Fatalf("SourceKey gave %q and %q: want distinct, safe directory names", a, b)
	}
}
