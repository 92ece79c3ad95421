package collector

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// workload appends numbered lines to n source files in the background.
type workload struct {
	dir  string
	n    int
	uris []string

	mu      sync.Mutex
	written []int

	stop chan struct{}
	done chan struct{}
}

// startWorkload appends one line to every source each interval until
// stopped, at most max lines per source.
func startWorkload(t *testing.T, n, max int, interval time.Duration) *workload {
	t.Helper()
	w := &workload{dir: t.TempDir(), n: n, written: make([]int, n), stop: make(chan struct{}), done: make(chan struct{})}
	for i := 0; i < n; i++ {
		p := filepath.Join(w.dir, fmt.Sprintf("src%02d.log", i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		w.uris = append(w.uris, "file://"+p)
	}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for round := 0; round < max; round++ {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			for i := 0; i < n; i++ {
				f, err := os.OpenFile(filepath.Join(w.dir, fmt.Sprintf("src%02d.log", i)), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					panic(err) // the test's own temp dir: cannot fail
				}
				fmt.Fprintln(f, lineOf(i, round))
				f.Close()
				w.mu.Lock()
				w.written[i]++
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(w.finish)
	return w
}

// finish stops the writer and waits for it.
func (w *workload) finish() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// lines returns how many lines each source has.
func (w *workload) counts() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int(nil), w.written...)
}

// verify checks that the outputs under dirs hold every written line of
// every source exactly once.
func (w *workload) verify(dirs []string) error {
	written := w.counts()
	for i, uri := range w.uris {
		lines := make([]string, written[i])
		for j := range lines {
			lines[j] = lineOf(i, j)
		}
		if err := exactlyOnce(dirs, uri, lines); err != nil {
			return fmt.Errorf("source %d: %w", i, err)
		}
	}
	return nil
}

// exactlyOnce checks that the outputs of source uri under dirs hold each
// line of written exactly once, and nothing else.
func exactlyOnce(dirs []string, uri string, written []string) error {
	seen := map[string]int{}
	total := 0
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(d, SourceKey(uri), "*.log"))
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				return err
			}
			sc := bufio.NewScanner(fh)
			for sc.Scan() {
				seen[sc.Text()]++
				total++
			}
			fh.Close()
		}
	}
	var missing, dups []string
	for _, w := range written {
		switch seen[w] {
		case 0:
			missing = append(missing, w)
		case 1:
		default:
			dups = append(dups, w)
		}
	}
	if len(missing) > 0 || len(dups) > 0 || total != len(written) {
		return fmt.Errorf("%d lines written, %d in the outputs; %d missing (first %v), %d duplicated (first %v)",
			len(written), total, len(missing), first(missing), len(dups), first(dups))
	}
	return nil
}

func first(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return s[0]
}

// agents runs collector agents in-process, each with its own session.
type agents struct {
	t       *testing.T
	connect string
	out     string // parent of the agents' output directories
	strat   Strategy
	// deadAfter, if set, replaces the assigners' testDeadAfter.
	deadAfter time.Duration
	mu        sync.Mutex
	running   map[string]func()
}

func newAgents(t *testing.T, connect string, strategy Strategy) *agents {
	a := &agents{t: t, connect: connect, out: t.TempDir(), strat: strategy, running: map[string]func(){}}
	t.Cleanup(a.stopAll)
	return a
}

func (a *agents) dir(name string) string { return filepath.Join(a.out, name) }

func (a *agents) dirs() []string {
	ds, _ := filepath.Glob(filepath.Join(a.out, "*"))
	return ds
}

// start runs agent name (a collector, and with assign a candidate
// assigner) until stop(name).
func (a *agents) start(name string, assign bool) {
	cfg := testAgentConfig(a.connect, name, a.dir(name), a.strat, testLogger().With("agent", name))
	cfg.Assign = assign
	if a.deadAfter > 0 {
		cfg.Assigner.DeadAfter = a.deadAfter
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := RunAgent(ctx, cfg); err != nil {
			a.t.Errorf("agent %s: %v", name, err)
		}
	}()
	a.mu.Lock()
	a.running[name] = func() { cancel(); <-done }
	a.mu.Unlock()
}

func (a *agents) stop(name string) {
	a.mu.Lock()
	stop := a.running[name]
	delete(a.running, name)
	a.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (a *agents) stopAll() {
	a.mu.Lock()
	names := make([]string, 0, len(a.running))
	for n := range a.running {
		names = append(names, n)
	}
	a.mu.Unlock()
	for _, n := range names {
		a.stop(n)
	}
}

// dial opens a session for the test's own reads.
func dial(t *testing.T, connect string) *recipe.Session {
	t.Helper()
	return dialAuth(t, connect, coordtest.Auth)
}

// dialAuth opens a session with the credential auth ("" for none), closed
// when the test ends.
func dialAuth(t *testing.T, connect, auth string) *recipe.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := recipe.Dial(ctx, connect, recipe.Options{SessionTimeout: 4 * time.Second, Auth: auth, Logger: testLogger()})
	if err != nil {
		t.Fatalf("dial %s: %v", connect, err)
	}
	t.Cleanup(s.Close)
	return s
}

// assignments reads every collector's assigned sources.
func assignments(s *recipe.Session) (map[string][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ov, err := NewAdmin(s).Overview(ctx, time.Hour)
	if err != nil {
		return nil, err
	}
	infos := ov.Collectors
	out := map[string][]string{}
	for _, in := range infos {
		out[in.Name] = in.Sources
	}
	return out, nil
}

// waitAssigned waits until all n sources are assigned, each once, and
// cond holds of the assignment; it returns the assignment.
func waitAssigned(t *testing.T, s *recipe.Session, n int, what string, cond func(map[string][]string) error) map[string][]string {
	t.Helper()
	var got map[string][]string
	checkFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		a, err := assignments(s)
		if err != nil {
			return err
		}
		total := 0
		seen := map[string]bool{}
		for _, ss := range a {
			for _, x := range ss {
				if seen[x] {
					return fmt.Errorf("%s: %s assigned twice: %v", what, x, a)
				}
				seen[x] = true
				total++
			}
		}
		if total != n {
			return fmt.Errorf("%s: %d of %d sources assigned: %v", what, total, n, a)
		}
		if err := cond(a); err != nil {
			return fmt.Errorf("%s: %w: %v", what, err, a)
		}
		got = a
		return nil
	})
	return got
}

// leader returns the id of the assigner leading now.
func leader(t *testing.T, s *recipe.Session) string {
	t.Helper()
	var id string
	checkFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l, err := recipe.NewElection(s, AssignerPath, "").Leader(ctx)
		if err != nil {
			return err
		}
		if l == "" {
			return errors.New("no assigner leads")
		}
		id = l
		return nil
	})
	return id
}

func addSources(t *testing.T, s *recipe.Session, uris []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := NewAdmin(s).AddSources(ctx, uris...); err != nil {
		t.Fatal(err)
	}
}

func sortedList(m map[string][]string) string {
	var parts []string
	for n, ss := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", n, len(ss)))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// startAssigner runs an assigner (local strategy) that is no collector,
// until the test ends.
func startAssigner(t *testing.T, connect string) {
	t.Helper()
	s := dial(t, connect)
	a, err := NewAssigner(s, testAgentConfig("", "assigner", "", Local, testLogger()).Assigner)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("assigner: %v", err)
		}
	})
}
