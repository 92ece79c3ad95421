package collector

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// lockedBuffer is a bytes.Buffer safe for the collector and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCollectorFollowsItsNode drives one collector by writing its node
// as an assigner would, with no assigner running: the node's data is the
// whole contract. Lines go to stdout after each commit, and Stats counts
// them; taking the source away stops the collection.
func TestCollectorFollowsItsNode(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		s := dial(t, tg.addr)
		src := filepath.Join(t.TempDir(), "app.log")
		if err := os.WriteFile(src, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		uri := "file://" + src
		var stdout lockedBuffer
		c, err := New(s, Config{Name: "solo", Stdout: &stdout, PollInterval: 20 * time.Millisecond,
			StatusInterval: 50 * time.Millisecond, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}()
		assign := func(a Assignment) {
			t.Helper()
			coordtest.WaitFor(t, 10*time.Second, "condition", func() error {
				_, err := s.Set(context.Background(), CollectorPath("solo"), encode(a), -1)
				return err
			})
		}
		assign(Assignment{Version: 1, Sources: []Lease{{URI: uri, ID: "manual-1"}}})
		coordtest.WaitFor(t, 10*time.Second, "condition", func() error {
			st := c.Stats()
			if !slices.Equal(st.Sources, []string{uri}) || st.Lines != 3 || stdout.String() != "one\ntwo\nthree\n" {
				return fmt.Errorf("stats %+v, stdout %q: want the source and its 3 lines", st, stdout.String())
			}
			return nil
		})
		assign(Assignment{Version: 1})
		coordtest.WaitFor(t, 10*time.Second, "condition", func() error {
			if st := c.Stats(); len(st.Sources) != 0 {
				return fmt.Errorf("still collecting %v after the source was taken away", st.Sources)
			}
			data, _, err := s.Get(context.Background(), StatusPath("solo"))
			if err != nil {
				return err
			}
			var st Status
			if err := decode("status", data, &st); err != nil {
				return err
			}
			if p := st.Progress[uri]; p.Owned || p.Pos.Offset != int64(len("one\ntwo\nthree\n")) || p.Lines != 3 {
				return fmt.Errorf("status entry %+v: want not owned, at the end of the file, 3 lines", p)
			}
			return nil
		})
	})
}

// TestSlowSourceDoesNotStall gives a collector a file and an HTTP source
// whose server never answers: the file's lines must still be collected
// and committed, each round giving up on the slow source after
// ReadTimeout.
func TestSlowSourceDoesNotStall(t *testing.T) {
	tg := startShepherd(t)
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	s := dial(t, tg.addr)
	src := filepath.Join(t.TempDir(), "app.log")
	if err := os.WriteFile(src, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := New(s, Config{Name: "slow", PollInterval: 20 * time.Millisecond, StatusInterval: 50 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, OutDir: t.TempDir(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	a := Assignment{Version: 1, Sources: []Lease{{URI: srv.URL + "/hang.log", ID: "1"}, {URI: "file://" + src, ID: "2"}}}
	coordtest.WaitFor(t, 10*time.Second, "condition", func() error {
		_, err := s.Set(context.Background(), CollectorPath("slow"), encode(a), -1)
		return err
	})
	coordtest.WaitFor(t, 10*time.Second, "condition", func() error {
		if st := c.Stats(); st.Lines != 3 {
			return fmt.Errorf("%d lines committed, want the file's 3 despite the hanging source", st.Lines)
		}
		return nil
	})
	before := c.Stats().Commits
	coordtest.WaitFor(t, 10*time.Second, "condition", func() error {
		if n := c.Stats().Commits; n < before+3 {
			return fmt.Errorf("%d heartbeats since, want 3", n-before)
		}
		return nil
	})
}
