package testpeer

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Paths of the MariaDB server binaries (Debian package mariadb-server).
const (
	MariaDBServer    = "/usr/sbin/mariadbd"
	MariaDBInstallDB = "/usr/bin/mariadb-install-db"
	mariaDBHint      = "apt-get install mariadb-server"
)

// DefaultMariaDBStartTimeout bounds the wait for a new server to accept
// connections. A fresh server on an idle machine is ready in well under a
// second; crash recovery after Kill, on 2 busy cores, takes longer.
const DefaultMariaDBStartTimeout = 60 * time.Second

// MariaDBOptions configures a server started by StartMariaDB or
// LaunchMariaDB. The zero value is a binlogging server in ROW format with
// full row images, which is what a replication source needs.
type MariaDBOptions struct {
	// ServerID is --server-id. Zero picks one unique within this process.
	ServerID uint32
	// BinlogFormat is --binlog-format: ROW (the default), STATEMENT or MIXED.
	BinlogFormat string
	// GTIDStrictMode turns on --gtid-strict-mode.
	GTIDStrictMode bool
	// ExtraArgs are appended to mariadbd's command line, e.g.
	// "--binlog-row-metadata=FULL" or "--default-time-zone=+05:30".
	ExtraArgs []string
	// StartTimeout bounds each wait for the server to accept connections.
	// Zero means DefaultMariaDBStartTimeout.
	StartTimeout time.Duration
}

// MariaDB is one mariadbd running as a child process on a loopback port,
// with its data directory, binary logs and error log in a directory of its
// own. The root account has no password and may connect from 127.0.0.1.
// Its methods are safe for concurrent use.
type MariaDB struct {
	dir      string // holds data/ and mariadb.err
	sockDir  string // short path for the socket and pid file (sun_path is 108 bytes)
	port     int
	serverID uint32
	opts     MariaDBOptions
	logPath  string

	mu   sync.Mutex
	proc *process // nil when stopped
	db   *sql.DB  // root pool for Exec and Query, opened lazily
}

// serverIDs hands out server ids unique within the test binary; 1000 keeps
// them clear of the small ids tests choose by hand.
var serverIDs atomic.Uint32

func init() { serverIDs.Store(1000) }

// MariaDBAvailable reports whether a MariaDB server can be started here;
// when it cannot, why says what is missing and how to install it.
func MariaDBAvailable() (why string, ok bool) {
	for _, bin := range []string{MariaDBServer, MariaDBInstallDB} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Sprintf("missing %s: %v (%s)", bin, err, mariaDBHint), false
		}
	}
	return "", true
}

// StartMariaDB starts a private mariadbd for the test and stops it when the
// test ends. A missing server skips the test, or fails it under
// SHEPHERD_IT=1. On failure the error log's tail is printed.
func StartMariaDB(t testing.TB, o MariaDBOptions) *MariaDB {
	t.Helper()
	why, ok := MariaDBAvailable()
	Require(t, "MariaDB", ok, why)
	m, err := LaunchMariaDB(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mariadb %s error log tail (%s):\n%s", m.Addr(), m.logPath, m.LogTail(logTailLines))
		}
		if err := m.Close(); err != nil {
			t.Errorf("stop mariadb: %v", err)
		}
	})
	return m
}

// LaunchMariaDB initialises a data directory in dir, which must exist,
// starts mariadbd on it and waits until it accepts connections. It is for
// callers without a testing.TB, such as TestMain; the caller must Close it.
func LaunchMariaDB(dir string, o MariaDBOptions) (*MariaDB, error) {
	if o.BinlogFormat == "" {
		o.BinlogFormat = "ROW"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultMariaDBStartTimeout
	}
	id := o.ServerID
	if id == 0 {
		id = serverIDs.Add(1)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("testpeer: find a port for mariadb: %w", err)
	}
	sockDir, err := os.MkdirTemp("", "mdb")
	if err != nil {
		return nil, fmt.Errorf("testpeer: mariadb socket dir: %w", err)
	}
	m := &MariaDB{dir: dir, sockDir: sockDir, port: port, serverID: id, opts: o,
		logPath: filepath.Join(dir, "mariadb.err")}
	if err := os.MkdirAll(m.tmpDir(), 0o700); err != nil {
		os.RemoveAll(sockDir)
		return nil, fmt.Errorf("testpeer: mariadb tmpdir: %w", err)
	}
	if err := m.installDB(); err != nil {
		os.RemoveAll(sockDir)
		return nil, err
	}
	if err := m.start(); err != nil {
		os.RemoveAll(sockDir)
		return nil, err
	}
	return m, nil
}

// installDB creates the system tables. The template is built once per test
// binary and copied, which is several times faster than running
// mariadb-install-db for every server.
func (m *MariaDB) installDB() error {
	tmpl, err := mariaDBTemplate()
	if err != nil {
		return err
	}
	if err := copyTree(tmpl, m.DataDir()); err != nil {
		return fmt.Errorf("testpeer: copy mariadb template data dir: %w", err)
	}
	return nil
}

// mariaDBTemplate returns a data directory with the system tables, built
// by mariadb-install-db once per machine and per server build, then shared
// by every test binary (it is only ever copied, never started). It lives in
// the system temp dir under a name that changes with the binary and the
// install arguments, and is published by an atomic rename so that
// concurrent test binaries never see half of one.
var mariaDBTemplate = sync.OnceValues(func() (string, error) {
	args := append([]string{"--no-defaults", "--auth-root-authentication-method=normal", "--skip-test-db"}, sizeArgs()...)
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	st, err := os.Stat(MariaDBServer)
	if err != nil {
		return "", fmt.Errorf("testpeer: %w", err)
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d %d %s", st.Size(), st.ModTime().UnixNano(), strings.Join(args, " "))
	final := filepath.Join(os.TempDir(), fmt.Sprintf("shepherd-mariadb-template-%016x", h.Sum64()))
	if _, err := os.Stat(filepath.Join(final, "mysql")); err == nil {
		return final, nil
	}
	work, err := os.MkdirTemp("", "shepherd-mariadb-install-")
	if err != nil {
		return "", fmt.Errorf("testpeer: mariadb template dir: %w", err)
	}
	defer os.RemoveAll(work)
	data := filepath.Join(work, "data")
	args = append(args, "--datadir="+data)
	if out, err := exec.Command(MariaDBInstallDB, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("testpeer: %s %s: %w\n%s", MariaDBInstallDB, strings.Join(args, " "), err, out)
	}
	if err := os.Rename(data, final); err != nil {
		// Another test binary published the same template first.
		if _, statErr := os.Stat(filepath.Join(final, "mysql")); statErr == nil {
			return final, nil
		}
		return "", fmt.Errorf("testpeer: publish mariadb template: %w", err)
	}
	return final, nil
})

// sizeArgs keep a server small, so that a test can run several on a
// laptop, without changing anything replication depends on.
func sizeArgs() []string {
	return []string{
		"--innodb-buffer-pool-size=32M",
		"--innodb-log-file-size=16M",
		"--innodb-log-buffer-size=4M",
		"--key-buffer-size=1M",
		"--aria-pagecache-buffer-size=8M",
		"--query-cache-size=0",
		"--table-open-cache=400",
		"--performance-schema=OFF",
	}
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o660)
	})
}

// Addr is the server's address, 127.0.0.1:port.
func (m *MariaDB) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port)) }

// Host is the address the server listens on, 127.0.0.1.
func (m *MariaDB) Host() string { return "127.0.0.1" }

// Port is the server's TCP port, which stays the same across restarts.
func (m *MariaDB) Port() int { return m.port }

// ServerID is the server's --server-id.
func (m *MariaDB) ServerID() uint32 { return m.serverID }

// DataDir is the server's data directory; binary logs live there too.
func (m *MariaDB) DataDir() string { return filepath.Join(m.dir, "data") }

// tmpDir is the server's own directory for temporary files.
func (m *MariaDB) tmpDir() string { return filepath.Join(m.dir, "tmp") }

// LogPath is the server's error log, kept across restarts.
func (m *MariaDB) LogPath() string { return m.logPath }

// DSN is a github.com/go-sql-driver/mysql data source name for root on
// database db (empty for none), in UTC with client-side interpolation.
func (m *MariaDB) DSN(db string) string { return m.config(db).FormatDSN() }

// config is DSN's configuration. The driver's notices (a pooled
// connection found dead after a restart) go nowhere: tests restart
// servers on purpose.
func (m *MariaDB) config(db string) *mysql.Config {
	c := mysql.NewConfig()
	c.Logger = &mysql.NopLogger{}
	c.User = "root"
	c.Net = "tcp"
	c.Addr = m.Addr()
	c.DBName = db
	c.Loc = time.UTC
	c.InterpolateParams = true
	c.Params = map[string]string{"time_zone": "'+00:00'"}
	return c
}

// open opens a pool with config(""), keeping the quiet logger (a DSN
// string cannot carry it).
func (m *MariaDB) open() (*sql.DB, error) {
	conn, err := mysql.NewConnector(m.config(""))
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// PID is mariadbd's process id, or 0 when it is not running.
func (m *MariaDB) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return 0
	}
	return m.proc.cmd.Process.Pid
}

// Exec runs each statement as root, failing the test on the first error.
func (m *MariaDB) Exec(t testing.TB, stmts ...string) {
	t.Helper()
	db, err := m.pool()
	if err != nil {
		t.Fatalf("mariadb %s: %v", m.Addr(), err)
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("mariadb %s: %s: %v", m.Addr(), s, err)
		}
	}
}

// DB is a root connection pool to the server (no default database, UTC
// sessions). It is closed with the server; callers must not close it.
func (m *MariaDB) DB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := m.pool()
	if err != nil {
		t.Fatalf("mariadb %s: %v", m.Addr(), err)
	}
	return db
}

func (m *MariaDB) pool() (*sql.DB, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.db == nil {
		db, err := m.open()
		if err != nil {
			return nil, err
		}
		m.db = db
	}
	return m.db, nil
}

// Kill stops the server with SIGKILL, as a crash would, and waits for the
// process to be reaped. Killing a stopped server does nothing.
func (m *MariaDB) Kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return
	}
	_ = m.proc.cmd.Process.Signal(syscall.SIGKILL)
	<-m.proc.done
	m.proc.close()
	m.proc = nil
	m.resetPoolLocked()
}

// Pause freezes the server with SIGSTOP: connections stay open but
// nothing answers, as with a hung host or a network partition. Resume
// undoes it; Stop and Kill also work on a paused server.
//
// It returns once every thread has stopped: kill(2) only queues the stop,
// and on a busy machine a thread can go on serving a query for a while.
func (m *MariaDB) Pause() error {
	if err := m.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	pid := m.PID()
	deadline := time.Now().Add(10 * time.Second)
	for !allThreadsStopped(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("testpeer: mariadb on %s (pid %d) did not stop within 10s of SIGSTOP", m.Addr(), pid)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// allThreadsStopped reports whether every thread of pid is in state T
// (stopped) per /proc/<pid>/task/*/stat.
func allThreadsStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// The state follows the command name, which is in parentheses
		// and may itself hold spaces or parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' {
			return false
		}
	}
	return true
}

// Resume continues a server frozen by Pause.
func (m *MariaDB) Resume() error { return m.signal(syscall.SIGCONT) }

func (m *MariaDB) signal(sig syscall.Signal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return fmt.Errorf("testpeer: mariadb on %s is not running", m.Addr())
	}
	return m.proc.cmd.Process.Signal(sig)
}

// Stop shuts the server down with SIGTERM (a clean shutdown), then
// SIGKILL if it has not exited within the grace period. Stopping a stopped
// server does nothing.
func (m *MariaDB) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopLocked()
}

func (m *MariaDB) stopLocked() error {
	p := m.proc
	if p == nil {
		return nil
	}
	m.proc = nil
	m.resetPoolLocked()
	defer p.close()
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot shut down
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("testpeer: SIGTERM mariadb pid %d: %w", p.cmd.Process.Pid, err)
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

// resetPoolLocked drops pooled connections to a server that went away, so
// that the next Exec does not pick a dead one.
func (m *MariaDB) resetPoolLocked() {
	if m.db != nil {
		m.db.Close()
		m.db = nil
	}
}

// Close stops the server and removes its socket directory. The data
// directory is left to its owner (the test's temp dir).
func (m *MariaDB) Close() error {
	err := m.Stop()
	os.RemoveAll(m.sockDir)
	return err
}

// Restart stops the server (if it runs) and starts it again on the same
// port and data directory, waiting until it accepts connections.
func (m *MariaDB) Restart(t testing.TB) {
	t.Helper()
	if err := m.Stop(); err != nil {
		t.Fatalf("restart mariadb: %v", err)
	}
	m.Start(t)
}

// Start starts a stopped server again (after Stop or Kill) on the same
// port and data directory. Starting a running server does nothing.
func (m *MariaDB) Start(t testing.TB) {
	t.Helper()
	if m.PID() != 0 {
		return
	}
	if err := m.start(); err != nil {
		t.Fatalf("start mariadb: %v", err)
	}
}

// LogTail returns the last n lines of the server's error log.
func (m *MariaDB) LogTail(n int) string {
	b, err := os.ReadFile(m.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// args is mariadbd's command line. --no-defaults must come first: it keeps
// the system MariaDB's /etc/mysql configuration out of the test server.
func (m *MariaDB) args() []string {
	args := []string{
		"--no-defaults",
		"--datadir=" + m.DataDir(),
		"--port=" + strconv.Itoa(m.port),
		"--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(m.sockDir, "s"),
		"--pid-file=" + filepath.Join(m.sockDir, "pid"),
		"--log-error=" + m.logPath,
		// Internal temporary tables go in the server's own directory: in
		// the shared /tmp another process's clean-up can delete one under
		// a running query (seen: "Error on delete of '/tmp/#sql-temptable-…'").
		"--tmpdir=" + m.tmpDir(),
		"--log-bin=mysql-bin",
		"--binlog-format=" + m.opts.BinlogFormat,
		"--binlog-row-image=FULL",
		"--server-id=" + strconv.FormatUint(uint64(m.serverID), 10),
		"--skip-name-resolve",
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci",
		"--max-connections=200",
	}
	args = append(args, sizeArgs()...)
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if m.opts.GTIDStrictMode {
		args = append(args, "--gtid-strict-mode=ON")
	}
	return append(args, m.opts.ExtraArgs...)
}

// start launches mariadbd and waits until it serves. It takes mu only to
// publish the process, so Kill can interrupt a start that hangs.
func (m *MariaDB) start() error {
	log, err := os.OpenFile(filepath.Join(m.dir, "mariadbd.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testpeer: mariadb output file: %w", err)
	}
	cmd := exec.Command(MariaDBServer, m.args()...)
	cmd.Dir = m.dir
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("testpeer: start mariadb: %w", err)
	}
	p := &process{cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	m.mu.Lock()
	m.proc = p
	m.mu.Unlock()

	if err := m.waitReady(p); err != nil {
		m.Kill()
		return fmt.Errorf("%w\nmariadb error log tail (%s):\n%s", err, m.logPath, m.LogTail(logTailLines))
	}
	return nil
}

// waitReady polls with a real login and query until the server answers,
// the process exits or the start timeout passes. An open port is not
// enough: mariadbd listens before InnoDB recovery has finished.
func (m *MariaDB) waitReady(p *process) error {
	db, err := m.open()
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(m.opts.StartTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("testpeer: mariadb pid %d exited during start: %v", p.cmd.Process.Pid, p.err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		last = db.QueryRowContext(ctx, "SELECT 1").Scan(new(int))
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("testpeer: mariadb on %s not ready after %v: %v", m.Addr(), m.opts.StartTimeout, last)
}
