package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// verifyRows is the rows of the verify tests' keyed tables.
const verifyRows = 3000

// startVerifyPair creates db on the source — a keyed table kv, a table
// cs with a composite key of strings, and a keyless table nokey — and a
// Run that replicates it from before its CREATE, caught up.
func startVerifyPair(t *testing.T, db string) (source, target *testpeer.MariaDB, r *Replicator, rn *run) {
	t.Helper()
	source, target = servers(t)
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	cfg := newConfig(t, source, target, db)
	r = openReplicator(t, cfg)
	// A task of its own: no epoch or position left by an earlier run
	// of the test (-count).
	if _, err := target.DB(t).Exec("DELETE FROM shepherd.shepherd_checkpoint WHERE task = ?", cfg.Task); err != nil {
		t.Fatal(err)
	}
	from := currentPosition(t, r)
	source.Exec(t,
		"CREATE DATABASE "+db,
		"CREATE TABLE "+db+".kv (id INT PRIMARY KEY, v VARCHAR(40), n INT NULL, f FLOAT)",
		"INSERT INTO "+db+".kv "+seqCTE(verifyRows)+"SELECT i, CONCAT('row ', i), IF(i % 7 = 0, NULL, i), i / 3 FROM seq",
		"CREATE TABLE "+db+".cs (a VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, b VARCHAR(20) CHARACTER SET latin1, n INT, PRIMARY KEY (a, b))",
		"INSERT INTO "+db+".cs "+seqCTE(1500)+"SELECT CONCAT(IF(i % 2, 'k', 'K'), i % 97, 'ü'), CONCAT(_latin1 X'E9', i), i FROM seq",
		"CREATE TABLE "+db+".nokey (a INT, b VARCHAR(10))",
		"INSERT INTO "+db+".nokey "+seqCTE(1000)+"SELECT i % 300, CONCAT('n', i % 300) FROM seq",
	)
	rn = startRun(t, r, from, 1, "verify-test")
	waitCaughtUp(t, r, source, rn)
	return source, target, r, rn
}

// writeLoad updates, inserts and deletes rows of db's tables until stop
// is closed.
func writeLoad(t *testing.T, source *testpeer.MariaDB, db string, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	pool := source.DB(t)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Keys below 1000 and from 10,000,000 on: the rows the tests
			// plant differences in are out of its way.
			id := (i * 7919) % 1000
			stmts := []string{
				fmt.Sprintf("UPDATE %s.kv SET v = CONCAT(v, '+'), n = IFNULL(n, 0) + 1 WHERE id = %d", db, id),
				fmt.Sprintf("INSERT INTO %s.kv VALUES (%d, 'new', NULL, 0.25)", db, 10_000_000+i),
			}
			if i%97 != 10 {
				stmts = append(stmts, fmt.Sprintf("UPDATE %s.cs SET n = n + 1 WHERE a = 'k%dü'", db, i%97))
			}
			if i%5 == 0 {
				stmts = append(stmts, fmt.Sprintf("DELETE FROM %s.kv WHERE id = %d", db, (id+1)%1000),
					fmt.Sprintf("INSERT INTO %s.nokey VALUES (%d, 'w')", db, i))
			}
			for _, q := range stmts {
				if _, err := pool.Exec(q); err != nil {
					t.Errorf("load: %s: %v", q, err)
					return
				}
			}
		}
	}()
	return &wg
}

func verifyNow(t *testing.T, r *Replicator, opts VerifyOptions) VerifyReport {
	t.Helper()
	opts.ChunkRows = 500
	rep, err := r.Verify(coordtest.Context(t, 5*time.Minute), opts)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return rep
}

// TestVerifyEqualUnderLoad: source and target kept equal by a Run while
// the source takes writes compare equal, chunk by chunk.
func TestVerifyEqualUnderLoad(t *testing.T) {
	db := "verify_equal"
	source, _, r, rn := startVerifyPair(t, db)
	stop := make(chan struct{})
	wg := writeLoad(t, source, db, stop)
	rep := verifyNow(t, r, VerifyOptions{})
	close(stop)
	wg.Wait()
	if !rep.Clean() {
		t.Fatalf("verify of an equal pair under load found differences: %+v", rep)
	}
	if len(rep.Tables) != 3 || rep.Chunks < verifyRows/500+3 || rep.Rows < verifyRows {
		t.Fatalf("verify compared %d tables, %d chunks, %d rows; want 3 tables, every chunk: %+v", len(rep.Tables), rep.Chunks, rep.Rows, rep)
	}
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyFindsAndRepairs: rows changed, deleted and added on the
// target behind the task's back are reported by key, under load; a
// repair rewrites them, and the next verify is clean. Then, with the
// load stopped, a keyless table's difference is found, and a table
// missing on the target.
func TestVerifyFindsAndRepairs(t *testing.T) {
	db := "verify_diff"
	source, target, r, rn := startVerifyPair(t, db)
	target.Exec(t,
		"UPDATE "+db+".kv SET v = 'planted' WHERE id = 1234",
		"DELETE FROM "+db+".kv WHERE id = 2345",
		"INSERT INTO "+db+".kv VALUES (999999, 'extra', 1, 1)",
		"UPDATE "+db+".cs SET n = -1 WHERE a = 'K10ü' AND b = _latin1 X'E93130'",
		"INSERT INTO "+db+".nokey VALUES (1, 'extra')",
	)
	keyed := []string{db + ".kv", db + ".cs"}
	stop := make(chan struct{})
	wg := writeLoad(t, source, db, stop)
	rep := verifyNow(t, r, VerifyOptions{Tables: keyed})
	diffs := map[string][][]string{}
	for _, tv := range rep.Tables {
		for _, d := range tv.Diffs {
			diffs[tv.Table+" missing"] = append(diffs[tv.Table+" missing"], d.Missing...)
			diffs[tv.Table+" extra"] = append(diffs[tv.Table+" extra"], d.Extra...)
			diffs[tv.Table+" changed"] = append(diffs[tv.Table+" changed"], d.Changed...)
		}
	}
	want := map[string][][]string{
		"kv missing": {{"2345"}}, "kv extra": {{"999999"}}, "kv changed": {{"1234"}},
		"cs missing": nil, "cs extra": nil, "cs changed": {{"K10ü", "0xE93130"}},
	}
	for k, w := range want {
		if !slices.EqualFunc(diffs[k], w, slices.Equal) {
			t.Errorf("%s: got %q, want %q", k, diffs[k], w)
		}
	}
	if rep.Differences != 4 || rep.Clean() {
		t.Fatalf("differences %d, want 4: %+v", rep.Differences, rep)
	}

	rep = verifyNow(t, r, VerifyOptions{Repair: true, Tables: keyed})
	if rep.Repaired != 4 || rep.Differences != 0 {
		t.Fatalf("repair: repaired %d, left %d; want 4 and 0: %+v", rep.Repaired, rep.Differences, rep)
	}
	if rep = verifyNow(t, r, VerifyOptions{Tables: keyed}); !rep.Clean() {
		t.Fatalf("verify after the repair found differences: %+v", rep)
	}
	close(stop)
	wg.Wait()

	rep = verifyNow(t, r, VerifyOptions{Tables: []string{db + ".nokey"}})
	if len(rep.Tables) != 1 || !rep.Tables[0].Differs || rep.Differences != 1 {
		t.Fatalf("keyless table with an extra row on the target: %+v", rep)
	}

	// A table gone from the target (written no more, so the task runs
	// on) is a difference of its own.
	target.Exec(t, "DROP TABLE "+db+".nokey")
	rep = verifyNow(t, r, VerifyOptions{Tables: []string{db + ".nokey"}})
	if len(rep.Tables) != 1 || !rep.Tables[0].Missing || rep.Differences != 1 {
		t.Fatalf("table missing on the target: %+v", rep)
	}
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyRepairFenced: a repair for an epoch a newer owner has
// overtaken writes nothing.
func TestVerifyRepairFenced(t *testing.T) {
	db := "verify_fenced"
	_, target, r, rn := startVerifyPair(t, db)
	target.Exec(t, "DELETE FROM "+db+".kv WHERE id = 77")
	_, err := r.Verify(coordtest.Context(t, 5*time.Minute), VerifyOptions{Repair: true, Tables: []string{db + ".kv"}})
	if err != nil {
		t.Fatalf("Verify with the owner's epoch: %v", err)
	}
	target.Exec(t, "DELETE FROM "+db+".kv WHERE id = 78")
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}
	// A newer owner claims the task; the repair of the old epoch 1 is
	// refused, and the row stays missing.
	rn = startRun(t, r, Position{}, 5, "newer")
	rep, err := r.Verify(context.Background(), VerifyOptions{Repair: true, Epoch: 1, Tables: []string{db + ".kv"}})
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("repair with an overtaken epoch: err %v, want ErrFenced; report %+v", err, rep)
	}
	var n int
	if err := target.DB(t).QueryRow("SELECT COUNT(*) FROM " + db + ".kv WHERE id = 78").Scan(&n); err != nil || n != 0 {
		t.Fatalf("row 78 on the target: %d, %v; want 0: the fenced repair wrote", n, err)
	}
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}
}
