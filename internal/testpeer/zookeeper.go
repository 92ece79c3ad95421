package testpeer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/coordhealth"
)

// ErrNotRunning reports an operation that needs a running ZooKeeper.
var ErrNotRunning = errors.New("testpeer: zookeeper is not running")

// ZooKeeper's main classes: a standalone server, and a member of a quorum
// (an Ensemble). zkServer.sh is not used: it daemonises, so its PID is not
// the JVM's, and it reads environment from /etc.
const (
	zkMainClass  = "org.apache.zookeeper.server.ZooKeeperServerMain"
	zkQuorumMain = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
)

// Defaults of ZKOptions.
const (
	DefaultTickTime     = 2 * time.Second
	DefaultStartTimeout = 30 * time.Second // a cold JVM on 2 busy cores takes 2-10 s
	stopGrace           = 10 * time.Second // SIGTERM to SIGKILL
	readyPoll           = 100 * time.Millisecond
	logTailLines        = 40
)

// ZKOptions configures a ZooKeeper started by StartZooKeeperWith or
// LaunchZooKeeper. The zero value is a stock standalone server.
//
// TTL nodes (CreateTTL, create modes 5 and 6) need extended types enabled,
// which ZooKeeper 3.8 reads from the JVM system property
// zookeeper.extendedTypesEnabled; ExtraConfig{"extendedTypesEnabled":
// "true"} works too, because ZooKeeper turns every zoo.cfg key it does not
// know into a "zookeeper."-prefixed system property. Containers need
// nothing; the same ContainerManager that deletes empty containers also
// expires TTL nodes, every znode.container.checkIntervalMs (a system
// property, default one minute).
type ZKOptions struct {
	// TickTime is zoo.cfg's tickTime; session timeouts are bounded to
	// [2, 20] ticks. Zero means DefaultTickTime.
	TickTime time.Duration
	// ExtraConfig adds zoo.cfg lines, overriding the defaults.
	ExtraConfig map[string]string
	// SystemProperties are passed to the JVM as -Dkey=value.
	SystemProperties map[string]string
	// StartTimeout bounds the wait for "imok". Zero means DefaultStartTimeout.
	StartTimeout time.Duration
}

// ZooKeeper is one Apache ZooKeeper standalone server running as a child
// process. Its methods are safe for concurrent use.
type ZooKeeper struct {
	dir     string // holds zoo.cfg, data/ and zookeeper.log
	port    int
	opts    ZKOptions
	logPath string
	myid    int // an Ensemble member's id; 0 for a standalone server

	mu   sync.Mutex
	proc *process // nil when stopped
}

// process is one JVM run; done is closed once it has been reaped.
type process struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // cmd.Wait's result, valid after done
}

// StartZooKeeper starts a stock ZooKeeper for the test and stops it when
// the test ends. A missing java or ZooKeeper package skips the test (or
// fails it under SHEPHERD_IT=1).
func StartZooKeeper(t testing.TB) *ZooKeeper {
	t.Helper()
	return StartZooKeeperWith(t, ZKOptions{})
}

// StartZooKeeperWith is StartZooKeeper with options. Its data directory
// and log live in a test temp dir; on failure the log's tail is printed.
func StartZooKeeperWith(t testing.TB, opts ZKOptions) *ZooKeeper {
	t.Helper()
	why, ok := ZooKeeperAvailable()
	Require(t, "Apache ZooKeeper", ok, why)
	z, err := LaunchZooKeeper(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("zookeeper %s log tail (%s):\n%s", z.Addr(), z.logPath, z.LogTail(logTailLines))
		}
		if err := z.Stop(); err != nil {
			t.Errorf("stop zookeeper: %v", err)
		}
	})
	return z
}

// LaunchZooKeeper starts ZooKeeper with its configuration, data and log in
// dir, which must exist, and waits until it answers ruok. It is for
// callers without a testing.TB, such as TestMain; the caller must Stop it.
// On a start failure the error carries the log's tail.
func LaunchZooKeeper(dir string, opts ZKOptions) (*ZooKeeper, error) {
	if opts.TickTime == 0 {
		opts.TickTime = DefaultTickTime
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	// freePort's port can be taken by another process before the JVM binds
	// it (tests of several packages run at once): then try another.
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("testpeer: find a port for zookeeper: %w", err)
		}
		z, err := prepareZooKeeper(dir, port, 0, opts)
		if err != nil {
			return nil, err
		}
		err = z.start()
		if err == nil {
			return z, nil
		}
		if attempt == bindAttempts || !strings.Contains(z.LogTail(logTailLines), "Address already in use") {
			return nil, err
		}
	}
}

// bindAttempts is how many ports LaunchZooKeeper tries.
const bindAttempts = 3

// prepareZooKeeper writes the configuration (and, for an Ensemble member,
// the myid file) of a server that start then launches. opts must have its
// defaults filled in.
func prepareZooKeeper(dir string, port, myid int, opts ZKOptions) (*ZooKeeper, error) {
	z := &ZooKeeper{dir: dir, port: port, opts: opts, myid: myid, logPath: filepath.Join(dir, "zookeeper.log")}
	if err := os.MkdirAll(z.DataDir(), 0o755); err != nil {
		return nil, fmt.Errorf("testpeer: zookeeper data dir: %w", err)
	}
	if myid != 0 {
		if err := os.WriteFile(filepath.Join(z.DataDir(), "myid"), []byte(strconv.Itoa(myid)+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("testpeer: write myid: %w", err)
		}
	}
	if err := os.WriteFile(z.configPath(), z.config(), 0o644); err != nil {
		return nil, fmt.Errorf("testpeer: write zoo.cfg: %w", err)
	}
	return z, nil
}

// Addr is the client address, host:port.
func (z *ZooKeeper) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(z.port))
}

// DataDir is ZooKeeper's dataDir (snapshots and transaction log).
func (z *ZooKeeper) DataDir() string { return filepath.Join(z.dir, "data") }

// LogPath is the file receiving the JVM's stdout and stderr, across restarts.
func (z *ZooKeeper) LogPath() string { return z.logPath }

// PID is the JVM's process id, or 0 when it is not running.
func (z *ZooKeeper) PID() int {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.proc == nil {
		return 0
	}
	return z.proc.cmd.Process.Pid
}

// Kill stops ZooKeeper with SIGKILL, as a crash would, and waits for the
// process to be reaped. Killing a stopped server does nothing.
func (z *ZooKeeper) Kill() {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.proc == nil {
		return
	}
	_ = z.proc.cmd.Process.Signal(syscall.SIGKILL)
	<-z.proc.done
	z.proc.close()
	z.proc = nil
}

// Stop stops ZooKeeper with SIGTERM, then SIGKILL if it has not exited
// within a grace period. Stopping a stopped server does nothing.
func (z *ZooKeeper) Stop() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.stopLocked()
}

func (z *ZooKeeper) stopLocked() error {
	p := z.proc
	if p == nil {
		return nil
	}
	z.proc = nil
	defer p.close()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("testpeer: SIGTERM zookeeper pid %d: %w", p.cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopGrace):
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	return nil
}

// Restart stops ZooKeeper (if it runs) and starts it again on the same
// port with the same data directory, waiting until it answers ruok.
func (z *ZooKeeper) Restart(t testing.TB) {
	t.Helper()
	z.mu.Lock()
	err := z.stopLocked()
	z.mu.Unlock()
	if err == nil {
		err = z.start()
	}
	if err != nil {
		t.Fatalf("restart zookeeper: %v", err)
	}
}

// LogTail returns the last n lines of the server's log.
func (z *ZooKeeper) LogTail(n int) string {
	b, err := os.ReadFile(z.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (z *ZooKeeper) configPath() string { return filepath.Join(z.dir, "zoo.cfg") }

// config renders zoo.cfg. forceSync stays on so that durability tests see
// the fsync behaviour of production.
func (z *ZooKeeper) config() []byte {
	cfg := map[string]string{
		"tickTime":               strconv.FormatInt(z.opts.TickTime.Milliseconds(), 10),
		"dataDir":                z.DataDir(),
		"clientPort":             strconv.Itoa(z.port),
		"clientPortAddress":      "127.0.0.1",
		"forceSync":              "yes",
		"admin.enableServer":     "false",
		"4lw.commands.whitelist": "*",
	}
	maps.Copy(cfg, z.opts.ExtraConfig)
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		fmt.Fprintf(&b, "%s=%s\n", k, cfg[k])
	}
	return b.Bytes()
}

// javaArgs are the JVM's arguments. A small heap, the serial collector and
// the C1 compiler alone make the JVM start and idle lighter on the 2-core
// machines tests run on; ZooKeeper's behaviour does not depend on them.
func (z *ZooKeeper) javaArgs() []string {
	args := []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true"}
	for _, k := range slices.Sorted(maps.Keys(z.opts.SystemProperties)) {
		args = append(args, "-D"+k+"="+z.opts.SystemProperties[k])
	}
	main := zkMainClass
	if z.myid != 0 {
		main = zkQuorumMain
	}
	return append(args, "-cp", ZooKeeperJar+":"+SLF4JSimpleJar, main, z.configPath())
}

// start launches the JVM and waits until it serves. It takes mu only to
// publish the process, so Kill can interrupt a start that hangs.
func (z *ZooKeeper) start() error {
	log, err := os.OpenFile(z.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testpeer: zookeeper log: %w", err)
	}
	cmd := exec.Command("java", z.javaArgs()...)
	cmd.Dir = z.dir
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("testpeer: start zookeeper: %w", err)
	}
	p := &process{cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	z.mu.Lock()
	z.proc = p
	z.mu.Unlock()

	if err := z.waitReady(p); err != nil {
		z.Kill()
		return fmt.Errorf("%w\nzookeeper log tail (%s):\n%s", err, z.logPath, z.LogTail(logTailLines))
	}
	return nil
}

// ready reports whether the server accepts sessions. ruok alone is not
// enough: ZooKeeper answers imok as soon as its port listens, while the
// database is still loading and session handshakes are refused; srvr
// reports "not currently serving requests" until it is done.
func (z *ZooKeeper) ready() error {
	ans, err := coordhealth.Ask(context.Background(), z.Addr(), "ruok")
	if err != nil {
		return err
	}
	if ans != "imok" {
		return fmt.Errorf("ruok answered %q", ans)
	}
	ans, err = coordhealth.Ask(context.Background(), z.Addr(), "srvr")
	if err != nil {
		return err
	}
	if !strings.Contains(ans, "Mode: ") {
		return fmt.Errorf("srvr answered %q", ans)
	}
	return nil
}

// waitReady polls ready until it succeeds, the process exits or the start
// timeout passes.
func (z *ZooKeeper) waitReady(p *process) error {
	deadline := time.Now().Add(z.opts.StartTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("testpeer: zookeeper pid %d exited during start: %v", p.cmd.Process.Pid, p.err)
		default:
		}
		if last = z.ready(); last == nil {
			return nil
		}
		select {
		case <-p.done:
		case <-time.After(readyPoll):
		}
	}
	return fmt.Errorf("testpeer: zookeeper on %s not ready after %v: %v", z.Addr(), z.opts.StartTimeout, last)
}

func (p *process) close() { p.log.Close() }
