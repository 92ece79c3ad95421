package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	// stopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	stopTimeout = 10 * time.Second
	// killTimeout is how long to wait for a SIGKILLed process to be reaped.
	killTimeout = 10 * time.Second
	// startAttempts bounds retries of a start that lost its port to
	// another process between choosing it and binding it.
	startAttempts = 3
	// logTailLines is how much of a failed server's log an error quotes.
	logTailLines = 15
)

// ErrServerExited is returned when a server process exits while it
// should be serving, or before it became ready.
var ErrServerExited = errors.New("bench: server process exited")

// serverProcess runs one server binary as a child process, with its
// output in a log file in its directory. A Target owns one and is its
// only user; its methods are not safe for concurrent use.
type serverProcess struct {
	name    string
	dir     string
	logPath string
	log     *slog.Logger
	// command prepares a start on addr (e.g. writes a config file) and
	// returns the command line.
	command func(addr string) ([]string, error)
	// cpus, if set, is the CPU set the server is confined to.
	cpus []int

	addr     string
	logStart int64 // size of the log when the current process started
	cmd      *exec.Cmd
	exited   chan struct{} // closed once cmd.Wait has returned
	err      error         // cmd.Wait's result, valid after exited is closed
}

func newServerProcess(name, dir string, command func(addr string) ([]string, error)) *serverProcess {
	return &serverProcess{
		name:    name,
		dir:     dir,
		logPath: filepath.Join(dir, name+".log"),
		log:     slog.Default().With("target", name),
		command: command,
	}
}

// startFresh picks a free loopback port and starts the server, retrying
// with another port if the chosen one was taken in the meantime.
func (p *serverProcess) startFresh(ctx context.Context) error {
	var err error
	for range startAttempts {
		if p.addr, err = freeLoopbackAddr(); err != nil {
			return err
		}
		if err = p.start(ctx); err == nil || !p.lostPort() {
			return err
		}
		p.log.Info("bench: port taken, retrying", "addr", p.addr)
	}
	return err
}

// start launches the server on p.addr and waits until it serves.
func (p *serverProcess) start(ctx context.Context) error {
	if p.cmd != nil {
		return fmt.Errorf("bench: %s: already running as pid %d", p.name, p.cmd.Process.Pid)
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("bench: %s: open log: %w", p.name, err)
	}
	// The child has its own copy of the descriptor; ours is not needed
	// once it has started.
	defer logFile.Close()
	if fi, err := logFile.Stat(); err == nil {
		p.logStart = fi.Size()
	}
	argv, err := p.command(p.addr)
	if err != nil {
		return fmt.Errorf("bench: %s: %w", p.name, err)
	}
	// Not CommandContext: the server's lifetime is Stop's to end, not
	// that of whichever context happened to start it.
	cmd := pinnedCommand(p.cpus, argv)
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("bench: %s: start %s: %w", p.name, argv[0], err)
	}
	p.cmd, p.exited, p.err = cmd, make(chan struct{}), nil
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	p.log.Info("bench: server starting", "pid", cmd.Process.Pid, "addr", p.addr, "log", p.logPath)
	err = pollReadable(ctx, p.addr, "/", startTimeout, p.log, p.checkAlive)
	if err != nil {
		_ = p.kill()
		return fmt.Errorf("bench: %s: not ready: %w\n%s", p.name, err, p.logTail())
	}
	return nil
}

// pinnedCommand returns the command that runs argv the way every server
// and generator is started: in a session and process group of its own
// (setsid, as a service manager or a shell script starts a daemon; with
// Linux autogroup that also gives it its own CPU share, whatever the
// harness's own session does), and, if cpus is set, confined to those
// CPUs by taskset, which every thread the process creates inherits.
func pinnedCommand(cpus []int, argv []string) *exec.Cmd {
	if len(cpus) > 0 {
		argv = append([]string{"taskset", "-c", FormatCPUList(cpus)}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// checkAlive returns ErrServerExited once the process has exited.
func (p *serverProcess) checkAlive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%w (%v)", ErrServerExited, p.err)
	default:
		return nil
	}
}

// pid returns the running server's pid, or 0.
func (p *serverProcess) pid() int {
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// kill sends SIGKILL and waits for the process to be reaped.
func (p *serverProcess) kill() error {
	return p.signalAndWait(syscall.SIGKILL, killTimeout)
}

// stop sends SIGTERM, then SIGKILL if the server has not exited within
// stopTimeout. An exit caused by either signal is not an error.
func (p *serverProcess) stop() error {
	if err := p.signalAndWait(syscall.SIGTERM, stopTimeout); err == nil {
		return nil
	}
	return p.kill()
}

func (p *serverProcess) signalAndWait(sig syscall.Signal, timeout time.Duration) error {
	if p.cmd == nil {
		return nil
	}
	// Signalling a process that has already exited fails harmlessly;
	// what matters is that it has exited below.
	_ = p.cmd.Process.Signal(sig)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.exited:
		p.log.Info("bench: server exited", "pid", p.cmd.Process.Pid, "sent", sig, "status", p.err)
		p.cmd = nil
		return nil
	case <-timer.C:
		return fmt.Errorf("bench: %s: pid %d still running %v after %v", p.name, p.cmd.Process.Pid, timeout, sig)
	}
}

// lostPort reports whether the last start failed because the port was in
// use: Java says "BindException: Address already in use", Go "bind:
// address already in use".
func (p *serverProcess) lostPort() bool {
	return strings.Contains(strings.ToLower(p.logTail()), "address already in use")
}

// logTail returns the last lines the current (or last) process wrote to
// its log, for error messages.
func (p *serverProcess) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if int64(len(b)) >= p.logStart {
		b = b[p.logStart:]
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return fmt.Sprintf("last lines of %s:\n%s", p.logPath, bytes.Join(lines, []byte("\n")))
}

// freeLoopbackAddr returns a loopback address whose port was free a
// moment ago.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("bench: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// resetDir empties dir/sub and returns its path, so a fresh start cannot
// see a previous run's data.
func resetDir(dir, sub string) (string, error) {
	path := filepath.Join(dir, sub)
	if err := os.RemoveAll(path); err != nil {
		return "", fmt.Errorf("bench: clear %s: %w", path, err)
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", fmt.Errorf("bench: create %s: %w", path, err)
	}
	return path, nil
}
