package recipe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
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

// lockHandoff passes the lock at m's path between Go (m, on session s)
// and a peer process speaking the lock/unlock line protocol: while Go
// holds it the peer waits, queued behind Go with a node of nodeShape;
// then the peer holds it and Go waits, until the peer unlocks.
func lockHandoff(t *testing.T, ctx context.Context, s *Session, peer *linePeer, name string, m *Mutex, nodeShape *regexp.Regexp) {
	t.Helper()
	p := m.Path()
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	peer.send("lock %s", p)
	for _, n := range waitChildren(t, s, p, 2) {
		if !nodeShape.MatchString(n) {
			t.Errorf("node %q does not have %s's shape %v", n, name, nodeShape)
		}
	}
	peer.quiet("Go holds the lock")
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	peer.expect("locked", 10*time.Second)
	done := lockAsync(ctx, m)
	waitChildren(t, s, p, 2)
	waitParked(t, []*Session{s}, 1)
	notYet(t, done, "Go Lock while "+name+" holds the lock")
	peer.send("unlock")
	peer.expect("unlocked", 10*time.Second)
	if err := recv(t, done, "Go Lock after "+name+" released"); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// lockContention has Go and a peer process (the line protocol's
// "contend PATH ROUNDS GUARD") take the lock at path m.Path() in turn,
// rounds times each, with an ephemeral guard node created inside: never
// both inside at once. Go holds the lock while the peer starts and lets
// go once the peer waits behind it, so that Go's next Lock waits behind
// the peer however fast either side runs: the two contend by order.
func lockContention(t *testing.T, ctx context.Context, s *Session, peer *linePeer, name string, m *Mutex) {
	t.Helper()
	p := m.Path()
	guard := p + "-guard"
	const rounds = 40
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	peer.send("contend %s %d %s", p, rounds, guard)
	waitChildren(t, s, p, 2)
	before := s.waiterWakeups.Load()
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	for i := range rounds {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, guard, nil, zk.FlagEphemeral, nil); err != nil {
			if errors.Is(err, zk.ErrNodeExists) {
				t.Fatalf("round %d: Go got the lock while %s was inside", i, name)
			}
			t.Fatal(err)
		}
		if err := s.Delete(ctx, guard, -1); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
	peer.expect(fmt.Sprintf("contended %d 0", rounds), 60*time.Second)
	if s.waiterWakeups.Load() == before {
		t.Errorf("Go never waited behind %s: the two did not contend", name)
	}
}
