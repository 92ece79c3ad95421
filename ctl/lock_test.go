package ctl

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// holdVerbs are the verbs that run a command while holding something.
var holdVerbs = []string{"lock", "elect"}

// TestHoldExitStatus checks that lock and elect pass the command's exit
// status through, and report what cannot run.
func TestHoldExitStatus(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		for _, verb := range holdVerbs {
			for _, c := range []struct {
				args []string
				code int
				err  string // part of stderr
			}{
				{args: []string{"/h", "--", "true"}},
				{args: []string{"/h", "sh", "-c", "exit 3"}, code: 3},
				{args: []string{"/h", "--", "sh", "-c", "kill -KILL $$"}, code: 128 + 9},
				{args: []string{"/h", "--", "/nonexistent/command"}, code: 127, err: "cannot run /nonexistent/command"},
				{args: []string{"/h"}, code: 2, err: "missing command to run"},
				{args: []string{"/h", "--"}, code: 2, err: "missing command to run"},
				{args: []string{"--wait", "-1s", "/h", "true"}, code: 2, err: "--wait -1s"},
				{args: []string{"h", "true"}, code: 1, err: "Path must start with / character"},
			} {
				args := append([]string{verb}, c.args...)
				r := runCtl(t, zk, args...)
				if r.code != c.code || !strings.Contains(r.stderr, c.err) {
					t.Errorf("ctl %s: %v\nwant exit %d, stderr containing %q", strings.Join(args, " "), r, c.code, c.err)
				}
			}
		}
	})
}

// TestHoldEnvironment checks what the command learns about its hold.
func TestHoldEnvironment(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		for _, c := range []struct {
			verb, script string
		}{
			{"lock", `test "$SHEPHERD_LOCK_PATH" = /env && case "$SHEPHERD_LOCK_NODE" in /env/_c_*-lock-*) ;; *) exit 9;; esac`},
			{"elect", `test "$SHEPHERD_ELECTION_PATH" = /env && case "$SHEPHERD_ELECTION_NODE" in /env/*__lock__*) ;; *) exit 9;; esac && test "$SHEPHERD_FENCING_TOKEN" -gt 0`},
		} {
			if r := runCtl(t, zk, c.verb, "/env", "--", "sh", "-c", c.script); r.code != 0 {
				t.Errorf("%s: the command's environment is not as documented: %v", c.verb, r)
			}
		}
	})
}

// counterScript increments the counter in dir/count, failing with 42 if
// another copy runs at the same time (dir/held exists).
const counterScript = `
set -e
if [ -e "$1/held" ]; then echo "two holders at once" >&2; exit 42; fi
touch "$1/held"
n=$(cat "$1/count")
sleep 0.02
echo $((n + 1)) > "$1/count"
rm "$1/held"
`

// TestHoldMutualExclusion runs two ctl invocations at a time, over and
// over, each incrementing a shared file counter under the lock (or the
// leadership): no two commands overlap and no increment is lost.
func TestHoldMutualExclusion(t *testing.T) {
	const workers, rounds = 2, 4
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		for _, verb := range holdVerbs {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "count"), []byte("0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			results := make(chan result, workers*rounds)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range rounds {
						results <- runCtl(t, zk, verb, "/mutex", "--", "sh", "-c", counterScript, "sh", dir)
					}
				}()
			}
			wg.Wait()
			close(results)
			for r := range results {
				if r.code != 0 {
					t.Errorf("%s: a holder failed: %v", verb, r)
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, "count"))
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n != workers*rounds {
				t.Errorf("%s: counter is %d after %d increments: some were lost", verb, n, workers*rounds)
			}
		}
	})
}

// holder is a background lock or elect whose command announces it holds
// and then runs until told to stop.
type holder struct {
	*background
	sigs chan os.Signal
	pid  int
}

// startHolder runs "verb path -- sh -c script" in the background, where
// script prints its pid, then handles SIGTERM by exiting 7.
func startHolder(t *testing.T, zk, verb, path string) *holder {
	t.Helper()
	const script = `trap 'exit 7' TERM; echo $$; while :; do sleep 0.05; done`
	h := &holder{sigs: make(chan os.Signal, 1)}
	h.background = startCtl(t, Env{Signals: h.sigs}, zk, verb, path, "--", "sh", "-c", script)
	line := h.waitLines(t, 1)[0]
	pid, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("holder printed %q, not its pid", line)
	}
	h.pid = pid
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return h
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// TestHoldWaitAndForward: a second contender gives up after --wait, one
// interrupted while waiting exits 130, and SIGTERM to the holder reaches
// its command, whose status comes back; then the lock is free.
func TestHoldWaitAndForward(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		for _, verb := range holdVerbs {
			path := "/" + verb
			h := startHolder(t, zk, verb, path)

			r := runCtl(t, zk, verb, "--wait", "300ms", path, "--", "true")
			if want := fmt.Sprintf("%s: not acquired within 300ms (--wait)", map[string]string{"lock": "lock " + path, "elect": "leadership of " + path}[verb]); r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("%s --wait while held: %v\nwant exit 1 and %q", verb, r, want)
			}

			sigs := make(chan os.Signal, 1)
			waiter := startCtl(t, Env{Signals: sigs}, zk, verb, path, "--", "true")
			coordtest.WaitFor(t, 10*time.Second, "the waiter queues", func() error {
				out := mustCtl(t, zk, "ls", path)
				if strings.Count(out, ",") < 1 {
					return fmt.Errorf("ls %s: %s", path, out)
				}
				return nil
			})
			sigs <- syscall.SIGINT
			if r := waiter.wait(t); r.code != 130 || !strings.Contains(r.stderr, "interrupted") {
				t.Errorf("%s interrupted while waiting: %v\nwant exit 130", verb, r)
			}

			h.sigs <- syscall.SIGTERM
			if r := h.wait(t); r.code != 7 {
				t.Errorf("%s holder sent SIGTERM: %v\nwant the command's exit status 7", verb, r)
			}
			if r := runCtl(t, zk, verb, "--wait", "5s", path, "--", "true"); r.code != 0 {
				t.Errorf("%s after the holder ended: %v", verb, r)
			}
			assertNothingLeft(t, zk, verb, path)
		}
	})
}

// assertNothingLeft checks that the lock directory at path holds no
// node. The directory is a container: the server may have reaped it once
// empty, which leaves nothing behind either.
func assertNothingLeft(t *testing.T, zk, verb, path string) {
	t.Helper()
	r := runCtl(t, zk, "ls", path)
	if r.code == 0 && r.stdout == "[]\n" || r.code != 0 && strings.Contains(r.stderr, "Node does not exist") {
		return
	}
	t.Errorf("%s left nodes behind: ls %s = %v", verb, path, r)
}

// TestHoldLost deletes the holder's node while its command runs: the
// command is killed and ctl exits 75.
func TestHoldLost(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		for _, verb := range holdVerbs {
			path := "/lost-" + verb
			h := startHolder(t, zk, verb, path)
			node := strings.Trim(mustCtl(t, zk, "ls", path), "[]\n")
			mustCtl(t, zk, "delete", path+"/"+node)
			r := h.wait(t)
			if r.code != ExitLost || !strings.Contains(r.stderr, "was lost") || !strings.Contains(r.stderr, "killed it") {
				t.Errorf("%s whose node was deleted: %v\nwant exit %d and a message saying it was lost", verb, r, ExitLost)
			}
			if alive(h.pid) {
				t.Errorf("%s: the command (pid %d) still runs after its hold was lost", verb, h.pid)
			}
		}
	})
}

// proxy forwards connections to a server until cut, after which it
// accepts connections only to close them: to its clients, the server is
// unreachable while still running.
type proxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		l.Close()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) Addr() string { return p.l.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		p.mu.Lock()
		if err != nil || p.cut {
			p.mu.Unlock()
			c.Close()
			if s != nil {
				s.Close()
			}
			continue
		}
		p.conns = append(p.conns, c, s)
		p.wg.Add(2)
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(c, s)
		go pipe(s, c)
	}
}

// Cut closes every connection and refuses the next ones.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestHoldSessionLost cuts the holder off from the server while its
// command runs: once its session may have expired, the command is killed
// and ctl exits 75 — before the server can give the lock to anyone else.
func TestHoldSessionLost(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		p := startProxy(t, tg.Addr)
		via := p.Addr() + zk[len(tg.Addr):]
		const script = `echo $$; while :; do sleep 0.05; done`
		b := startCtl(t, Env{}, via, "--session-timeout", "1s", "lock", "/l", "--", "sh", "-c", script)
		pid, err := strconv.Atoi(b.waitLines(t, 1)[0])
		if err != nil {
			t.Fatalf("holder printed %q, not its pid", b.out.String())
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		p.Cut()
		r := b.wait(t)
		if r.code != ExitLost || !strings.Contains(r.stderr, "lock /l was lost") {
			t.Errorf("holder cut off from the server: %v\nwant exit %d", r, ExitLost)
		}
		if alive(pid) {
			t.Errorf("the command (pid %d) still runs after the session was lost", pid)
		}
		// The server expires the session on its own clock and frees the lock.
		if r := runCtl(t, zk, "lock", "--wait", "10s", "/l", "--", "true"); r.code != 0 {
			t.Errorf("lock after the holder's session expired: %v", r)
		}
	})
}
