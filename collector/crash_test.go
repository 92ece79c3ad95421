package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestRestartCutsUncommittedOutput leaves on disk what a collector killed
// between fsync and commit leaves — bytes past the committed size of its
// segment, and a later segment never committed — and checks that the
// collector, restarted, cuts both away and goes on exactly once.
func TestRestartCutsUncommittedOutput(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		w := startWorkload(t, 1, 0, time.Hour) // files only; lines appended below
		src := filepath.Join(w.dir, "src00.log")
		appendN := func(from, to int) {
			f, err := os.OpenFile(src, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := from; i < to; i++ {
				fmt.Fprintln(f, lineOf(0, i))
			}
			f.Close()
			w.mu.Lock()
			w.written[0] = to
			w.mu.Unlock()
		}
		appendN(0, 10)
		s := dial(t, tg.addr)
		addSources(t, s, w.uris)
		ag := newAgents(t, tg.addr, Local)
		ag.start("c1", true)
		coordtest.WaitFor(t, 30*time.Second, "condition", func() error { return w.verify(ag.dirs()) })
		ag.stop("c1")

		dir := filepath.Join(ag.dir("c1"), SourceKey(w.uris[0]))
		segs, _ := filepath.Glob(filepath.Join(dir, "c1-*.log"))
		if len(segs) == 0 {
			t.Fatalf("no output segment in %s", dir)
		}
		cur := segs[len(segs)-1]
		f, err := os.OpenFile(cur, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, lineOf(0, 10)) // written, never committed
		f.Close()
		later := filepath.Join(dir, segmentName("c1", 1<<40))
		if err := os.WriteFile(later, []byte(lineOf(0, 11)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := w.verify(ag.dirs()); err == nil {
			t.Fatal("the simulated uncommitted output went unnoticed by verify")
		}

		appendN(10, 15)
		ag.start("c1", true)
		coordtest.WaitFor(t, 30*time.Second, "condition", func() error { return w.verify(ag.dirs()) })
		if _, err := os.Stat(later); !os.IsNotExist(err) {
			t.Fatalf("uncommitted later segment %s survived the restart: %v", later, err)
		}
	})
}
