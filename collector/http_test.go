package collector

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestHTTPSourceMoves collects a growing HTTP resource, stops the
// collector holding it, and checks that the one taking it over resumes at
// the committed offset: every line once across both outputs.
func TestHTTPSourceMoves(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		rs := &rangeServer{}
		srv := httptest.NewServer(rs)
		defer srv.Close()
		var body strings.Builder
		grow := func(from, to int) {
			for i := from; i < to; i++ {
				fmt.Fprintln(&body, lineOf(0, i))
			}
			rs.set(body.String())
		}
		grow(0, 50)
		s := dial(t, tg.addr)
		uri := srv.URL + "/access.log"
		addSources(t, s, []string{uri})
		startAssigner(t, tg.addr)
		ag := newAgents(t, tg.addr, Local)
		ag.start("h1", false)
		ag.start("h2", false)
		var owner string
		waitAssigned(t, s, 1, "start", func(a map[string][]string) error {
			for n, ss := range a {
				if len(ss) == 1 {
					owner = n
				}
			}
			return nil
		})
		collected := func() (string, error) {
			var all strings.Builder
			for _, d := range ag.dirs() {
				files, _ := filepath.Glob(filepath.Join(d, SourceKey(uri), "*.log"))
				for _, f := range files {
					b, err := os.ReadFile(f)
					if err != nil {
						return "", err
					}
					all.Write(b)
				}
			}
			return all.String(), nil
		}
		// Each collector's segments hold a contiguous range, so the
		// concatenation sorted by line equals the body exactly once.
		exactly := func() error {
			got, err := collected()
			if err != nil {
				return err
			}
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			want := strings.Split(strings.TrimSuffix(body.String(), "\n"), "\n")
			seen := map[string]int{}
			for _, l := range lines {
				seen[l]++
			}
			for _, l := range want {
				if seen[l] != 1 {
					return fmt.Errorf("line %q collected %d times (%d lines collected, %d served)", l, seen[l], len(lines), len(want))
				}
			}
			if len(lines) != len(want) {
				return fmt.Errorf("%d lines collected, %d served", len(lines), len(want))
			}
			return nil
		}
		coordtest.WaitFor(t, 30*time.Second, "condition", exactly)
		ag.stop(owner)
		other := map[string]string{"h1": "h2", "h2": "h1"}[owner]
		waitAssigned(t, s, 1, owner+" stopped", func(a map[string][]string) error {
			if len(a[other]) != 1 {
				return fmt.Errorf("%s does not hold the source", other)
			}
			return nil
		})
		grow(50, 80)
		coordtest.WaitFor(t, 30*time.Second, "condition", exactly)
		segs, _ := filepath.Glob(filepath.Join(ag.dir(other), SourceKey(uri), "*.log"))
		if len(segs) == 0 {
			t.Fatalf("%s wrote nothing after taking the source over", other)
		}
	})
}
