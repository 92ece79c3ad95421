package replication

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// helperEnv, when set, makes the test binary a replicator process: it
// holds a JSON helperSpec, and TestMain runs helperMain instead of tests.
// The crash tests start it as a child and SIGKILL it mid-load.
const helperEnv = "SHEPHERD_REPLICATION_HELPER"

type helperSpec struct {
	Config Config   `json:"config"`
	From   Position `json:"from"`
	Epoch  int64    `json:"epoch"`
	Owner  string   `json:"owner"`
}

// helperMain runs one Run until killed; its exit code is 0 only if Run
// ended by cancellation, which never happens here.
func helperMain() int {
	var spec helperSpec
	if err := json.Unmarshal([]byte(os.Getenv(helperEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "helper: bad spec:", err)
		return 2
	}
	ctx := context.Background()
	r, err := Open(ctx, spec.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: open:", err)
		return 3
	}
	err = r.Run(ctx, spec.From, spec.Epoch, spec.Owner, nil)
	fmt.Fprintln(os.Stderr, "helper: run:", err)
	return 4
}

// crasher runs a replicator that can be crashed and restarted.
type crasher interface {
	start(t *testing.T)
	crash(t *testing.T)
}

// inProcess runs Run in a goroutine; a crash cancels its context, which
// drops the target connection wherever the applier is (mid-statement,
// mid-commit) — the target rolls back what was not committed.
type inProcess struct {
	r    *Replicator
	from Position
	rn   *run
}

func (c *inProcess) start(t *testing.T) { c.rn = startRun(t, c.r, c.from, 1, "inproc") }
func (c *inProcess) crash(t *testing.T) {
	if err := c.rn.stop(); err != nil {
		t.Fatalf("Run failed before the crash: %v", err)
	}
}

// subprocess runs the replicator in a child process; a crash is SIGKILL.
type subprocess struct {
	spec helperSpec
	cmd  *exec.Cmd
	out  *os.File
}

func (c *subprocess) start(t *testing.T) {
	b, err := json.Marshal(c.spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(b))
	cmd.Stdout, cmd.Stderr = c.out, c.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start replicator process: %v", err)
	}
	c.cmd = cmd
	t.Cleanup(func() { c.kill() })
}

func (c *subprocess) crash(t *testing.T) {
	if c.cmd.ProcessState != nil {
		t.Fatalf("replicator process exited before the crash: %v (see %s)", c.cmd.ProcessState, c.out.Name())
	}
	c.kill()
}

func (c *subprocess) kill() {
	if c.cmd != nil && c.cmd.ProcessState == nil {
		c.cmd.Process.Signal(syscall.SIGKILL)
		c.cmd.Wait()
	}
}

// TestCrashAndResume loads the source while the replicator is crashed
// and restarted again and again, then checks that the target converged to
// exactly the source: same rows in a keyed table (idempotent writes), in a
// keyless append-only table (where a replayed transaction would show as a
// duplicate row), and a counter bumped by counter = counter + 1 once per
// source transaction.
func TestCrashAndResume(t *testing.T) {
	for _, mode := range []string{"cancel", "sigkill"} {
		t.Run(mode, func(t *testing.T) {
			source, target := servers(t)
			db := "rt_crash_" + mode
			dropDBs(t, []*testpeer.MariaDB{source, target}, db)
			cfg := newConfig(t, source, target, db)
			cfg.BatchRows = 50 // many commits, so crashes land between and inside them
			r := openReplicator(t, cfg)
			from := currentPosition(t, r)
			source.Exec(t, "CREATE DATABASE "+db,
				"CREATE TABLE "+db+".kv (id INT PRIMARY KEY, v VARCHAR(40), n INT)",
				"CREATE TABLE "+db+".log (txn INT, note VARCHAR(40))",
				"CREATE TABLE "+db+".counter (id INT PRIMARY KEY, n INT NOT NULL)",
				"INSERT INTO "+db+".counter VALUES (1, 0)")

			var c crasher
			switch mode {
			case "cancel":
				c = &inProcess{r: r, from: from}
			case "sigkill":
				out, err := os.CreateTemp(t.TempDir(), "helper-*.log")
				if err != nil {
					t.Fatal(err)
				}
				spec := helperSpec{Config: cfg, From: from, Epoch: 1, Owner: "child"}
				spec.Config.Logger = nil
				c = &subprocess{spec: spec, out: out}
			}

			load := startLoad(t, source, db, 1500)
			c.start(t)
			for i := 0; i < 6; i++ {
				// Let it apply a little, then crash it mid-stream.
				waitApplied(t, r, 3)
				c.crash(t)
				c.start(t)
			}
			txns := load.finish(t)
			waitCaughtUp(t, r, source, nil)
			c.crash(t)
			assertSameData(t, source, target, db, db)
			var n, logRows, distinct int
			target.DB(t).QueryRow("SELECT n FROM " + db + ".counter WHERE id = 1").Scan(&n)
			target.DB(t).QueryRow("SELECT COUNT(*), COUNT(DISTINCT txn) FROM "+db+".log").Scan(&logRows, &distinct)
			if n != txns || logRows != txns || distinct != txns {
				t.Errorf("target counter = %d, log rows = %d (%d distinct); want %d each: a transaction was lost or applied twice", n, logRows, distinct, txns)
			}
		})
	}
}

// crashLoad writes txns source transactions, each touching all three
// tables: an upsert and sometimes a delete in kv, one appended log row,
// and one counter increment.
func crashLoad(conn *sql.DB, db string, txns int) error {
	for i := 1; i <= txns; i++ {
		if err := crashTxn(conn, db, i); err != nil {
			return err
		}
	}
	return nil
}

// crashTxn writes source transaction number i of the crash load.
func crashTxn(conn *sql.DB, db string, i int) error {
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

// maxLoadTxns bounds a sourceLoad: one that is never stopped fails the
// test rather than writing forever.
const maxLoadTxns = 200000

// sourceLoad writes crash-load transactions until the test stops it. A
// test that must crash or fence a replicator while the source is being
// written orders it that way: the load runs until the test has done so.
// A fixed transaction count hoped to outlast the crashes is a race the
// replicator wins on a fast day (the checkpoint stops moving once it has
// caught up with a finished load).
type sourceLoad struct {
	stop chan struct{}
	done chan loadResult
}

type loadResult struct {
	txns int
	err  error
}

// startLoad starts a load that writes at least atLeast transactions.
func startLoad(t *testing.T, source *testpeer.MariaDB, db string, atLeast int) *sourceLoad {
	l := &sourceLoad{stop: make(chan struct{}), done: make(chan loadResult, 1)}
	pool := source.DB(t)
	go func() {
		i := 0
		for {
			if i >= atLeast {
				select {
				case <-l.stop:
					l.done <- loadResult{txns: i}
					return
				default:
				}
			}
			if i >= maxLoadTxns {
				l.done <- loadResult{txns: i, err: fmt.Errorf("load not stopped after %d transactions", i)}
				return
			}
			if err := crashTxn(pool, db, i+1); err != nil {
				l.done <- loadResult{txns: i, err: err}
				return
			}
			i++
		}
	}()
	t.Cleanup(l.halt)
	return l
}

func (l *sourceLoad) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
}

// finish stops the load and returns how many transactions it committed.
func (l *sourceLoad) finish(t *testing.T) int {
	t.Helper()
	l.halt()
	res := <-l.done
	l.done <- res
	if res.err != nil {
		t.Fatalf("load: %v", res.err)
	}
	return res.txns
}

// waitApplied waits until the target's checkpoint has been seen at moves
// more positions, i.e. the replicator is committing.
func waitApplied(t *testing.T, r *Replicator, moves int) {
	t.Helper()
	var last Position
	seen := -1
	coordtest.WaitFor(t, 30*time.Second, "replicator making progress", func() error {
		cp, _, err := r.TargetCheckpoint(context.Background())
		if err != nil {
			return err
		}
		if cp.Position != last {
			seen++
			last = cp.Position
		}
		if seen < moves {
			return fmt.Errorf("checkpoint seen moving %d times, at %s", seen, last)
		}
		return nil
	})
}
