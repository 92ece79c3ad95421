package recipe

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// linePeer is another implementation of the recipes (Curator in a JVM,
// kazoo in Python) run as a child process that takes one command per line
// on stdin and answers one line per command on stdout. Commands may block
// (a lock being acquired); answers are read asynchronously.
type linePeer struct {
	t       testing.TB
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	answers chan string

	mu     sync.Mutex
	stderr strings.Builder
}

func startPeer(t testing.TB, name string, cmd *exec.Cmd) *linePeer {
	t.Helper()
	p := &linePeer{t: t, name: name, cmd: cmd, answers: make(chan string, 16)}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = peerStderr{p}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.answers <- sc.Text()
		}
		close(p.answers)
	}()
	t.Cleanup(func() {
		p.stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, p.stderrText())
		}
	})
	p.expect("ready", 60*time.Second)
	return p
}

type peerStderr struct{ p *linePeer }

func (w peerStderr) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if w.p.stderr.Len() < 64<<10 {
		w.p.stderr.Write(b)
	}
	return len(b), nil
}

func (p *linePeer) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// send writes one command.
func (p *linePeer) send(format string, args ...any) {
	p.t.Helper()
	if _, err := fmt.Fprintf(p.stdin, format+"\n", args...); err != nil {
		p.t.Fatalf("%s: send: %v", p.name, err)
	}
}

// expect waits for the next answer and checks that it starts with
// prefix; it returns the answer.
func (p *linePeer) expect(prefix string, d time.Duration) string {
	p.t.Helper()
	select {
	case a, ok := <-p.answers:
		if !ok {
			p.t.Fatalf("%s exited waiting for %q; stderr:\n%s", p.name, prefix, p.stderrText())
		}
		if !strings.HasPrefix(a, prefix) {
			p.t.Fatalf("%s answered %q, want %q…", p.name, a, prefix)
		}
		return a
	case <-time.After(d):
		p.t.Fatalf("%s: no %q within %v", p.name, prefix, d)
		return ""
	}
}

// quiet checks that no answer comes now: the peer is blocked, as the
// caller expects, after it has observably queued.
func (p *linePeer) quiet(what string) {
	p.t.Helper()
	select {
	case a := <-p.answers:
		p.t.Fatalf("%s answered %q while %s", p.name, a, what)
	case <-time.After(150 * time.Millisecond):
	}
}
