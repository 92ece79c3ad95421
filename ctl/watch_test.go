package ctl

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// background is a ctl run in a goroutine, whose output can be read while
// it runs.
type background struct {
	out, err *syncBuffer
	done     chan result
}

// startCtl runs ctl in the background with env (its streams are set to
// buffers).
func startCtl(t *testing.T, env Env, connect string, args ...string) *background {
	t.Helper()
	b := &background{out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan result, 1)}
	env.Stdout, env.Stderr = b.out, b.err
	go func() { b.done <- runCtlEnv(t, env, connect, args...) }()
	return b
}

// lines returns the complete lines printed so far.
func (b *background) lines() []string {
	s := b.out.String()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Split(s[:i], "\n")
	}
	return nil
}

// waitLines waits until n lines have been printed.
func (b *background) waitLines(t *testing.T, n int) []string {
	t.Helper()
	coordtest.WaitFor(t, 15*time.Second, fmt.Sprintf("%d lines of output", n), func() error {
		if got := len(b.lines()); got < n {
			return fmt.Errorf("%d lines so far: %q (stderr %q)", got, b.out.String(), b.err.String())
		}
		return nil
	})
	return b.lines()
}

// wait waits for the run to end.
func (b *background) wait(t *testing.T) result {
	t.Helper()
	select {
	case r := <-b.done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatalf("ctl did not exit; stdout so far %q, stderr %q", b.out.String(), b.err.String())
		return result{}
	}
}

const ready = "WatchedEvent state:SyncConnected type:None path:null"

func event(typ, path string) string {
	return fmt.Sprintf("WatchedEvent state:SyncConnected type:%s path:%s", typ, path)
}

// watchStep is a change made while a watch runs, and the lines it must
// print (in any order).
type watchStep struct {
	args []string
	want []string
}

// runWatch starts ctl watch with args, makes each change once the
// previous one has been reported, and checks the whole output.
func runWatch(t *testing.T, zk string, args []string, steps []watchStep) {
	t.Helper()
	b := startCtl(t, Env{}, zk, args...)
	n := 1
	b.waitLines(t, n)
	for i, st := range steps {
		mustCtl(t, zk, st.args...)
		n += len(st.want)
		got := b.waitLines(t, n)[n-len(st.want) : n]
		if !sameLines(got, st.want) {
			t.Fatalf("after step %d (%s): printed %q, want %q", i, strings.Join(st.args, " "), got, st.want)
		}
	}
	r := b.wait(t)
	if r.code != 0 {
		t.Fatalf("watch: %v", r)
	}
	if got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n"); len(got) != n {
		t.Fatalf("watch printed %d lines, want %d: %q", len(got), n, r.stdout)
	}
}

func sameLines(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestWatchNode follows one node through creation, changes to it and its
// children, and deletion; changes below its children are not reported.
func TestWatchNode(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		runWatch(t, zk, words("watch --count 6 /w"), []watchStep{
			{words("create /w"), []string{event("NodeCreated", "/w")}},
			{words("set /w x"), []string{event("NodeDataChanged", "/w")}},
			{words("create /w/c"), []string{event("NodeChildrenChanged", "/w")}},
			{words("set /w/c y"), nil},
			{words("delete /w/c"), []string{event("NodeChildrenChanged", "/w")}},
			{words("delete /w"), []string{event("NodeDeleted", "/w")}},
			{words("create /w"), []string{event("NodeCreated", "/w")}},
		})
	})
}

// TestWatchRecursive follows a subtree: new children are watched by the
// time their creation is printed.
func TestWatchRecursive(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		mustCtl(t, zk, "create", "/r")
		mustCtl(t, zk, "create", "/r/a")
		runWatch(t, zk, words("watch -R --count 9 /r"), []watchStep{
			{words("set /r/a 1"), []string{event("NodeDataChanged", "/r/a")}},
			{words("create /r/b"), []string{event("NodeChildrenChanged", "/r")}},
			{words("create /r/b/c"), []string{event("NodeChildrenChanged", "/r/b")}},
			{words("set /r/b/c v"), []string{event("NodeDataChanged", "/r/b/c")}},
			{words("delete /r/b/c"), []string{event("NodeDeleted", "/r/b/c"), event("NodeChildrenChanged", "/r/b")}},
			{words("create /r/b/c"), []string{event("NodeChildrenChanged", "/r/b")}},
			{words("set /r/b/c w"), []string{event("NodeDataChanged", "/r/b/c")}},
			{words("set /r x"), []string{event("NodeDataChanged", "/r")}},
		})
	})
}

// TestWatchJSON checks the JSON lines of watch.
func TestWatchJSON(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		runWatch(t, zk, words("--json watch --count 2 /j"), []watchStep{
			{words("create /j"), []string{`{"type":"NodeCreated","path":"/j"}`}},
			{words("delete /j"), []string{`{"type":"NodeDeleted","path":"/j"}`}},
		})
	})
}

// TestWatchInterrupted ends a watch with SIGINT: exit status 0.
func TestWatchInterrupted(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		sigs := make(chan os.Signal, 1)
		b := startCtl(t, Env{Signals: sigs}, zk, "watch", "/x")
		if got := b.waitLines(t, 1); got[0] != ready {
			t.Fatalf("first line %q, want %q", got[0], ready)
		}
		sigs <- syscall.SIGINT
		if r := b.wait(t); r.code != 0 || r.stdout != ready+"\n" {
			t.Fatalf("interrupted watch: %v", r)
		}
	})
}

// TestReadWatch checks the -w flag of get, ls and stat: the result, then
// the event once the watch fires — and only then.
func TestReadWatch(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		mustCtl(t, zk, "create", "/g", "v1")
		for _, c := range []struct {
			read    []string
			first   int        // lines the read prints before waiting
			changes [][]string // the last one fires the watch
			event   string
		}{
			{words("get -w /g"), 1, [][]string{words("set /g v2")}, event("NodeDataChanged", "/g")},
			{words("ls -w /g"), 1, [][]string{words("set /g v3"), words("create /g/c")}, event("NodeChildrenChanged", "/g")},
			{words("stat -w /g"), 11, [][]string{words("delete /g/c"), words("set /g v4")}, event("NodeDataChanged", "/g")},
		} {
			b := startCtl(t, Env{}, zk, c.read...)
			b.waitLines(t, c.first)
			for _, change := range c.changes {
				mustCtl(t, zk, change...)
			}
			r := b.wait(t)
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if r.code != 0 || len(lines) != c.first+1 || lines[c.first] != c.event {
				t.Fatalf("ctl %s, then %v: %v\nwant %d lines, the last %q", strings.Join(c.read, " "), c.changes, r, c.first+1, c.event)
			}
		}
	})
}
