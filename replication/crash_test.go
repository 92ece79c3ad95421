package replication

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/crashload"
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
	// HoldCopy, when set, stops the process (for its parent to kill it)
	// once it has committed a snapshot cursor at table HoldCopy.Next,
	// mid-table or not (HoldCopy.Mid).
	HoldCopy *struct {
		Next int
		Mid  bool
	} `json:"holdCopy,omitempty"`
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
	if h := spec.HoldCopy; h != nil {
		copyCommitted = func(s *copyState) {
			if s.Next == h.Next && (s.Key != nil) == h.Mid {
				fmt.Fprintln(os.Stderr, "helper: holding at copy cursor", s.String())
				select {} // until killed
			}
		}
	}
	r, err := Open(ctx, spec.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: open:", err)
		return 3
	}
	err = r.Run(ctx, spec.From, spec.Epoch, spec.Owner, nil)
	fmt.Fprintln(os.Stderr, "helper: run:", err)
	return 4
}

// inProcess runs Run in a goroutine; a crash cancels its context, which
// drops the target connection wherever the applier is (mid-statement,
// mid-commit) — the target rolls back what was not committed.
type inProcess struct {
	r    *Replicator
	from Position
	rn   *run
}

func (c *inProcess) Start(t *testing.T) { c.rn = startRun(t, c.r, c.from, 1, "inproc") }
func (c *inProcess) Crash(t *testing.T) {
	if err := c.rn.stop(); err != nil {
		t.Fatalf("Run failed before the crash: %v", err)
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

			var c crashload.Crasher
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
				c = &crashload.Subprocess{Env: helperEnv, Spec: spec, Out: out}
			}

			load := crashload.Start(t, source, db, 1500)
			c.Start(t)
			for i := 0; i < 6; i++ {
				// Let it apply a little, then crash it mid-stream.
				waitApplied(t, r, 3)
				c.Crash(t)
				c.Start(t)
			}
			txns := load.Finish(t)
			waitCaughtUp(t, r, source, nil)
			c.Crash(t)
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
