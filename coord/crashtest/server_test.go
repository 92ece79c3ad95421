package crashtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// Bounds of the server harness.
const (
	// startTimeout covers a race-enabled binary recovering a data directory
	// on two busy cores: a liveness bound (30 s was seen to run out with the
	// machine's load average near 30).
	startTimeout = 90 * time.Second
	// stopTimeout bounds a graceful stop: flush, fsync, close.
	stopTimeout = 15 * time.Second
	// pollInterval is how often readiness and exits are polled.
	pollInterval = 20 * time.Millisecond
	logTailLines = 60
)

// serverOptions configures a shepherd under test.
type serverOptions struct {
	// snapCount is --snap-count; 0 keeps the server's default.
	snapCount int
	// autopurge is --autopurge-interval; 0 never purges.
	autopurge time.Duration
	// tick and minSession are --tick-time and --min-session-timeout; 0
	// keeps the defaults. The maximum session timeout stays long enough
	// for sessionTimeout.
	tick, minSession time.Duration
	// separateLog puts the transaction log in its own --data-log-dir.
	separateLog bool
}

// shepherd is one `shepherd coord` under test. Its data directory and port
// outlive the processes run on them, so a test can crash the server and
// start it again where it was, as a supervisor would. Kill and Stop may be
// called from any goroutine; Restart only from the test's.
type shepherd struct {
	t         testing.TB
	dataDir   string // snapshots, and the transaction log unless txnLogDir differs
	txnLogDir string // the transaction log
	outputDir string // the processes' output, one file per run
	addr      string
	opts      serverOptions

	mu   sync.Mutex
	proc *process // nil while no process runs
	runs int      // processes started so far; numbers their log files
}

// process is one run of the binary, its stdout and stderr in one log file.
type process struct {
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{} // closed once the process is reaped
	err     error         // cmd.Wait's result, valid after done
}

// startShepherd starts a server for the test on a fresh data directory and
// a free loopback port, and stops it when the test ends.
func startShepherd(t *testing.T, opts serverOptions) *shepherd {
	t.Helper()
	root := t.TempDir()
	s := &shepherd{
		t:         t,
		dataDir:   filepath.Join(root, "data"),
		txnLogDir: filepath.Join(root, "data"),
		outputDir: t.ArtifactDir(),
		addr:      net.JoinHostPort("127.0.0.1", strconv.Itoa(testpeer.FreePort(t))),
		opts:      opts,
	}
	if opts.separateLog {
		s.txnLogDir = filepath.Join(root, "txnlog")
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("shepherd %s: logs in %s (kept with go test -artifacts); last run's tail:\n%s",
				s.addr, s.outputDir, s.logTail(logTailLines))
		}
		if err := s.Stop(); err != nil {
			t.Errorf("stop shepherd at cleanup: %v", err)
		}
	})
	s.Restart(t)
	return s
}

// Addr is the client address, host:port.
func (s *shepherd) Addr() string { return s.addr }

// Restart stops the server gracefully if it runs, then starts it again on
// the same port and data directory and waits until it answers ruok.
func (s *shepherd) Restart(t testing.TB) {
	t.Helper()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	p, err := s.launch()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.waitReady(p); err != nil {
		s.Kill()
		t.Fatalf("%v\nlog tail (%s):\n%s", err, p.logPath, s.logTail(logTailLines))
	}
}

// Kill crashes the server with SIGKILL, sent to its PID, and waits until
// the process is reaped. A server that already exited on its own is a test
// failure: nothing should have stopped it. Killing a stopped server does
// nothing.
func (s *shepherd) Kill() {
	p := s.detach()
	if p == nil {
		return
	}
	select {
	case <-p.done:
		s.t.Errorf("shepherd pid %d exited on its own before it was killed: %v; log %s", p.cmd.Process.Pid, p.err, p.logPath)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.t.Errorf("SIGKILL shepherd pid %d: %v", p.cmd.Process.Pid, err)
	}
	<-p.done
	s.finish(p)
}

// Stop stops the server with SIGTERM and waits for it to exit; a server
// that takes longer than stopTimeout is killed and reported, and so is one
// that exits with a non-zero status. Stopping a stopped server does
// nothing.
func (s *shepherd) Stop() error {
	p := s.detach()
	if p == nil {
		return nil
	}
	defer s.finish(p)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM shepherd pid %d: %w", p.cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("shepherd pid %d did not stop within %v of SIGTERM; killed it (log %s)", p.cmd.Process.Pid, stopTimeout, p.logPath)
	}
	if p.err != nil {
		return fmt.Errorf("shepherd pid %d exited with %v after SIGTERM, want status 0 (log %s)", p.cmd.Process.Pid, p.err, p.logPath)
	}
	return nil
}

// startExpectingExit runs the server on its data directory and waits for it
// to exit by itself, as it must when it refuses to start. It returns the
// exit code and the run's log. A server that answers ruok instead, or that
// neither exits nor serves within startTimeout, is killed and reported as
// an error.
func (s *shepherd) startExpectingExit() (code int, log string, err error) {
	if err := s.Stop(); err != nil {
		return 0, "", err
	}
	p, err := s.launch()
	if err != nil {
		return 0, "", err
	}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-p.done:
			s.detach()
			s.finish(p)
			b, err := os.ReadFile(p.logPath)
			if err != nil {
				return 0, "", fmt.Errorf("read the refused run's log: %w", err)
			}
			return p.cmd.ProcessState.ExitCode(), string(b), nil
		case <-time.After(pollInterval):
		}
		if ans, err := coordhealth.Ask(context.Background(), s.addr, "ruok"); err == nil && ans == "imok" {
			s.Kill()
			return 0, "", fmt.Errorf("shepherd started and answered ruok; want it to refuse to start (log %s)", p.logPath)
		}
		if time.Now().After(deadline) {
			s.Kill()
			return 0, "", fmt.Errorf("shepherd neither exited nor served within %v (log %s)", startTimeout, p.logPath)
		}
	}
}

// launch starts one process of the binary and publishes it as the running
// one. The caller waits for it.
func (s *shepherd) launch() (*process, error) {
	s.mu.Lock()
	s.runs++
	n := s.runs
	s.mu.Unlock()
	logPath := filepath.Join(s.outputDir, fmt.Sprintf("shepherd-run%d.log", n))
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create the server log: %w", err)
	}
	args := []string{"coord", "--listen", s.addr, "--data-dir", s.dataDir, "--4lw", "*"}
	if s.txnLogDir != s.dataDir {
		args = append(args, "--data-log-dir", s.txnLogDir)
	}
	if s.opts.snapCount > 0 {
		args = append(args, "--snap-count", strconv.Itoa(s.opts.snapCount))
	}
	if s.opts.autopurge > 0 {
		args = append(args, "--autopurge-interval", s.opts.autopurge.String())
	}
	if s.opts.tick > 0 {
		args = append(args, "--tick-time", s.opts.tick.String(), "--max-session-timeout", (2 * sessionTimeout).String())
	}
	if s.opts.minSession > 0 {
		args = append(args, "--min-session-timeout", s.opts.minSession.String())
	}
	cmd := exec.Command(shepherdBin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s %s: %w", shepherdBin, strings.Join(args, " "), err)
	}
	p := &process{cmd: cmd, logPath: logPath, logFile: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return p, nil
}

// waitReady polls ruok until the server answers imok, the process exits, or
// startTimeout passes. The server listens only after recovery, so imok
// means the recovered tree is served.
func (s *shepherd) waitReady(p *process) error {
	deadline := time.Now().Add(startTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("shepherd pid %d exited during start: %v", p.cmd.Process.Pid, p.err)
		default:
		}
		ans, err := coordhealth.Ask(context.Background(), s.addr, "ruok")
		if err == nil && ans == "imok" {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("ruok answered %q", ans)
		}
		select {
		case <-p.done:
		case <-time.After(pollInterval):
		}
	}
	return fmt.Errorf("shepherd on %s not ready within %v: %v", s.addr, startTimeout, last)
}

// detach takes the running process out of s, so that exactly one caller
// stops it.
func (s *shepherd) detach() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	s.proc = nil
	return p
}

// finish closes a reaped process's log and fails the test if the race
// detector reported anything in it: a killed process can no longer exit
// with the detector's status, but its report is already written.
func (s *shepherd) finish(p *process) {
	p.logFile.Close()
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		s.t.Errorf("read shepherd log %s: %v", p.logPath, err)
		return
	}
	if i := strings.Index(string(b), "WARNING: DATA RACE"); i >= 0 {
		s.t.Errorf("shepherd reported a data race (log %s):\n%s", p.logPath, excerpt(string(b[i:]), 80))
	}
}

// lastLog returns the log of the latest run.
func (s *shepherd) lastLog() string {
	s.mu.Lock()
	n := s.runs
	s.mu.Unlock()
	b, err := os.ReadFile(filepath.Join(s.outputDir, fmt.Sprintf("shepherd-run%d.log", n)))
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// logTail returns the last n lines of the latest run's log.
func (s *shepherd) logTail(n int) string {
	lines := strings.Split(strings.TrimRight(s.lastLog(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// excerpt returns the first n lines of text.
func excerpt(text string, n int) string {
	lines := strings.SplitN(text, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
