package collector

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// procs runs collector agents as processes of this test binary (see
// TestMain), so that they can be killed with SIGKILL mid-write.
type procs struct {
	t       *testing.T
	connect string
	out     string
	logs    string
	mu      sync.Mutex
	running map[string]*exec.Cmd
}

func newProcs(t *testing.T, connect string) *procs {
	p := &procs{t: t, connect: connect, out: t.TempDir(), logs: t.TempDir(), running: map[string]*exec.Cmd{}}
	t.Cleanup(func() {
		p.mu.Lock()
		names := make([]string, 0, len(p.running))
		for n := range p.running {
			names = append(names, n)
		}
		p.mu.Unlock()
		for _, n := range names {
			p.kill(n)
		}
		if t.Failed() {
			p.dumpLogs()
		}
	})
	return p
}

func (p *procs) dirs() []string {
	ds, _ := filepath.Glob(filepath.Join(p.out, "*"))
	return ds
}

func (p *procs) start(name string, assign bool) {
	p.t.Helper()
	args := []string{"zk=" + p.connect, "name=" + name, "out=" + filepath.Join(p.out, name), "strategy=local"}
	if assign {
		args = append(args, "assign=1")
	}
	logf, err := os.OpenFile(filepath.Join(p.logs, name+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"="+strings.Join(args, "\n"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start collector %s: %v", name, err)
	}
	logf.Close()
	p.mu.Lock()
	p.running[name] = cmd
	p.mu.Unlock()
}

// signal sends sig to name and waits for it to exit.
func (p *procs) signal(name string, sig syscall.Signal) {
	p.mu.Lock()
	cmd := p.running[name]
	delete(p.running, name)
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	_ = cmd.Wait()
}

func (p *procs) kill(name string) { p.signal(name, syscall.SIGKILL) }
func (p *procs) stop(name string) { p.signal(name, syscall.SIGTERM) }

// logCount counts the log lines of every agent that contain s.
func (p *procs) logCount(s string) int {
	files, _ := filepath.Glob(filepath.Join(p.logs, "*.log"))
	n := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		n += strings.Count(string(b), s)
	}
	return n
}

func (p *procs) dumpLogs() {
	files, _ := filepath.Glob(filepath.Join(p.logs, "*.log"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		p.t.Logf("--- %s (tail):\n%s", filepath.Base(f), strings.Join(lines, "\n"))
	}
}

// TestKillNine: five collector processes, fifty file sources appended to
// throughout; two collectors are killed with SIGKILL, a new one joins,
// the leading assigner is killed, the coordination server restarts, and
// the killed ones come back. Every line of every source must be in the
// outputs exactly once.
func TestKillNine(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		const n = 50
		w := startWorkload(t, n, 5000, 20*time.Millisecond)
		s := dial(t, tg.addr)
		addSources(t, s, w.uris)
		ps := newProcs(t, tg.addr)
		names := []string{"k1", "k2", "k3", "k4", "k5"}
		for i, nm := range names {
			ps.start(nm, i < 2)
		}
		holds := func(names ...string) func(map[string][]string) error {
			return func(a map[string][]string) error {
				for _, nm := range names {
					if len(a[nm]) == 0 {
						return fmt.Errorf("%s holds nothing", nm)
					}
				}
				return nil
			}
		}
		empty := func(names ...string) func(map[string][]string) error {
			return func(a map[string][]string) error {
				for _, nm := range names {
					if len(a[nm]) != 0 {
						return fmt.Errorf("dead %s still holds %d sources", nm, len(a[nm]))
					}
				}
				return nil
			}
		}
		waitAssigned(t, s, n, "start", holds(names...))
		// Let data flow so that the kills land mid-write.
		waitLines(t, ps, w, 20)

		ps.kill("k3")
		ps.kill("k4")
		waitAssigned(t, s, n, "k3, k4 killed", empty("k3", "k4"))

		ps.start("k6", false)
		waitAssigned(t, s, n, "k6 joined", holds("k6"))

		lead := leader(t, s)
		ps.kill(lead)
		waitAssigned(t, s, n, lead+" killed", empty(lead))

		tg.restart(t)

		ps.start("k3", false)
		ps.start("k4", false)
		ps.start(lead, true)
		waitAssigned(t, s, n, "returned", holds("k3", "k4", lead))

		w.finish()
		coordtest.WaitFor(t, 60*time.Second, "condition", func() error { return w.verify(ps.dirs()) })
		for _, nm := range append(names, "k6") {
			ps.stop(nm)
		}
		if err := w.verify(ps.dirs()); err != nil {
			t.Fatalf("after stopping every collector: %v", err)
		}
		t.Logf("%s: %d lines per source, %d sources, collected exactly once; %d rollbacks of uncommitted output",
			tg.name, w.counts()[0], n, ps.logCount("cut uncommitted output"))
	})
}

// waitLines waits until the outputs hold at least min lines of source 0.
func waitLines(t *testing.T, ps *procs, w *workload, min int) {
	t.Helper()
	coordtest.WaitFor(t, 30*time.Second, "condition", func() error {
		got := 0
		for _, d := range ps.dirs() {
			files, _ := filepath.Glob(filepath.Join(d, SourceKey(w.uris[0]), "*.log"))
			for _, f := range files {
				b, _ := os.ReadFile(f)
				got += strings.Count(string(b), "\n")
			}
		}
		if got < min {
			return fmt.Errorf("%d lines of source 0 collected, want %d", got, min)
		}
		return nil
	})
}
