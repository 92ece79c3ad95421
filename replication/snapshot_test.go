package replication

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/crashload"
	"github.com/shepherd-dev/shepherd/internal/rowtypes"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// snapshotRows is the size of the big keyed table of the snapshot tests:
// with the others, about 20,000 rows.
const snapshotRows = 12000

// makeSnapshotDB fills db on source with tables of every shape the copy
// handles: the crash load's (keyed kv, keyless log, counter) with txns
// transactions in them, every column type (rowtypes), a big keyed table,
// a composite key of strings under a case-insensitive and a latin1
// collation, and a keyless table with duplicate rows.
func makeSnapshotDB(t *testing.T, source *testpeer.MariaDB, db string, txns int) {
	t.Helper()
	crashload.CreateTables(t, source, db)
	for i := 1; i <= txns; i++ {
		// Numbered apart from the load's, which counts from 1.
		if err := crashload.Txn(source.DB(t), db, 1_000_000+i); err != nil {
			t.Fatal(err)
		}
	}
	source.Exec(t, strings.ReplaceAll(rowtypes.AllTypes, "rt_types.", db+"."))
	for _, q := range rowtypes.Rows {
		source.Exec(t, strings.ReplaceAll(q, "rt_types.", db+"."))
	}
	seq := func(n int) string { return seqCTE(n) }
	source.Exec(t,
		"CREATE TABLE "+db+".big (id INT PRIMARY KEY, v VARCHAR(40), d DECIMAL(12,2), f FLOAT)",
		"INSERT INTO "+db+".big "+seq(snapshotRows)+"SELECT i, CONCAT('row ', i), i / 7, i / 3 FROM seq",
		"CREATE TABLE "+db+".cs (a VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, b VARCHAR(20) CHARACTER SET latin1, n INT, PRIMARY KEY (a, b))",
		"INSERT INTO "+db+".cs "+seq(4000)+"SELECT CONCAT(IF(i % 2, 'k', 'K'), i % 97, 'ü'), CONCAT(_latin1 X'E9', i), i FROM seq",
		"CREATE TABLE "+db+".nokey (a INT, b VARCHAR(10))",
		"INSERT INTO "+db+".nokey "+seq(3000)+"SELECT i % 1000, CONCAT('n', i % 1000) FROM seq",
	)
}

// seqCTE is a WITH clause defining seq(i), the numbers 1 to n (n at most
// a million: MariaDB bounds a recursion at 1000 steps).
func seqCTE(n int) string {
	return fmt.Sprintf("WITH RECURSIVE d(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM d WHERE i < 999), "+
		"seq(i) AS (SELECT a.i * 1000 + b.i + 1 FROM d a, d b WHERE a.i * 1000 + b.i < %d) ", n)
}

// writeKeyed changes the big and composite-key tables until stop is
// closed: updates, deletes and inserts over the whole key range, so
// that the copy meets changes before, in and after its chunks.
func writeKeyed(t *testing.T, source *testpeer.MariaDB, db string, stop <-chan struct{}) *sync.WaitGroup {
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
			id := (i * 7919) % snapshotRows
			stmts := []string{
				fmt.Sprintf("UPDATE %s.big SET v = CONCAT(v, '+'), d = d + 1 WHERE id = %d", db, id),
				fmt.Sprintf("INSERT INTO %s.big VALUES (%d, 'new', 1.5, 0.25)", db, snapshotRows+i),
				fmt.Sprintf("UPDATE %s.cs SET n = n + 1 WHERE a = 'k%d' OR a = 'K%d' LIMIT 3", db, i%97, (i+1)%97),
			}
			if i%5 == 0 {
				stmts = append(stmts, fmt.Sprintf("DELETE FROM %s.big WHERE id = %d", db, (id+1)%snapshotRows),
					fmt.Sprintf("INSERT INTO %s.nokey VALUES (%d, 'w')", db, i))
			}
			for _, q := range stmts {
				if _, err := pool.Exec(q); err != nil {
					t.Errorf("keyed load: %s: %v", q, err)
					return
				}
			}
		}
	}()
	return &wg
}

// copyStateOf reads the snapshot state committed on the target.
func copyStateOf(t *testing.T, r *Replicator) *copyState {
	t.Helper()
	cp, _, err := r.TargetCheckpoint(context.Background())
	if err != nil {
		t.Fatalf("read checkpoint: %v", err)
	}
	st, err := parseCopyState(cp.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitCopied waits until the target's checkpoint says the copy is done.
func waitCopied(t *testing.T, r *Replicator, rn *run) {
	t.Helper()
	coordtest.WaitFor(t, 120*time.Second, "snapshot copy complete", func() error {
		if rn != nil {
			select {
			case err := <-rn.done:
				rn.done <- err
				return fmt.Errorf("Run returned: %w", err)
			default:
			}
		}
		st := copyStateOf(t, r)
		if st == nil || !st.Done {
			return fmt.Errorf("copy state %+v", st)
		}
		return nil
	})
}

// assertExactlyOnce checks the crash load's invariants on the target.
func assertExactlyOnce(t *testing.T, target *testpeer.MariaDB, db string, txns int) {
	t.Helper()
	var n, logRows, distinct int
	target.DB(t).QueryRow("SELECT n FROM " + db + ".counter WHERE id = 1").Scan(&n)
	target.DB(t).QueryRow("SELECT COUNT(*), COUNT(DISTINCT txn) FROM "+db+".log").Scan(&logRows, &distinct)
	if n != txns || logRows != txns || distinct != txns {
		t.Errorf("target counter = %d, log rows = %d (%d distinct); want %d each: a transaction was lost or applied twice", n, logRows, distinct, txns)
	}
}

// TestSnapshotUnderLoad copies a database while the source takes writes
// to keyed and keyless tables, renewing the snapshot often (so that the
// target is brought up to each new one from the binlog), then follows
// the binlog: the target ends equal to the source, tables created from
// the source's definitions, no transaction lost or applied twice.
func TestSnapshotUnderLoad(t *testing.T) {
	source, target := servers(t)
	const db = "rt_snap_load"
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	makeSnapshotDB(t, source, db, 300)
	cfg := newConfig(t, source, target, db)
	cfg.Snapshot = SnapshotConfig{Enabled: true, ChunkRows: 500, hold: 20 * time.Millisecond}
	r := openReplicator(t, cfg)
	from, err := r.ResolveStart(context.Background(), "snapshot")
	if err != nil {
		t.Fatal(err)
	}

	load := crashload.Start(t, source, db, 300)
	stop := make(chan struct{})
	keyed := writeKeyed(t, source, db, stop)
	rn := startRun(t, r, from, 1, "test")
	waitCopied(t, r, rn)
	close(stop)
	keyed.Wait()
	txns := 300 + load.Finish(t)
	waitCaughtUp(t, r, source, rn)

	p := rn.progress()
	if p.Snapshot == nil || !p.Snapshot.Done || p.Snapshot.Rows < snapshotRows {
		t.Errorf("progress snapshot = %+v, want done with at least %d rows", p.Snapshot, snapshotRows)
	}
	assertSameData(t, source, target, db, db)
	assertExactlyOnce(t, target, db, txns)
}

// TestSnapshotCrash kills the copying process with SIGKILL mid-table and
// between tables, keyed and keyless, while the source takes writes, and
// checks that each new process resumes the copy where the last commit
// left it and hands over to the binlog exactly.
func TestSnapshotCrash(t *testing.T) {
	source, target := servers(t)
	const db = "rt_snap_crash"
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	makeSnapshotDB(t, source, db, 200)
	cfg := newConfig(t, source, target, db)
	cfg.Snapshot = SnapshotConfig{Enabled: true, ChunkRows: 200}
	r := openReplicator(t, cfg)
	from, err := r.ResolveStart(context.Background(), "snapshot")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.CreateTemp(t.TempDir(), "helper-*.log")
	if err != nil {
		t.Fatal(err)
	}
	spec := helperSpec{Config: cfg, From: from, Epoch: 1, Owner: "child"}
	spec.Config.Logger = nil

	load := crashload.Start(t, source, db, 300)
	stop := make(chan struct{})
	keyed := writeKeyed(t, source, db, stop)
	// The tables in copy order: alltypes, big, counter, cs, kv, log
	// (keyless), nokey (keyless). Each process is held, then killed, at
	// one cursor: inside big, between big and counter, inside cs (a
	// composite string key), between the keyless log and nokey.
	var c *crashload.Subprocess
	for _, hold := range []struct {
		Next int
		Mid  bool
	}{{1, true}, {2, false}, {3, true}, {6, false}} {
		before := ""
		if st := copyStateOf(t, r); st != nil {
			before = st.String()
		}
		spec.HoldCopy = &hold
		c = &crashload.Subprocess{Env: helperEnv, Spec: spec, Out: out}
		c.Start(t)
		coordtest.WaitFor(t, 60*time.Second, fmt.Sprintf("the copy held at %+v", hold), func() error {
			st := copyStateOf(t, r)
			if st == nil || st.String() == before || st.Next != hold.Next || (st.Key != nil) != hold.Mid {
				return fmt.Errorf("copy state %v", st)
			}
			return nil
		})
		c.Crash(t)
		t.Logf("killed at %s", copyStateOf(t, r))
	}
	spec.HoldCopy = nil
	c = &crashload.Subprocess{Env: helperEnv, Spec: spec, Out: out}
	c.Start(t)
	waitCopied(t, r, nil)
	close(stop)
	keyed.Wait()
	txns := 200 + load.Finish(t)
	waitCaughtUp(t, r, source, nil)
	c.Crash(t)
	assertSameData(t, source, target, db, db)
	assertExactlyOnce(t, target, db, txns)
}

// TestSnapshotFenced claims the task with a newer epoch in the middle of
// a copy: the copying Run stops with ErrFenced, and the target keeps
// exactly the chunks committed before the claim.
func TestSnapshotFenced(t *testing.T) {
	source, target := servers(t)
	const db = "rt_snap_fence"
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	source.Exec(t, "CREATE DATABASE "+db,
		"CREATE TABLE "+db+".big (id INT PRIMARY KEY, v VARCHAR(40))",
		"INSERT INTO "+db+".big "+seqCTE(5000)+"SELECT i, 'x' FROM seq")
	cfg := newConfig(t, source, target, db)
	cfg.Snapshot = SnapshotConfig{Enabled: true, ChunkRows: 100, MaxRowsPerSecond: 2000}
	r := openReplicator(t, cfg)
	from, err := r.ResolveStart(context.Background(), "snapshot")
	if err != nil {
		t.Fatal(err)
	}
	rn := startRun(t, r, from, 1, "old")
	coordtest.WaitFor(t, 30*time.Second, "the copy begun", func() error {
		if st := copyStateOf(t, r); st == nil || st.Key == nil {
			return fmt.Errorf("copy state %v", st)
		}
		return nil
	})
	other := openReplicator(t, cfg)
	run2, _, err := other.sink.Claim(context.Background(), 2, "new")
	if err != nil {
		t.Fatal(err)
	}
	run2.Close()
	at := copyStateOf(t, r)
	coordtest.WaitFor(t, 30*time.Second, "the old Run fenced", func() error {
		select {
		case err := <-rn.done:
			rn.done <- err
			if !errors.Is(err, ErrFenced) {
				t.Fatalf("Run returned %v, want ErrFenced", err)
			}
			return nil
		default:
			return errors.New("still running")
		}
	})
	if now := copyStateOf(t, r); now.String() != at.String() {
		t.Errorf("the fenced Run committed after the claim: state %s, was %s", now, at)
	}
	var n int64
	target.DB(t).QueryRow("SELECT COUNT(*) FROM " + db + ".big").Scan(&n)
	if n != at.Rows[0] {
		t.Errorf("target holds %d rows, the cursor says %d were copied", n, at.Rows[0])
	}
}

// TestSnapshotIncompatibleTable: an existing target table whose columns
// differ stops the copy with an error naming the table and the column.
func TestSnapshotIncompatibleTable(t *testing.T) {
	source, target := servers(t)
	const db = "rt_snap_compat"
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	source.Exec(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO "+db+".t VALUES (1, 'a')")
	target.Exec(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	cfg := newConfig(t, source, target, db)
	cfg.Snapshot = SnapshotConfig{Enabled: true}
	r := openReplicator(t, cfg)
	from, err := r.ResolveStart(context.Background(), "snapshot")
	if err != nil {
		t.Fatal(err)
	}
	err = r.Run(context.Background(), from, 1, "test", nil)
	if !errors.Is(err, ErrIncompatibleTable) || !strings.Contains(err.Error(), "`"+db+"`.`t`") || !strings.Contains(err.Error(), "`v`") {
		t.Fatalf("Run = %v, want ErrIncompatibleTable naming %s.t and column v", err, db)
	}
}

func TestCopyStateAndKeys(t *testing.T) {
	st := &copyState{Tables: [][2]string{{"a", "t1"}, {"a", "t2"}, {"b", "t3"}}, Next: 1, Rows: []int64{5, 0, 0}, Estimated: []int64{5, 9, 1}}
	st.makeIndex()
	for _, c := range []struct {
		db, table string
		key       bool
		want      bool
	}{
		{"a", "t1", false, false}, {"a", "t2", false, true}, {"a", "t2", true, false},
		{"b", "t3", true, true}, {"c", "other", false, false},
	} {
		st.Key = nil
		if c.key {
			st.Key = []keyValue{{"i", "1"}}
		}
		if got := st.pending(c.db, c.table); got != c.want {
			t.Errorf("pending(%s.%s) with key %v = %v, want %v", c.db, c.table, c.key, got, c.want)
		}
	}
	back, err := parseCopyState(st.String())
	if err != nil || back.String() != st.String() {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	if _, err := parseCopyState(`{"tables":[["a","b"]],"next":0,"rows":[],"estimated":[]}`); err == nil {
		t.Error("an inconsistent state parsed")
	}
	str := column{name: "s", dataType: "varchar", charset: "latin1"}
	dec := column{name: "d", dataType: "decimal"}
	for _, c := range []struct {
		col  *column
		v    any
		want any
	}{
		{&dec, int64(-5), int64(-5)}, {&dec, uint64(1 << 63), uint64(1 << 63)}, {&dec, float32(1.5), 1.5},
		{&str, []byte("\xe9'"), "e927"}, {&dec, []byte("12.50"), "12.50"},
	} {
		got, err := encodeKey(c.col, c.v).param()
		if err != nil || got != c.want {
			t.Errorf("key %v of %s: param %v (%v), want %v", c.v, c.col.dataType, got, err, c.want)
		}
	}
	p := st.progress()
	if p.Rows != 5 || p.Estimated != 15 || !p.Tables[0].Done || p.Tables[1].Done {
		t.Errorf("progress = %+v", p)
	}
}

func TestSnapshotConfigValidation(t *testing.T) {
	for _, c := range []struct {
		cfg  SnapshotConfig
		want string
	}{
		{SnapshotConfig{Threads: 4}, "Snapshot.Threads"},
		{SnapshotConfig{ChunkRows: -1}, "Snapshot.ChunkRows"},
		{SnapshotConfig{MaxRowsPerSecond: -1}, "Snapshot.MaxRowsPerSecond"},
	} {
		if _, err := c.cfg.withDefaults(); err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
	got, err := SnapshotConfig{}.withDefaults()
	if err != nil || got.ChunkRows != DefaultSnapshotChunkRows || got.Threads != 1 {
		t.Errorf("defaults: %+v, %v", got, err)
	}
}

// TestSnapshotOrdersPiecesByTheirFirstEvent: a piece of a large
// transaction that began right after a rotation has the previous file's
// end as its Start; the catch-up to a snapshot taken at the new file's
// first transaction must not count it as before the snapshot (applying
// it would then move the checkpoint back to the snapshot's position).
func TestSnapshotOrdersPiecesByTheirFirstEvent(t *testing.T) {
	c := &copier{r: &Replicator{flavor: "mariadb"}}
	at := Position{File: "mysql-bin.000002", Pos: 385}
	for _, tc := range []struct {
		name   string
		seg    Segment
		before bool
	}{
		{"piece after the rotation", Segment{Start: Position{File: "mysql-bin.000001", Pos: 9000}, First: Position{File: "mysql-bin.000002", Pos: 385}}, false},
		{"piece before the snapshot", Segment{Start: Position{File: "mysql-bin.000001", Pos: 9000}, First: Position{File: "mysql-bin.000001", Pos: 9000}}, true},
		{"piece without First", Segment{Start: Position{File: "mysql-bin.000002", Pos: 100}}, true},
		{"last piece ending at the snapshot", Segment{Start: Position{File: "mysql-bin.000002", Pos: 100}, End: at, Last: true}, true},
		{"last piece ending after it", Segment{Start: at, First: at, End: Position{File: "mysql-bin.000002", Pos: 900}, Last: true}, false},
	} {
		got, err := c.before(tc.seg, at)
		if err != nil || got != tc.before {
			t.Errorf("%s: before = %v, %v; want %v", tc.name, got, err, tc.before)
		}
	}
}
