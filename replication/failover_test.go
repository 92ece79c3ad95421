package replication

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// vip is a TCP address that can be moved from one server to another, as
// operations move a virtual IP or a DNS name to a promoted replica: a
// move closes the connections open through it, and new ones reach the
// new server.
type vip struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	target string
	conns  map[net.Conn]struct{}
}

func newVIP(t testing.TB, target string) *vip {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("vip listen: %v", err)
	}
	v := &vip{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	v.wg.Add(1)
	go v.accept()
	t.Cleanup(func() {
		ln.Close()
		v.closeConns()
		v.wg.Wait()
	})
	return v
}

func (v *vip) port() int { return v.ln.Addr().(*net.TCPAddr).Port }

func (v *vip) accept() {
	defer v.wg.Done()
	for {
		c, err := v.ln.Accept()
		if err != nil {
			return
		}
		v.mu.Lock()
		target := v.target
		v.mu.Unlock()
		up, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		v.mu.Lock()
		v.conns[c], v.conns[up] = struct{}{}, struct{}{}
		v.mu.Unlock()
		v.wg.Add(2)
		go v.pump(up, c)
		go v.pump(c, up)
	}
}

func (v *vip) pump(dst, src net.Conn) {
	defer v.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// move points the address at target and drops the connections to the
// old server, as its demotion or death would.
func (v *vip) move(target string) {
	v.mu.Lock()
	v.target = target
	v.mu.Unlock()
	v.closeConns()
}

func (v *vip) closeConns() {
	v.mu.Lock()
	defer v.mu.Unlock()
	for c := range v.conns {
		c.Close()
	}
	clear(v.conns)
}

// targetPosition is the position of the target's checkpoint.
func targetPosition(t testing.TB, r *Replicator) Position {
	t.Helper()
	cp, ok, err := r.TargetCheckpoint(t.Context())
	if err != nil || !ok {
		t.Fatalf("target checkpoint: %v (ok %v)", err, ok)
	}
	return cp.Position
}

// gtidPos reads a MariaDB GTID variable.
func gtidPos(t testing.TB, db *sql.DB, variable string) string {
	t.Helper()
	var g string
	if err := db.QueryRow("SELECT @@" + variable).Scan(&g); err != nil {
		t.Fatalf("read %s: %v", variable, err)
	}
	return g
}

// waitReplicated waits until replica has applied everything primary
// has logged so far.
func waitReplicated(t testing.TB, primary, replica *testpeer.MariaDB) {
	t.Helper()
	want := gtidPos(t, primary.DB(t), "gtid_binlog_pos")
	coordtest.WaitFor(t, 60*time.Second, "the replica to apply "+want, func() error {
		if got := gtidPos(t, replica.DB(t), "gtid_slave_pos"); got != want {
			return fmt.Errorf("replica at %s", got)
		}
		return nil
	})
}

// keylessLoad commits n transactions on db, each inserting one row into
// a table without a key (a replay duplicates rows there, silently) and
// bumping a counter.
func keylessLoad(t testing.TB, conn *sql.DB, db string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		tx, err := conn.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			fmt.Sprintf("INSERT INTO %s.events VALUES (%d, 'event %d')", db, i, i),
			fmt.Sprintf("UPDATE %s.counter SET n = n + 1 WHERE id = 1", db),
		} {
			if _, err := tx.Exec(q); err != nil {
				tx.Rollback()
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSourceMovedBehindItsAddress moves a task's source address from a
// primary to its promoted GTID replica, whose binlog has the same file
// names: the task must resume there by GTID, so that the target ends
// equal to the new primary, with no keyless row applied twice. Then the
// address moves back to the old primary, which lacks the new primary's
// transactions: the task must be refused with both servers and GTID
// states named, never resumed at a file offset of another server.
func TestSourceMovedBehindItsAddress(t *testing.T) {
	_, target := servers(t)
	args := append([]string{"--log-slave-updates"}, sourceArgs...)
	primary := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{GTIDStrictMode: true, ExtraArgs: args})
	replica := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{GTIDStrictMode: true, ExtraArgs: args})
	const db = "rt_moved"
	dropDBs(t, []*testpeer.MariaDB{target}, db)
	// A write of the replica's own, in a GTID domain of its own, as
	// replicas have: its binlog's offsets are no longer the primary's.
	ctx := coordtest.Context(t, 2*time.Minute)
	own, err := replica.DB(t).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SET SESSION gtid_domain_id = 9", "CREATE DATABASE rt_replica_own",
		"CREATE TABLE rt_replica_own.t (id INT PRIMARY KEY)", "INSERT INTO rt_replica_own.t VALUES (1), (2), (3)"} {
		if _, err := own.ExecContext(ctx, q); err != nil {
			t.Fatalf("replica: %s: %v", q, err)
		}
	}
	own.Close()
	replica.Exec(t, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d, MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos", primary.Port()),
		"START SLAVE")

	addr := newVIP(t, primary.Addr())
	cfg := newConfig(t, primary, target, db)
	cfg.Source.Port = addr.port()
	r := openReplicator(t, cfg)
	from := currentPosition(t, r)
	primary.Exec(t, "CREATE DATABASE "+db,
		"CREATE TABLE "+db+".events (n INT NOT NULL, note VARCHAR(40) NOT NULL)",
		"CREATE TABLE "+db+".counter (id INT PRIMARY KEY, n INT NOT NULL)",
		"INSERT INTO "+db+".counter VALUES (1, 0)")

	rn := startRun(t, r, from, 1, "first")
	keylessLoad(t, primary.DB(t), db, 0, 40)
	waitCaughtUp(t, r, primary, rn)
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}
	last := targetPosition(t, r)
	if last.Server != "mariadb:"+strconv.FormatUint(uint64(primary.ServerID()), 10) {
		t.Fatalf("checkpoint %+v does not name the primary (server_id %d)", last, primary.ServerID())
	}

	// Promote the replica once it has everything, and move the address.
	waitReplicated(t, primary, replica)
	replica.Exec(t, "STOP SLAVE", "RESET SLAVE ALL")
	addr.move(replica.Addr())
	keylessLoad(t, replica.DB(t), db, 40, 25)

	rn = startRun(t, r, last, 2, "second")
	waitCaughtUp(t, r, replica, rn)
	assertSameData(t, replica, target, db, db)
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}
	last = targetPosition(t, r)

	// The old primary never saw the replica's 25 transactions.
	addr.move(primary.Addr())
	rn = startRun(t, r, last, 3, "third")
	select {
	case err := <-rn.done:
		rn.done <- err
		if !errors.Is(err, ErrOtherSource) {
			t.Fatalf("Run on the old primary: %v, want ErrOtherSource", err)
		}
		for _, part := range []string{last.Server, "mariadb:" + strconv.FormatUint(uint64(primary.ServerID()), 10), last.GTID} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("refusal %q does not name %q", err, part)
			}
		}
	case <-ctx.Done():
		t.Fatalf("Run on the old primary did not stop; progress %+v", rn.progress())
	}
	assertSameData(t, replica, target, db, db)
}

// TestErrantTransactionRefused moves a task's source address to a
// promoted replica that took a write of its own (an errant transaction)
// while it replicated the primary, before the history the target then
// followed from the primary: the target would never get that write and
// would differ from its new source for good. Run must refuse the replica
// naming the errant GTID, and leave the target as it was.
func TestErrantTransactionRefused(t *testing.T) {
	_, target := servers(t)
	args := append([]string{"--log-slave-updates"}, sourceArgs...)
	primary := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{GTIDStrictMode: true, ExtraArgs: args})
	// Not in strict mode: the replica goes on applying the primary's
	// transactions after its own write took a sequence number of theirs.
	replica := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{ExtraArgs: args})
	const db, ckpt = "rt_errant", "rt_errant_ckpt"
	// A checkpoint table of its own, dropped with the data: a rerun
	// (-count) starts from no checkpoint and epoch 0 again.
	dropDBs(t, []*testpeer.MariaDB{target}, db, ckpt)
	ctx := coordtest.Context(t, 2*time.Minute)
	replica.Exec(t, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d, MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos", primary.Port()),
		"START SLAVE")

	addr := newVIP(t, primary.Addr())
	cfg := newConfig(t, primary, target, db)
	cfg.Source.Port = addr.port()
	cfg.CheckpointSchema = ckpt
	r := openReplicator(t, cfg)
	from := currentPosition(t, r)
	primary.Exec(t, "CREATE DATABASE "+db,
		"CREATE TABLE "+db+".events (n INT NOT NULL, note VARCHAR(40) NOT NULL)",
		"CREATE TABLE "+db+".counter (id INT PRIMARY KEY, n INT NOT NULL)",
		"INSERT INTO "+db+".counter VALUES (1, 0)")
	rn := startRun(t, r, from, 1, "first")
	keylessLoad(t, primary.DB(t), db, 0, 20)
	waitReplicated(t, primary, replica)

	// The errant write, in the primary's domain, with the replica's
	// server_id; then the primary's history goes on past it.
	own, err := replica.DB(t).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var errant string
	if _, err := own.ExecContext(ctx, "INSERT INTO "+db+".events VALUES (-1, 'errant')"); err != nil {
		t.Fatalf("replica: errant write: %v", err)
	}
	if err := own.QueryRowContext(ctx, "SELECT @@last_gtid").Scan(&errant); err != nil {
		t.Fatal(err)
	}
	own.Close()
	keylessLoad(t, primary.DB(t), db, 20, 20)
	waitCaughtUp(t, r, primary, rn)
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}
	waitReplicated(t, primary, replica)
	last := targetPosition(t, r)
	replicaName := "mariadb:" + strconv.FormatUint(uint64(replica.ServerID()), 10)
	if want := "0-" + strconv.FormatUint(uint64(replica.ServerID()), 10) + "-"; !strings.HasPrefix(errant, want) {
		t.Fatalf("the errant write has GTID %q, not one of the replica's in domain 0", errant)
	}
	if c, ok := ComparePositions(FlavorMariaDB, Position{GTID: gtidPos(t, replica.DB(t), "gtid_binlog_pos")}, Position{GTID: last.GTID}); !ok || c < 0 {
		t.Fatalf("the replica does not contain the checkpoint %s: the test would not reach the errant check", last)
	}

	// What a caller choosing where to move the task is told.
	if err := CheckTakeover(ctx, primary.DB(t), endpoint(primary), FlavorMariaDB, last); err != nil {
		t.Errorf("CheckTakeover on the server that wrote the checkpoint: %v", err)
	}
	if err := CheckTakeover(ctx, replica.DB(t), endpoint(replica), FlavorMariaDB, last); !errors.Is(err, ErrOtherSource) || !strings.Contains(err.Error(), errant) {
		t.Errorf("CheckTakeover on the replica: %v, want ErrOtherSource naming %s", err, errant)
	}

	replica.Exec(t, "STOP SLAVE", "RESET SLAVE ALL")
	addr.move(replica.Addr())
	rn = startRun(t, r, last, 2, "second")
	select {
	case err := <-rn.done:
		rn.done <- err
		if !errors.Is(err, ErrOtherSource) {
			t.Fatalf("Run on the replica with an errant transaction: %v, want ErrOtherSource", err)
		}
		for _, part := range []string{"errant transactions " + errant, last.Server, replicaName, last.GTID, gtidPos(t, replica.DB(t), "gtid_binlog_state")} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("refusal %q does not name %q", err, part)
			}
		}
	case <-ctx.Done():
		t.Fatalf("Run on the replica did not stop; progress %+v", rn.progress())
	}
	if got := targetPosition(t, r); got != last {
		t.Errorf("the refused Run moved the checkpoint from %+v to %+v", last, got)
	}
	assertSameData(t, primary, target, db, db)
}

// TestFirstGTIDIsRecorded starts a task at "current" on a source that has
// no GTID yet: once the source has one, the checkpoint carries it (it
// used to keep an empty GTID state for good, leaving nothing to resume
// by on another server).
func TestFirstGTIDIsRecorded(t *testing.T) {
	_, target := servers(t)
	fresh := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{ExtraArgs: sourceArgs})
	if g := gtidPos(t, fresh.DB(t), "gtid_binlog_pos"); g != "" {
		t.Fatalf("a fresh server already has GTID state %q", g)
	}
	const db = "rt_first_gtid"
	dropDBs(t, []*testpeer.MariaDB{target}, db)
	r := openReplicator(t, newConfig(t, fresh, target, db))
	from := currentPosition(t, r)
	if from.GTID != "" {
		t.Fatalf("start %s has a GTID state on a server with none", from)
	}
	rn := startRun(t, r, from, 1, "test")
	fresh.Exec(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".t (id INT PRIMARY KEY)", "INSERT INTO "+db+".t VALUES (1), (2)")
	waitCaughtUp(t, r, fresh, rn) // by GTID: it needs the checkpoint to have one
	cp, _, err := r.TargetCheckpoint(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := gtidPos(t, fresh.DB(t), "gtid_binlog_pos"); cp.Position.GTID != want {
		t.Errorf("checkpoint GTID state %q, want the source's %q", cp.Position.GTID, want)
	}
	assertSameData(t, fresh, target, db, db)
}

// TestCheckpointTableOfAnOlderVersion: a checkpoint table made before
// positions named their server and before it kept the history followed
// gets the columns at Open, and its row still reads, as a position of an
// unknown server (resumed on whichever server answers, as before) and of
// an unknown history (the errant check assumes what it did before).
func TestCheckpointTableOfAnOlderVersion(t *testing.T) {
	source, target := servers(t)
	const schema = "rt_old_ckpt"
	dropDBs(t, []*testpeer.MariaDB{target}, schema)
	target.Exec(t, "CREATE DATABASE "+schema, "CREATE TABLE "+schema+"."+CheckpointTable+` (
			task        VARCHAR(191) NOT NULL PRIMARY KEY,
			binlog_file VARCHAR(255) NOT NULL DEFAULT '',
			binlog_pos  BIGINT UNSIGNED NOT NULL DEFAULT 0,
			gtid        TEXT NOT NULL,
			epoch       BIGINT NOT NULL DEFAULT 0,
			owner       VARCHAR(255) NOT NULL DEFAULT '',
			ddl_pending VARCHAR(1024) NOT NULL DEFAULT '',
			updated_at  DATETIME(6) NULL
		) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`)
	cfg := newConfig(t, source, target, "rt_old_ckpt_data")
	cfg.CheckpointSchema = schema
	target.Exec(t, fmt.Sprintf("INSERT INTO %s.%s (task, binlog_file, binlog_pos, gtid, epoch, owner) VALUES ('%s', 'mysql-bin.000001', 4, '0-1-1', 3, 'old')",
		schema, CheckpointTable, cfg.Task))
	r := openReplicator(t, cfg)
	cp, ok, err := r.TargetCheckpoint(t.Context())
	want := Position{File: "mysql-bin.000001", Pos: 4, GTID: "0-1-1"}
	if err != nil || !ok || cp.Position != want || cp.Epoch != 3 {
		t.Fatalf("checkpoint of the older table: %+v %v %v, want %+v at epoch 3", cp, ok, err, want)
	}
	for _, c := range addedColumns {
		var n int
		if err := target.DB(t).QueryRow("SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?",
			schema, CheckpointTable, c.name).Scan(&n); err != nil || n != 1 {
			t.Errorf("column %s of the upgraded table: %d (%v)", c.name, n, err)
		}
	}
	if row, _, err := r.mysql().ckpt.read(t.Context(), r.mysql().db); err != nil || row.gtidState != "" {
		t.Errorf("history of the older row: %q (%v), want unknown", row.gtidState, err)
	}
	openReplicator(t, cfg) // a second Open finds the column there
}

// TestFailoverTwiceAndBack follows a task's source through two failovers
// and back to the first primary: P is the primary, R1 and R2 its GTID
// replicas; R1 is promoted and R2 repointed at it, then R2 is promoted,
// then P, repointed at R2, is made the primary again. Each server's
// @@gtid_binlog_state keeps the last GTID of every server that wrote in
// the domain — R2's holds P's, below the checkpoint R1 wrote, of neither
// R1 nor the checkpoint's GTID; P's holds its own old writes and R1's —
// which a checkpoint's GTID position cannot tell from errant
// transactions. The history the checkpoint keeps can: the task must
// resume on each server, and the target must end equal to it.
func TestFailoverTwiceAndBack(t *testing.T) {
	_, target := servers(t)
	args := append([]string{"--log-slave-updates"}, sourceArgs...)
	opts := testpeer.MariaDBOptions{GTIDStrictMode: true, ExtraArgs: args}
	p, r1, r2 := testpeer.StartMariaDB(t, opts), testpeer.StartMariaDB(t, opts), testpeer.StartMariaDB(t, opts)
	const db, ckpt = "rt_twice", "rt_twice_ckpt"
	dropDBs(t, []*testpeer.MariaDB{target}, db, ckpt)
	ctx := coordtest.Context(t, 4*time.Minute)
	replicate := func(replica, primary *testpeer.MariaDB, use string) {
		t.Helper()
		replica.Exec(t, "STOP SLAVE", "RESET SLAVE ALL",
			fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d, MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_USE_GTID = %s", primary.Port(), use),
			"START SLAVE")
	}
	promote := func(m *testpeer.MariaDB) { m.Exec(t, "STOP SLAVE", "RESET SLAVE ALL") }
	name := func(m *testpeer.MariaDB) string { return "mariadb:" + strconv.FormatUint(uint64(m.ServerID()), 10) }
	// oldRuleRefuses checks that m is a case for the history: without
	// it (CheckTakeover does not read the checkpoint row), m's entry of
	// server other is taken for an errant transaction.
	oldRuleRefuses := func(m, other *testpeer.MariaDB, last Position) {
		t.Helper()
		err := CheckTakeover(ctx, m.DB(t), endpoint(m), FlavorMariaDB, last)
		var errant string
		if err != nil {
			_, errant, _ = strings.Cut(err.Error(), "errant transactions ")
			errant, _, _ = strings.Cut(errant, ":")
		}
		want := "0-" + strconv.FormatUint(uint64(other.ServerID()), 10) + "-"
		if !errors.Is(err, ErrOtherSource) || !strings.HasPrefix(errant, want) && !strings.Contains(errant, ","+want) {
			t.Fatalf("CheckTakeover of %s without the history: %v, want errant transactions of %s: the test would not need the history", name(m), err, name(other))
		}
	}
	replicate(r1, p, "slave_pos")
	replicate(r2, p, "slave_pos")

	addr := newVIP(t, p.Addr())
	cfg := newConfig(t, p, target, db)
	cfg.Source.Port = addr.port()
	cfg.CheckpointSchema = ckpt
	r := openReplicator(t, cfg)
	history := func() string {
		t.Helper()
		row, ok, err := r.mysql().ckpt.read(ctx, r.mysql().db)
		if err != nil || !ok {
			t.Fatalf("checkpoint row: %v (ok %v)", err, ok)
		}
		return row.gtidState
	}
	from := currentPosition(t, r)
	p.Exec(t, "CREATE DATABASE "+db,
		"CREATE TABLE "+db+".events (n INT NOT NULL, note VARCHAR(40) NOT NULL)",
		"CREATE TABLE "+db+".counter (id INT PRIMARY KEY, n INT NOT NULL)",
		"INSERT INTO "+db+".counter VALUES (1, 0)")
	rn := startRun(t, r, from, 1, "on P")
	keylessLoad(t, p.DB(t), db, 0, 30)
	waitCaughtUp(t, r, p, rn)
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}
	last := targetPosition(t, r)

	// First failover: R1 promoted, R2 repointed at it.
	waitReplicated(t, p, r1)
	waitReplicated(t, p, r2)
	promote(r1)
	replicate(r2, r1, "slave_pos")
	addr.move(r1.Addr())
	rn = startRun(t, r, last, 2, "on R1")
	keylessLoad(t, r1.DB(t), db, 30, 20)
	waitCaughtUp(t, r, r1, rn)
	assertSameData(t, r1, target, db, db)
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}
	last = targetPosition(t, r)
	if last.Server != name(r1) {
		t.Fatalf("checkpoint %+v does not name R1 (%s)", last, name(r1))
	}
	pEntry := gtidPos(t, p.DB(t), "gtid_binlog_pos") // P's last write, 0-P-k
	if h := history(); !strings.Contains(","+h+",", ","+pEntry+",") {
		t.Fatalf("the checkpoint's history %q lacks P's last write %s", h, pEntry)
	}

	// Second failover: R2, once it has R1's writes, holds 0-P-k and
	// 0-R1-m.
	waitReplicated(t, r1, r2)
	promote(r2)
	oldRuleRefuses(r2, p, last)
	addr.move(r2.Addr())
	rn = startRun(t, r, last, 3, "on R2")
	keylessLoad(t, r2.DB(t), db, 50, 20)
	waitCaughtUp(t, r, r2, rn)
	assertSameData(t, r2, target, db, db)
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}
	last = targetPosition(t, r)

	// Back to P, repointed at R2 from its own position: its binlog state
	// holds its own old write, and R1's, both below the checkpoint.
	replicate(p, r2, "current_pos")
	waitReplicated(t, r2, p)
	promote(p)
	oldRuleRefuses(p, p, last)
	addr.move(p.Addr())
	rn = startRun(t, r, last, 4, "on P again")
	keylessLoad(t, p.DB(t), db, 70, 20)
	waitCaughtUp(t, r, p, rn)
	assertSameData(t, p, target, db, db)
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryOfAStart: a task started from a position a user gave
// begins with the part of the source's @@gtid_binlog_state that precedes
// it as the history it followed (the target holds what the source held
// there), a write logged under another server_id included: all of it at
// the source's current position; the entries numbered up to the start in
// gtid_strict_mode; none but the start's own GTIDs otherwise.
func TestHistoryOfAStart(t *testing.T) {
	_, target := servers(t)
	src := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{ExtraArgs: sourceArgs})
	const db, ckpt = "rt_history", "rt_history_ckpt"
	dropDBs(t, []*testpeer.MariaDB{target}, db, ckpt)
	ctx := coordtest.Context(t, 2*time.Minute)
	src.Exec(t, "CREATE DATABASE "+db)
	// A write logged under another server_id, as one replicated from a
	// former primary is; then the source's own again.
	other, err := src.DB(t).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SET SESSION server_id = 77", "CREATE DATABASE rt_history_before", "SET SESSION server_id = @@GLOBAL.server_id"} {
		if _, err := other.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	other.Close()
	src.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY)")
	if state := gtidPos(t, src.DB(t), "gtid_binlog_state"); !strings.Contains(state, "0-77-") {
		t.Fatalf("the source's binlog state %q lacks the write of server_id 77", state)
	}

	for i, tt := range []struct {
		name    string
		strict  bool
		current bool // start at the current position, and write only once Run has begun
		has77   bool
	}{
		{name: "current position", current: true, has77: true},
		{name: "earlier position"},
		{name: "earlier position in strict mode", strict: true, has77: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src.Exec(t, fmt.Sprintf("SET GLOBAL gtid_strict_mode = %v", tt.strict))
			target.Exec(t, "DROP DATABASE IF EXISTS "+ckpt, "DROP DATABASE IF EXISTS "+db,
				"CREATE DATABASE "+db, "CREATE TABLE "+db+".t (id INT PRIMARY KEY)")
			src.Exec(t, "DELETE FROM "+db+".t")
			cfg := newConfig(t, src, target, db)
			cfg.CheckpointSchema = ckpt
			r := openReplicator(t, cfg)
			from, err := r.ResolveStart(ctx, gtidPos(t, src.DB(t), "gtid_binlog_pos"))
			if err != nil {
				t.Fatal(err)
			}
			insert := fmt.Sprintf("INSERT INTO %s.t VALUES (%d)", db, i)
			if !tt.current {
				src.Exec(t, insert)
			}
			rn := startRun(t, r, from, 1, "test")
			if tt.current {
				coordtest.WaitFor(t, 30*time.Second, "Run to begin applying", func() error {
					if !rn.sawState(StateRunning) {
						return errors.New("not running yet")
					}
					return nil
				})
				src.Exec(t, insert)
			}
			waitCaughtUp(t, r, src, rn)
			if err := rn.stop(); err != nil {
				t.Fatal(err)
			}
			assertSameData(t, src, target, db, db)
			row, _, err := r.mysql().ckpt.read(ctx, r.mysql().db)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(row.gtidState, row.Position.GTID) {
				t.Errorf("history %q lacks the checkpoint's GTID %s", row.gtidState, row.Position.GTID)
			}
			if got := strings.Contains(row.gtidState, "0-77-"); got != tt.has77 {
				t.Errorf("history %q: has the write of server_id 77 %v, want %v", row.gtidState, got, tt.has77)
			}
		})
	}
}
