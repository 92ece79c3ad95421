package core

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// The MySQL tests replicate between real mariadbd servers. Most share
// one source and one target, started on first use and stopped by
// TestMain; each test uses databases and a task of its own. Tests that
// restart or break a server start their own.
var mariadbs struct {
	once           sync.Once
	source, target *testpeer.MariaDB
	dirs           []string
	err            error
}

// sharedMariaDB returns the shared source and target, or ends the test
// when MariaDB is not installed (skip; failure under SHEPHERD_IT=1).
func sharedMariaDB(t testing.TB) (source, target *testpeer.MariaDB) {
	t.Helper()
	why, ok := testpeer.MariaDBAvailable()
	testpeer.Require(t, "MariaDB", ok, why)
	mariadbs.once.Do(func() {
		launch := func() *testpeer.MariaDB {
			dir, err := os.MkdirTemp("", "core-mariadb-")
			if err != nil {
				mariadbs.err = err
				return nil
			}
			mariadbs.dirs = append(mariadbs.dirs, dir)
			m, err := testpeer.LaunchMariaDB(dir, testpeer.MariaDBOptions{})
			if err != nil {
				mariadbs.err = err
			}
			return m
		}
		mariadbs.source, mariadbs.target = launch(), launch()
	})
	if mariadbs.err != nil || mariadbs.source == nil || mariadbs.target == nil {
		t.Fatalf("shared MariaDB servers did not start: %v", mariadbs.err)
	}
	return mariadbs.source, mariadbs.target
}

func stopSharedMariaDB() {
	for _, m := range []*testpeer.MariaDB{mariadbs.source, mariadbs.target} {
		if m != nil {
			m.Close()
		}
	}
	for _, d := range mariadbs.dirs {
		os.RemoveAll(d)
	}
}

var dbSeq struct {
	sync.Mutex
	n int
}

// testDB returns a database name no other test uses.
func testDB(prefix string) string {
	dbSeq.Lock()
	defer dbSeq.Unlock()
	dbSeq.n++
	return fmt.Sprintf("%s_%d", prefix, dbSeq.n)
}

// Tables of the replication workload: items (keyed, bulk inserts),
// counters (keyed, counter = counter + 1) and journal (no key: a row
// applied twice would be a second row).
var workloadTables = []string{"items", "counters", "journal"}

// createWorkloadSchema creates db and its tables on each server, with
// the same starting rows: tasks start at "current", after these.
func createWorkloadSchema(t testing.TB, db string, servers ...*testpeer.MariaDB) {
	t.Helper()
	for _, m := range servers {
		m.Exec(t,
			"CREATE DATABASE "+db,
			"CREATE TABLE "+db+".items (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40) NOT NULL)",
			"CREATE TABLE "+db+".counters (id INT PRIMARY KEY, counter BIGINT NOT NULL)",
			"CREATE TABLE "+db+".journal (step INT NOT NULL, note VARCHAR(40) NOT NULL)",
			"INSERT INTO "+db+".counters VALUES (1,0),(2,0),(3,0),(4,0),(5,0),(6,0),(7,0),(8,0),(9,0),(10,0)")
	}
}

// load writes rows rows into db.items, ids from first on, in multi-row
// INSERTs of batch rows; after each INSERT it increments a counter and
// appends a journal row, each in its own transaction. It stops early when
// ctx ends.
func load(ctx context.Context, src *sql.DB, db string, first, rows, batch int) error {
	var sb strings.Builder
	for step := first / batch; step*batch < first+rows; step++ {
		sb.Reset()
		sb.WriteString("INSERT INTO " + db + ".items VALUES ")
		for i := range batch {
			id := step*batch + i
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "(%d,%d,'row-%d-pad-pad-pad')", id, id%1000, id)
		}
		stmts := []string{
			sb.String(),
			fmt.Sprintf("UPDATE %s.counters SET counter = counter + 1 WHERE id = %d", db, step%10+1),
			fmt.Sprintf("INSERT INTO %s.journal VALUES (%d, 'step %d')", db, step, step),
		}
		for _, s := range stmts {
			if _, err := src.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("load step %d: %w", step, err)
			}
		}
	}
	return nil
}

// tableSums returns "count checksum" of each workload table of db.
func tableSums(ctx context.Context, d *sql.DB, db string) (map[string]string, error) {
	out := map[string]string{}
	for _, tb := range workloadTables {
		var n int64
		if err := d.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+db+"."+tb).Scan(&n); err != nil {
			return nil, err
		}
		var name string
		var sum sql.NullInt64
		if err := d.QueryRowContext(ctx, "CHECKSUM TABLE "+db+"."+tb).Scan(&name, &sum); err != nil {
			return nil, err
		}
		out[tb] = fmt.Sprintf("%d rows, checksum %d", n, sum.Int64)
	}
	return out, nil
}

// waitSameTables waits until db's tables have the same contents on the
// target as on the source.
func waitSameTables(t testing.TB, source, target *testpeer.MariaDB, db string, d time.Duration) {
	t.Helper()
	coordtest.WaitFor(t, d, "the target to match the source", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		want, err := tableSums(ctx, source.DB(t), db)
		if err != nil {
			return fmt.Errorf("source: %w", err)
		}
		got, err := tableSums(ctx, target.DB(t), db)
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		for _, tb := range workloadTables {
			if got[tb] != want[tb] {
				return fmt.Errorf("%s: target %s, source %s", tb, got[tb], want[tb])
			}
		}
		return nil
	})
}

// targetCheckpoint reads the task's checkpoint row on the target.
func targetCheckpoint(ctx context.Context, target *sql.DB, task string) (owner string, epoch int64, pos uint64, err error) {
	err = target.QueryRowContext(ctx, "SELECT owner, epoch, binlog_pos FROM shepherd.shepherd_checkpoint WHERE task = ?", task).Scan(&owner, &epoch, &pos)
	return owner, epoch, pos, err
}

// mysqlSpec is a hot-standby spec replicating db from source to target.
func mysqlSpec(name, db string, source, target *testpeer.MariaDB) *Spec {
	sp := &Spec{
		Name:   name,
		Source: SourceEndpoint{Endpoint: Endpoint{Host: source.Host(), Port: source.Port(), User: "root", Flavor: FlavorMariaDB}},
		Target: TargetEndpoint{Endpoint: Endpoint{Host: target.Host(), Port: target.Port(), User: "root", Flavor: FlavorMariaDB}},
		Filter: Filter{Include: []string{db + ".*"}},
		Start:  StartCurrent,
		Apply:  Apply{BatchRows: 2000},
	}
	sp.setDefaults()
	return sp
}

// coreProc is `shepherd core` (or, through startShepherdProc, another
// subcommand) running as a child process.
type coreProc struct {
	t    testing.TB
	name string // in messages and the log file's name
	host string // a core's --host; empty for other subcommands
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// coreSessionTimeout is the session timeout of core processes: what a
// failover after kill -9 waits for.
const coreSessionTimeout = 2 * time.Second

// startCoreProc starts `shepherd core --host host args…` against connect.
// It is stopped (SIGTERM, then SIGKILL) when the test ends, and its log
// printed if the test failed.
func startCoreProc(t testing.TB, connect, host string, args ...string) *coreProc {
	t.Helper()
	full := append([]string{"core", "--zk", connect, "--host", host, "--auth-file", coordtest.AuthFile(t),
		"--session-timeout", coreSessionTimeout.String(), "--checkpoint-interval", "200ms",
		"--retry-base", "100ms", "--retry-max", "1s", "--scan-interval", "500ms"}, args...)
	p := startShepherdProc(t, "core-"+host, full...)
	p.host = host
	return p
}

// startShepherdProc starts `shepherd --log-level info args…` (any
// subcommand) as a child process called name in messages and in its log
// file's name, with startCoreProc's clean-up and log tail.
func startShepherdProc(t testing.TB, name string, args ...string) *coreProc {
	t.Helper()
	bin := shepherdBinary(t)
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--log-level", "info"}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", bin, err)
	}
	p := &coreProc{t: t, name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
			if len(lines) > 60 {
				lines = lines[len(lines)-60:]
			}
			t.Logf("%s log tail:\n%s", name, strings.Join(lines, "\n"))
		}
	})
	return p
}

// signal sends sig to the process if it still runs.
func (p *coreProc) signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			p.t.Errorf("signal %v to %s: %v", sig, p.name, err)
		}
	}
}

// kill9 kills the process with SIGKILL and waits for it.
func (p *coreProc) kill9() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// stop asks the process to stop (SIGTERM) and waits, killing it after
// 15s.
func (p *coreProc) stop() {
	p.signal(syscall.SIGCONT) // in case it was frozen
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.t.Errorf("%s ignored SIGTERM for 15s; killing it", p.name)
		p.kill9()
	}
}

// logText returns what the process logged so far.
func (p *coreProc) logText() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
}

// freeTCPPort returns a loopback port nothing listens on (now).
func freeTCPPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// addColdMySQLTasks adds n cold tasks of group g1, each replicating its
// own workload database (named prefix_<n>), and returns their names and
// databases.
func addColdMySQLTasks(t testing.TB, a *Admin, prefix string, n int, source, target *testpeer.MariaDB) (tasks, dbs []string) {
	t.Helper()
	for range n {
		db := testDB(prefix)
		createWorkloadSchema(t, db, source, target)
		sp := mysqlSpec(prefix+"_"+db, db, source, target)
		sp.Standby = Standby{Mode: ModeCold, Group: "g1"}
		mustAdd(t, a, sp)
		tasks, dbs = append(tasks, sp.Name), append(dbs, db)
	}
	return tasks, dbs
}

// waitStartsPinned waits until every task has pinned its start position
// in lastCommit: a load written after that is replicated whole.
func waitStartsPinned(t testing.TB, ctx context.Context, a *Admin, tasks []string) {
	t.Helper()
	coordtest.WaitFor(t, 10*time.Second, "every start position in lastCommit", func() error {
		for _, task := range tasks {
			if lc, ok, err := readLastCommit(ctx, a.s, a.layout.LastCommit(task)); !ok || err != nil || lc.Position().IsZero() {
				return fmt.Errorf("%s: lastCommit %+v, %v", task, lc, err)
			}
		}
		return nil
	})
}
