package testpeer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NATSServer is the NATS server binary of Debian's package nats-server.
const NATSServer = "/usr/sbin/nats-server"

const natsHint = "apt-get install nats-server"

// natsStartTimeout bounds the wait for a server to serve JetStream.
const natsStartTimeout = 30 * time.Second

// NATSAvailable reports whether a NATS server can be started here; when
// it cannot, why says what is missing and how to install it.
func NATSAvailable() (why string, ok bool) {
	if _, err := os.Stat(NATSServer); err != nil {
		return fmt.Sprintf("missing %s: %v (%s)", NATSServer, err, natsHint), false
	}
	return "", true
}

// NATS is one nats-server with JetStream, running as a child process on
// loopback ports, its store and log in a directory of its own. Restart
// keeps both ports and the store. Its methods are safe for concurrent
// use.
type NATS struct {
	dir     string
	port    int // clients
	monPort int // monitoring: /healthz
	logPath string

	mu   sync.Mutex
	proc *process
}

// StartNATS starts a private nats-server with JetStream for the test and
// stops it when the test ends. A missing server skips the test, or fails
// it under SHEPHERD_IT=1. On failure the log's tail is printed.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	why, ok := NATSAvailable()
	Require(t, "NATS server", ok, why)
	n, err := LaunchNATS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("nats-server %s log tail (%s):\n%s", n.URL(), n.logPath, n.LogTail(logTailLines))
		}
		n.Kill()
	})
	return n
}

// LaunchNATS starts nats-server with its store in dir, which must exist,
// and waits until JetStream serves. The caller must Kill it.
func LaunchNATS(dir string) (*NATS, error) {
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("testpeer: find a port for nats-server: %w", err)
		}
		mon, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("testpeer: find a port for nats-server: %w", err)
		}
		n := &NATS{dir: dir, port: port, monPort: mon, logPath: filepath.Join(dir, "nats-server.log")}
		err = n.start()
		if err == nil {
			return n, nil
		}
		if attempt == bindAttempts || !strings.Contains(n.LogTail(logTailLines), "address already in use") {
			return nil, err
		}
	}
}

// URL is the client URL, nats://127.0.0.1:port.
func (n *NATS) URL() string { return "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

// StoreDir is JetStream's store directory.
func (n *NATS) StoreDir() string { return filepath.Join(n.dir, "jetstream") }

// PID is the server's process id, or 0 when it is not running.
func (n *NATS) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return 0
	}
	return n.proc.cmd.Process.Pid
}

// Kill stops the server with SIGKILL, as a crash would, and waits for it.
// Killing a stopped server does nothing.
func (n *NATS) Kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return
	}
	_ = n.proc.cmd.Process.Signal(syscall.SIGKILL)
	<-n.proc.done
	n.proc.close()
	n.proc = nil
}

// Stop stops the server with SIGTERM, which lets JetStream flush its
// store, and waits for it (SIGKILL after a grace period).
func (n *NATS) Stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc
	if p == nil {
		return
	}
	n.proc = nil
	defer p.close()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(stopGrace):
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Start starts a stopped server again on the same ports with the same
// store, and waits until JetStream serves.
func (n *NATS) Start(t testing.TB) {
	t.Helper()
	if err := n.start(); err != nil {
		t.Fatalf("restart nats-server: %v", err)
	}
}

// LogTail returns the last lines of the server's log.
func (n *NATS) LogTail(lines int) string {
	b, err := os.ReadFile(n.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

func (n *NATS) start() error {
	log, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testpeer: nats-server log: %w", err)
	}
	cmd := exec.Command(NATSServer, "-a", "127.0.0.1", "-p", strconv.Itoa(n.port),
		"-m", strconv.Itoa(n.monPort), "-js", "-sd", n.StoreDir(), "-n", "shepherd-test")
	cmd.Dir = n.dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("testpeer: start nats-server: %w", err)
	}
	p := &process{cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
	if err := n.waitReady(p); err != nil {
		n.Kill()
		return fmt.Errorf("%w\nnats-server log tail (%s):\n%s", err, n.logPath, n.LogTail(logTailLines))
	}
	return nil
}

// waitReady polls /healthz (which checks JetStream) until it answers ok,
// the process exits or natsStartTimeout passes.
func (n *NATS) waitReady(p *process) error {
	url := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(n.monPort)) + "/healthz"
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(natsStartTimeout)
	last := errors.New("no answer")
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("testpeer: nats-server pid %d exited during start: %v", p.cmd.Process.Pid, p.err)
		default:
		}
		if resp, err := client.Get(url); err != nil {
			last = err
		} else {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("/healthz: %s %s", resp.Status, body)
		}
		select {
		case <-p.done:
		case <-time.After(readyPoll):
		}
	}
	return fmt.Errorf("testpeer: nats-server on %s not ready after %v: %v", n.URL(), natsStartTimeout, last)
}
