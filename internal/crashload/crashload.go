// Package crashload is the source load and the crashed child process
// that the replication crash tests share, for every sink: each source
// transaction touches a keyed table (idempotent writes), a keyless
// append-only one (a replayed transaction shows as a duplicate row) and
// a counter bumped once per transaction, so that "exactly once" can be
// checked by content. Test support only: no production package imports
// it.
package crashload

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// CreateTables makes the load's tables in db on source.
func CreateTables(t testing.TB, source *testpeer.MariaDB, db string) {
	t.Helper()
	source.Exec(t, "CREATE DATABASE "+db,
		"CREATE TABLE "+db+".kv (id INT PRIMARY KEY, v VARCHAR(40), n INT)",
		"CREATE TABLE "+db+".log (txn INT, note VARCHAR(40))",
		"CREATE TABLE "+db+".counter (id INT PRIMARY KEY, n INT NOT NULL)",
		"INSERT INTO "+db+".counter VALUES (1, 0)")
}

// Txns writes source transactions 1 to n.
func Txns(conn *sql.DB, db string, n int) error {
	for i := 1; i <= n; i++ {
		if err := Txn(conn, db, i); err != nil {
			return err
		}
	}
	return nil
}

// Txn writes source transaction number i: an upsert in kv, one appended
// log row, a counter increment, and every 7th a delete in kv.
func Txn(conn *sql.DB, db string, i int) error {
	tx, err := conn.Begin()
	if err != nil {
		return err
	}
	stmts := []string{
		fmt.Sprintf("INSERT INTO %s.kv VALUES (%d, 'v%d', 0) ON DUPLICATE KEY UPDATE n = n + 1", db, i%200, i),
		fmt.Sprintf("INSERT INTO %s.log VALUES (%d, 'txn %d')", db, i, i),
		fmt.Sprintf("UPDATE %s.counter SET n = n + 1 WHERE id = 1", db),
	}
	if i%7 == 0 {
		stmts = append(stmts, fmt.Sprintf("DELETE FROM %s.kv WHERE id = %d", db, (i*13)%200))
	}
	for _, s := range stmts {
		if _, err := tx.Exec(s); err != nil {
			tx.Rollback()
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return tx.Commit()
}

// maxTxns bounds a Load: one that is never stopped fails the test rather
// than writing forever.
const maxTxns = 200000

// Load writes transactions until the test stops it. A test that must
// crash, fence or cut off a replicator while the source is being written
// orders it that way: the load runs until the test has done so. (A fixed
// count hoped to outlast the crashes is a race the replicator wins on a
// fast day: the checkpoint stops moving once it caught up.)
type Load struct {
	stop chan struct{}
	done chan result
}

type result struct {
	txns int
	err  error
}

// Start starts a load on source's db that writes at least atLeast
// transactions.
func Start(t testing.TB, source *testpeer.MariaDB, db string, atLeast int) *Load {
	l := &Load{stop: make(chan struct{}), done: make(chan result, 1)}
	pool := source.DB(t)
	go func() {
		i := 0
		for {
			if i >= atLeast {
				select {
				case <-l.stop:
					l.done <- result{txns: i}
					return
				default:
				}
			}
			if i >= maxTxns {
				l.done <- result{txns: i, err: fmt.Errorf("load not stopped after %d transactions", i)}
				return
			}
			if err := Txn(pool, db, i+1); err != nil {
				l.done <- result{txns: i, err: err}
				return
			}
			i++
		}
	}()
	t.Cleanup(l.halt)
	return l
}

func (l *Load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
}

// Finish stops the load and returns how many transactions it committed.
func (l *Load) Finish(t testing.TB) int {
	t.Helper()
	l.halt()
	res := <-l.done
	l.done <- res
	if res.err != nil {
		t.Fatalf("load: %v", res.err)
	}
	return res.txns
}

// Crasher runs a replicator that can be crashed and restarted.
type Crasher interface {
	Start(t *testing.T)
	Crash(t *testing.T)
}

// Subprocess runs the test binary as a child (-test.run=^$) with Env set
// to Spec as JSON — the test's TestMain turns it into a replicator
// process — and crashes it with SIGKILL.
type Subprocess struct {
	Env  string
	Spec any
	Out  *os.File // the child's stdout and stderr

	cmd *exec.Cmd
}

func (c *Subprocess) Start(t *testing.T) {
	b, err := json.Marshal(c.Spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), c.Env+"="+string(b))
	cmd.Stdout, cmd.Stderr = c.Out, c.Out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start replicator process: %v", err)
	}
	c.cmd = cmd
	t.Cleanup(c.kill)
}

func (c *Subprocess) Crash(t *testing.T) {
	if c.cmd.ProcessState != nil {
		t.Fatalf("replicator process exited before the crash: %v (see %s)", c.cmd.ProcessState, c.Out.Name())
	}
	c.kill()
}

func (c *Subprocess) kill() {
	if c.cmd != nil && c.cmd.ProcessState == nil {
		c.cmd.Process.Signal(syscall.SIGKILL)
		c.cmd.Wait()
	}
}
