package replication

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/crashload"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// runErr waits for a Run started by startRun to return by itself.
func runErr(t *testing.T, rn *run, within time.Duration) error {
	t.Helper()
	select {
	case err := <-rn.done:
		rn.done <- err
		return err
	case <-time.After(within):
		t.Fatalf("Run still running after %v (progress %+v)", within, rn.progress())
		return nil
	}
}

// backgroundLoad runs crashload.Txns and reports its result on the channel.
func backgroundLoad(t *testing.T, source *testpeer.MariaDB, db string, txns int) chan error {
	done := make(chan error, 1)
	pool := source.DB(t)
	go func() { done <- crashload.Txns(pool, db, txns) }()
	return done
}

func TestFencing(t *testing.T) {
	source, target := servers(t)
	const db = "rt_fence"
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	cfg := newConfig(t, source, target, db)
	r1 := openReplicator(t, cfg)
	from := currentPosition(t, r1)
	crashload.CreateTables(t, source, db)
	load := crashload.Start(t, source, db, 1500)

	old := startRun(t, r1, from, 1, "old")
	waitApplied(t, r1, 3)

	cfg2 := cfg
	cfg2.ServerID = cfg.ServerID + 1 // a second reader, so the old one keeps streaming and meets the fence on commit
	r2 := openReplicator(t, cfg2)
	newer := startRun(t, r2, from, 2, "new")

	err := runErr(t, old, 30*time.Second)
	if !errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "epoch 1 is older than the stored epoch 2") {
		t.Fatalf("old Run returned %v, want ErrFenced naming epochs 1 and 2", err)
	}
	if errors.Is(err, ErrNonRetryable) || retryable(err) {
		t.Errorf("ErrFenced classified as retryable or generic non-retryable: %v", err)
	}

	load.Finish(t)
	waitCaughtUp(t, r2, source, newer)
	assertSameData(t, source, target, db, db)
	cp, _, _ := r2.TargetCheckpoint(t.Context())
	if cp.Epoch != 2 || cp.Owner != "new" {
		t.Errorf("checkpoint epoch %d owner %q, want 2 and new", cp.Epoch, cp.Owner)
	}

	// A stale owner starting again is refused before it applies anything.
	again := startRun(t, r1, from, 1, "old")
	if err := runErr(t, again, 10*time.Second); !errors.Is(err, ErrFenced) {
		t.Errorf("Run at epoch 1 after epoch 2: %v, want ErrFenced", err)
	}
	if err := newer.stop(); err != nil {
		t.Errorf("epoch 2 Run: %v", err)
	}

	// After a move to another coordination ensemble, epochs start small
	// again: ResetEpoch lets them claim the task, from the stored position.
	prev, err := r1.ResetEpoch(t.Context())
	if err != nil || prev != 2 {
		t.Fatalf("ResetEpoch = %d, %v; want the stored epoch 2", prev, err)
	}
	if after, _, _ := r1.TargetCheckpoint(t.Context()); after.Epoch != 0 || after.Position != cp.Position {
		t.Fatalf("checkpoint after ResetEpoch: %+v; want epoch 0 at %s", after, cp.Position)
	}
	more := backgroundLoad(t, source, db, 500)
	moved := startRun(t, r1, from, 1, "moved")
	if err := <-more; err != nil {
		t.Fatalf("load: %v", err)
	}
	waitCaughtUp(t, r1, source, moved)
	assertSameData(t, source, target, db, db)
	if err := moved.stop(); err != nil {
		t.Errorf("Run after ResetEpoch: %v", err)
	}
	if cp, _, _ := r1.TargetCheckpoint(t.Context()); cp.Epoch != 1 || cp.Owner != "moved" {
		t.Errorf("checkpoint epoch %d owner %q, want 1 and moved", cp.Epoch, cp.Owner)
	}
}

func TestSourceNotRowBased(t *testing.T) {
	_, target := servers(t)
	source := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{BinlogFormat: "STATEMENT"})
	cfg := newConfig(t, source, target, "rt_stmt")
	dropDBs(t, []*testpeer.MariaDB{source, target}, "rt_stmt")

	open := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := Open(ctx, cfg)
		if err == nil {
			r.Close()
		}
		return err
	}
	for _, step := range []struct {
		set  string
		want []string
	}{
		{"", []string{"binlog_format=STATEMENT", "need ROW", "SET GLOBAL binlog_format='ROW'"}},
		{"SET GLOBAL binlog_format = 'ROW', GLOBAL binlog_row_image = 'MINIMAL'", []string{"binlog_row_image=MINIMAL", "need FULL"}},
	} {
		if step.set != "" {
			source.Exec(t, step.set)
		}
		err := open()
		if !errors.Is(err, ErrSourceConfig) || !errors.Is(err, ErrNonRetryable) {
			t.Fatalf("Open: %v, want ErrSourceConfig", err)
		}
		for _, w := range step.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Open error %q does not say %q", err, w)
			}
		}
	}

	// Set up right, but one session still writes statements.
	source.Exec(t, "SET GLOBAL binlog_row_image = 'FULL'")
	r := openReplicator(t, cfg)
	from := currentPosition(t, r)
	source.Exec(t, "CREATE DATABASE rt_stmt", "CREATE TABLE rt_stmt.t (id INT PRIMARY KEY)")
	rn := startRun(t, r, from, 1, "test")
	conn, err := source.DB(t).Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"SET SESSION binlog_format = 'STATEMENT'", "INSERT INTO rt_stmt.t VALUES (1)", "SET SESSION binlog_format = 'ROW'"} {
		if _, err := conn.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	err = runErr(t, rn, 30*time.Second)
	if !errors.Is(err, ErrSourceConfig) || !strings.Contains(err.Error(), "statement-based event") || !strings.Contains(err.Error(), "INSERT INTO rt_stmt.t") {
		t.Errorf("Run: %v, want ErrSourceConfig naming the statement-based INSERT", err)
	}
}

func TestAccessDenied(t *testing.T) {
	source, target := servers(t)
	for _, s := range []*testpeer.MariaDB{source, target} {
		s.Exec(t, "CREATE USER IF NOT EXISTS 'rt_user'@'127.0.0.1' IDENTIFIED BY 'right'",
			"GRANT SELECT ON *.* TO 'rt_user'@'127.0.0.1'")
	}
	t.Cleanup(func() {
		for _, s := range []*testpeer.MariaDB{source, target} {
			s.DB(t).Exec("DROP USER IF EXISTS 'rt_user'@'127.0.0.1'")
		}
	})
	base := newConfig(t, source, target, "rt_denied")
	for _, tt := range []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"source password", func(c *Config) { c.Source.User, c.Source.Password = "rt_user", "wrong" },
			[]string{"Access denied", "source", "source.user and source.password or source.passwordFile"}},
		{"target password", func(c *Config) { c.Target.User, c.Target.Password = "rt_user", "wrong" },
			[]string{"Access denied", "target", "target.user and target.password or target.passwordFile"}},
		{"target without write grants", func(c *Config) { c.Target.User, c.Target.Password = "rt_user", "right" },
			[]string{"denied", "shepherd"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.edit(&cfg)
			r, err := Open(t.Context(), cfg)
			if err == nil {
				r.Close()
				t.Fatalf("Open succeeded")
			}
			if !errors.Is(err, ErrNonRetryable) {
				t.Errorf("Open: %v, want ErrNonRetryable", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open error %q does not say %q", err, w)
				}
			}
		})
	}

	// The account can log in and read variables, but not the binlog
	// position "current" and "earliest" start from (issue 10: this was
	// retried for ever).
	t.Run("source without BINLOG MONITOR", func(t *testing.T) {
		cfg := base
		cfg.Source.User, cfg.Source.Password = "rt_user", "right"
		r := openReplicator(t, cfg)
		for _, start := range []string{"current", "earliest"} {
			_, err := r.ResolveStart(t.Context(), start)
			if !errors.Is(err, ErrNonRetryable) || !strings.Contains(err.Error(), "BINLOG MONITOR") ||
				!strings.Contains(err.Error(), "GRANT REPLICATION CLIENT ON *.* TO rt_user") {
				t.Errorf("ResolveStart(%s): %v, want a non-retryable error naming the BINLOG MONITOR grant", start, err)
			}
		}
	})

	t.Run("source without REPLICATION SLAVE", func(t *testing.T) {
		cfg := base
		cfg.Source.User, cfg.Source.Password = "rt_user", "right"
		r := openReplicator(t, cfg) // reading variables needs no privilege
		from := currentPosition(t, openReplicator(t, base))
		err := runErr(t, startRun(t, r, from, 1, "test"), 30*time.Second)
		if !errors.Is(err, ErrNonRetryable) || !strings.Contains(err.Error(), "REPLICATION") {
			t.Errorf("Run: %v, want a non-retryable error naming the REPLICATION privilege", err)
		}
	})
}

func TestTargetCrashRetriesAndCatchesUp(t *testing.T) {
	source, _ := servers(t)
	target := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	const db = "rt_tdown"
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	cfg := newConfig(t, source, target, db)
	r := openReplicator(t, cfg)
	from := currentPosition(t, r)
	crashload.CreateTables(t, source, db)
	load := crashload.Start(t, source, db, 1500)
	rn := startRun(t, r, from, 1, "test")
	waitApplied(t, r, 3)

	target.Kill()
	coordtest.WaitFor(t, 20*time.Second, "Run reporting the lost target", func() error {
		if p := rn.progress(); p.State != StateRetrying || p.Err == nil {
			return fmt.Errorf("progress %+v", p)
		}
		return nil
	})
	target.Start(t)
	txns := load.Finish(t)
	waitCaughtUp(t, r, source, rn)
	if p := rn.progress(); p.State != StateRunning || p.Retries != 0 {
		t.Errorf("after recovery progress = %+v, want running with no retries pending", p)
	}
	assertSameData(t, source, target, db, db)
	var n int
	target.DB(t).QueryRow("SELECT n FROM " + db + ".counter").Scan(&n)
	if n != txns {
		t.Errorf("target counter = %d, want %d", n, txns)
	}
}

func TestSourceRestartReconnects(t *testing.T) {
	_, target := servers(t)
	source := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{GTIDStrictMode: true,
		ExtraArgs: []string{"--binlog-row-metadata=FULL"}})
	const db = "rt_sdown"
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	cfg := newConfig(t, source, target, db)
	r := openReplicator(t, cfg)
	from := currentPosition(t, r)
	crashload.CreateTables(t, source, db)
	rn := startRun(t, r, from, 1, "test")

	for _, restart := range []func(){
		func() { source.Restart(t) },
		func() { source.Kill(); source.Start(t) },
	} {
		if err := crashload.Txns(source.DB(t), db, 300); err != nil {
			t.Fatal(err)
		}
		waitCaughtUp(t, r, source, rn)
		restart()
		// Rows written after the restart land in a new binlog file.
		if err := crashload.Txns(source.DB(t), db, 300); err != nil {
			t.Fatal(err)
		}
		waitCaughtUp(t, r, source, rn)
		assertSameData(t, source, target, db, db)
	}
	if !rn.sawState(StateRetrying) {
		t.Errorf("Run never reported retrying across two source restarts")
	}
	if p := rn.progress(); !strings.HasSuffix(p.Position.File, ".000003") {
		t.Errorf("checkpoint at %s, want the third binlog file after two restarts", p.Position)
	}
}

// TestSilentSourceIsDetected freezes the source (no FIN, no RST, no
// heartbeats): the reader must notice within a few heartbeat periods,
// report retrying, and resume once the source answers again.
func TestSilentSourceIsDetected(t *testing.T) {
	_, target := servers(t)
	source := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	const db = "rt_silent"
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	cfg := newConfig(t, source, target, db)
	r := openReplicator(t, cfg)
	from := currentPosition(t, r)
	crashload.CreateTables(t, source, db)
	rn := startRun(t, r, from, 1, "test")
	if err := crashload.Txns(source.DB(t), db, 100); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, r, source, rn)

	if err := source.Pause(); err != nil {
		t.Fatal(err)
	}
	// Without heartbeats a silent source is never noticed: the read
	// blocks for good and the wait below runs out.
	coordtest.WaitFor(t, 20*time.Second, "Run noticing the silent source", func() error {
		if p := rn.progress(); p.State != StateRetrying {
			return fmt.Errorf("progress %+v", p)
		}
		return nil
	})
	if err := source.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := crashload.Txns(source.DB(t), db, 100); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, r, source, rn)
	assertSameData(t, source, target, db, db)
}

func TestApplyErrorsAreNonRetryable(t *testing.T) {
	source, target := servers(t)
	const db = "rt_apperr"
	for _, tt := range []struct {
		name    string
		setup   func(t *testing.T)
		trigger string
		want    []string
		code    uint16 // the MySQL error of the ApplyError; 0: not an ApplyError
		chunk   int    // rows of a prepared REPLACE (Config.prepChunkRows)
	}{
		{
			name: "duplicate key the upsert cannot fix",
			setup: func(t *testing.T) {
				// A keyless table on the source gets a unique key on the
				// target only: rows are inserted, not upserted, and clash.
				source.Exec(t, "CREATE TABLE "+db+".nk (a INT)")
				waitTable(t, target, db, "nk")
				target.Exec(t, "ALTER TABLE "+db+".nk ADD UNIQUE KEY ua (a)")
			},
			trigger: "INSERT INTO " + db + ".nk VALUES (1), (1)",
			want:    []string{"INSERT INTO `rt_apperr`.`nk`", "Error 1062", "Duplicate entry"},
			code:    1062,
		},
		{
			name: "value refused inside a prepared chunk",
			setup: func(t *testing.T) {
				// The target's column is narrower: the second row of the
				// 2-row prepared REPLACE is out of range, and the error
				// names it, rendered as text.
				source.Exec(t, "CREATE TABLE "+db+".pk (id INT PRIMARY KEY, v INT)")
				waitTable(t, target, db, "pk")
				target.Exec(t, "ALTER TABLE "+db+".pk MODIFY v TINYINT")
			},
			trigger: "INSERT INTO " + db + ".pk VALUES (1, 1), (2, 1000)",
			want:    []string{"REPLACE INTO `rt_apperr`.`pk`", "(2,1000)", "Error 1264"},
			code:    1264,
			chunk:   2,
		},
		{
			name: "missing table",
			setup: func(t *testing.T) {
				conn, err := source.DB(t).Conn(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				// The connection goes back to the pool: turn logging back on.
				for _, q := range []string{"SET SESSION sql_log_bin = 0", "CREATE TABLE " + db + ".hidden (id INT PRIMARY KEY)", "SET SESSION sql_log_bin = 1"} {
					if _, err := conn.ExecContext(t.Context(), q); err != nil {
						t.Fatal(err)
					}
				}
			},
			trigger: "INSERT INTO " + db + ".hidden VALUES (1)",
			want:    []string{"`rt_apperr`.`hidden`", "does not exist on the target"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dropDBs(t, []*testpeer.MariaDB{source, target}, db)
			cfg := newConfig(t, source, target, db)
			cfg.prepChunkRows = tt.chunk
			r := openReplicator(t, cfg)
			from := currentPosition(t, r)
			source.Exec(t, "CREATE DATABASE "+db)
			rn := startRun(t, r, from, 1, "test")
			tt.setup(t)
			before := currentPosition(t, r)
			waitCaughtUp(t, r, source, rn)
			source.Exec(t, tt.trigger)
			err := runErr(t, rn, 30*time.Second)
			if !errors.Is(err, ErrNonRetryable) {
				t.Fatalf("Run: %v, want ErrNonRetryable", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Run error %q does not say %q", err, w)
				}
			}
			var ae *ApplyError
			if tt.code != 0 {
				var me *mysql.MySQLError
				if !errors.As(err, &ae) || !errors.As(err, &me) || me.Number != tt.code || ae.Source != before {
					t.Errorf("Run error %v: want an ApplyError with MySQL error %d at %s", err, tt.code, before)
				}
			}
			cp, _, _ := r.TargetCheckpoint(t.Context())
			if cp.Position != before {
				t.Errorf("checkpoint moved to %s past the failed transaction (want %s)", cp.Position, before)
			}
		})
	}
}

// waitTable waits until the target has a table (its CREATE replicated).
func waitTable(t *testing.T, target *testpeer.MariaDB, db, table string) {
	t.Helper()
	coordtest.WaitFor(t, 20*time.Second, "table "+db+"."+table+" on the target", func() error {
		var n int
		target.DB(t).QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, table).Scan(&n)
		if n != 1 {
			return errors.New("not there")
		}
		return nil
	})
}

// TestReplayedDDL simulates a crash between running a DDL statement and
// recording its position: the checkpoint is put back before the CREATE
// TABLE that already ran. With the pending-DDL mark the replay treats
// "table exists" as done; without it the same error stops Run, because
// the table might be someone else's.
func TestReplayedDDL(t *testing.T) {
	source, target := servers(t)
	const db = "rt_ddlreplay"
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	cfg := newConfig(t, source, target, db)
	r := openReplicator(t, cfg)
	source.Exec(t, "CREATE DATABASE "+db)
	beforeCreate := currentPosition(t, r)
	source.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+db+".t VALUES (1, 1)")
	rn := startRun(t, r, beforeCreate, 1, "test")
	target.Exec(t, "CREATE DATABASE IF NOT EXISTS "+db)
	waitCaughtUp(t, r, source, rn)
	if err := rn.stop(); err != nil {
		t.Fatal(err)
	}

	rewind := func(pending string) {
		_, err := target.DB(t).Exec("UPDATE shepherd.shepherd_checkpoint SET binlog_file = ?, binlog_pos = ?, gtid = ?, ddl_pending = ? WHERE task = ?",
			beforeCreate.File, beforeCreate.Pos, beforeCreate.GTID, pending, cfg.Task)
		if err != nil {
			t.Fatal(err)
		}
	}

	rewind("")
	err := runErr(t, startRun(t, r, Position{}, 1, "test"), 30*time.Second)
	var me *mysql.MySQLError
	if !errors.Is(err, ErrNonRetryable) || !errors.As(err, &me) || me.Number != 1050 {
		t.Fatalf("replay without the mark: %v, want non-retryable error 1050 (table exists)", err)
	}

	rewind(ddlKey(beforeCreate))
	rn = startRun(t, r, Position{}, 1, "test")
	source.Exec(t, "INSERT INTO "+db+".t VALUES (2, 2)")
	waitCaughtUp(t, r, source, rn)
	assertSameData(t, source, target, db, db)
	var pending string
	target.DB(t).QueryRow("SELECT ddl_pending FROM shepherd.shepherd_checkpoint WHERE task = ?", cfg.Task).Scan(&pending)
	if pending != "" {
		t.Errorf("ddl_pending = %q after the replay, want it cleared", pending)
	}
}

func TestLargeTransactionIsAtomic(t *testing.T) {
	source, target := servers(t)
	const db, rows = "rt_bigtxn", 30000
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	cfg := newConfig(t, source, target, db)
	cfg.MaxTxnRows = 500 // stream the transaction in 60 pieces
	r := openReplicator(t, cfg)
	from := currentPosition(t, r)
	source.Exec(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, pad CHAR(100))")
	rn := startRun(t, r, from, 1, "test")
	waitTable(t, target, db, "t")

	seen := map[int]bool{}
	stop := make(chan struct{})
	observed := make(chan struct{})
	go func() {
		defer close(observed)
		for {
			// The read that follows stop starts after the catch-up, so the
			// observer always sees the committed transaction at least once.
			stopped := false
			select {
			case <-stop:
				stopped = true
			default:
			}
			var n int
			if err := target.DB(t).QueryRow("SELECT COUNT(*) FROM " + db + ".t").Scan(&n); err == nil {
				seen[n] = true
			}
			if stopped {
				return
			}
		}
	}()
	source.Exec(t, "INSERT INTO "+db+".t SELECT seq, REPEAT('x', 100) FROM "+db+".seq_1_to_30000")
	waitCaughtUp(t, r, source, rn)
	close(stop)
	<-observed
	if !seen[0] || !seen[rows] {
		t.Errorf("the observer saw counts %v, want both 0 and %d: it did not watch the apply", seen, rows)
	}
	for n := range seen {
		if n != 0 && n != rows {
			t.Errorf("a reader of the target saw %d rows: part of one source transaction", n)
		}
	}
	assertSameData(t, source, target, db, db)
}

func TestRoutesAndFilters(t *testing.T) {
	source, target := servers(t)
	dropDBs(t, []*testpeer.MariaDB{source, target}, "rt_ra", "rt_rb", "rt_ra2")
	cfg := newConfig(t, source, target, "rt_ra", "rt_rb.keep")
	cfg.Exclude = []string{"rt_ra.skip*"}
	cfg.Routes = []Route{
		{FromDB: "rt_ra", ToDB: "rt_ra2"},
		{FromDB: "rt_rb", FromTable: "keep", ToDB: "rt_ra2", ToTable: "b_keep"},
	}
	r := openReplicator(t, cfg)
	from := currentPosition(t, r)
	source.Exec(t,
		"CREATE DATABASE rt_ra", "CREATE DATABASE rt_rb",
		"CREATE TABLE rt_ra.one (id INT PRIMARY KEY, v VARCHAR(10))",
		"CREATE TABLE rt_ra.skip1 (id INT PRIMARY KEY)",
		"CREATE TABLE rt_rb.keep (id INT PRIMARY KEY, one_id INT, FOREIGN KEY (one_id) REFERENCES rt_ra.one (id))",
		"CREATE TABLE rt_rb.other (id INT PRIMARY KEY)",
		"INSERT INTO rt_ra.one VALUES (1, 'a'), (2, 'b')",
		"INSERT INTO rt_ra.skip1 VALUES (1)",
		"INSERT INTO rt_rb.keep VALUES (1, 1)",
		"INSERT INTO rt_rb.other VALUES (1)",
	)
	rn := startRun(t, r, from, 1, "test")
	source.Exec(t,
		"USE rt_ra",
		"ALTER TABLE one ADD COLUMN w INT DEFAULT 7",
		"UPDATE rt_ra.one SET v = 'c' WHERE id = 2",
		"RENAME TABLE one TO uno",
		"ALTER TABLE rt_rb.keep ADD COLUMN note TEXT",
		"UPDATE rt_rb.keep SET note = 'routed'",
		"DROP TABLE IF EXISTS rt_ra.skip1, rt_rb.keep2_missing_ok",
	)
	waitCaughtUp(t, r, source, rn)

	if got := tables(t, target.DB(t), "rt_ra2"); strings.Join(got, ",") != "b_keep,uno" {
		t.Errorf("target rt_ra2 has tables %q, want b_keep and uno", got)
	}
	if got := tables(t, target.DB(t), "rt_ra"); len(got) != 0 {
		t.Errorf("target has unrouted rt_ra tables %q", got)
	}
	if got := tables(t, target.DB(t), "rt_rb"); len(got) != 0 {
		t.Errorf("target has rt_rb tables %q, want none (keep is routed, other is not included)", got)
	}
	assertSameTable(t, source, target, "rt_ra", "uno", "rt_ra2", "uno")
	var note string
	if err := target.DB(t).QueryRow("SELECT note FROM rt_ra2.b_keep WHERE id = 1").Scan(&note); err != nil || note != "routed" {
		t.Errorf("routed table rt_ra2.b_keep: note %q, %v; want routed", note, err)
	}
}

func TestResolveStartAndGTIDStart(t *testing.T) {
	source, target := servers(t)
	const db = "rt_resolve"
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	r := openReplicator(t, newConfig(t, source, target, db))
	ctx := t.Context()

	var file string
	var pos uint32
	var x, y sql.NullString
	var gtid string
	if err := source.DB(t).QueryRow("SHOW MASTER STATUS").Scan(&file, &pos, &x, &y); err != nil {
		t.Fatal(err)
	}
	source.DB(t).QueryRow("SELECT @@gtid_binlog_pos").Scan(&gtid)
	cur, err := r.ResolveStart(ctx, "current")
	server := "mariadb:" + strconv.FormatUint(uint64(source.ServerID()), 10) // a file position names its server
	if err != nil || cur != (Position{File: file, Pos: pos, GTID: gtid, Server: server}) {
		t.Errorf("ResolveStart(current) = %+v, %v; want %s:%d gtid %s of %s", cur, err, file, pos, gtid, server)
	}
	first, err := r.ResolveStart(ctx, "earliest")
	if err != nil || first.File != "mysql-bin.000001" || first.Pos != 4 {
		t.Errorf("ResolveStart(earliest) = %+v, %v; want mysql-bin.000001:4", first, err)
	}
	if fp, err := r.ResolveStart(ctx, cur.File+":"+fmt.Sprint(cur.Pos)); err != nil || fp != cur {
		t.Errorf("ResolveStart(file:pos) = %+v, %v; want %+v with its GTID filled in", fp, err, cur)
	}
	if gp, err := r.ResolveStart(ctx, gtid); err != nil || gp != (Position{GTID: gtid}) {
		t.Errorf("ResolveStart(%q) = %+v, %v", gtid, gp, err)
	}
	for _, bad := range []string{"", "nonsense", "mysql-bin.000001:2", "mysql-bin.000001:x"} {
		if p, err := r.ResolveStart(ctx, bad); !errors.Is(err, ErrConfig) {
			t.Errorf("ResolveStart(%q) = %+v, %v; want ErrConfig", bad, p, err)
		}
	}
	if _, err := r.ResolveStart(ctx, "mysql-bin.999999:4"); err == nil {
		t.Errorf("ResolveStart of a binlog file the source never wrote succeeded")
	}

	// Run from a GTID state alone: the reader learns the file from the
	// stream and checkpoints carry both.
	rn := startRun(t, r, Position{GTID: gtid}, 1, "test")
	source.Exec(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".t (id INT PRIMARY KEY)", "INSERT INTO "+db+".t VALUES (1), (2)")
	waitCaughtUp(t, r, source, rn)
	assertSameData(t, source, target, db, db)
	cp, _, _ := r.TargetCheckpoint(ctx)
	coordtest.WaitFor(t, 5*time.Second, "progress reporting the checkpoint", func() error {
		if p := rn.progress(); p.Position != cp.Position || p.Position.File == "" || p.Position.GTID == "" {
			return fmt.Errorf("progress at %s, checkpoint at %s; want equal, with a file and a GTID", p.Position, cp.Position)
		}
		return nil
	})
}

// TestCommitMovesCheckpointOnlyFromWhereItWas checks the checkpoint
// UPDATE of a commit against a real target: it moves the position only
// from the one the committer expects (so that of two Runs of one epoch —
// a lost client's packet the target still executes, and the next Run —
// the second to commit rolls back instead of applying a transaction
// again), and only under an epoch at least the stored one.
func TestCommitMovesCheckpointOnlyFromWhereItWas(t *testing.T) {
	source, target := servers(t)
	r := openReplicator(t, newConfig(t, source, target))
	ctx := t.Context()
	conn, err := r.mysql().db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := r.mysql().ckpt.resetEpoch(ctx, conn); err != nil { // a previous -count run left epoch 6
		t.Fatal(err)
	}
	if err := r.mysql().ckpt.claim(ctx, conn, 5, "me"); err != nil {
		t.Fatal(err)
	}
	row, _, err := r.mysql().ckpt.read(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	p0 := row.Position
	p1 := Position{File: "mysql-bin.000001", Pos: 400, GTID: "0-1-4"}
	p2 := Position{File: "mysql-bin.000001", Pos: 800, GTID: "0-1-8"}
	commit := func(prev, pos Position, epoch int64) error {
		state, err := parseFollowedState(pos.GTID + ",0-7-2")
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.ExecContext(ctx, string(r.mysql().ckpt.commitStatement(prev, pos, state, epoch, "me", nil)))
		return err
	}
	if err := commit(p0, p1, 5); err != nil {
		t.Fatalf("commit from the stored position: %v", err)
	}
	for _, tt := range []struct {
		name  string
		prev  Position
		epoch int64
	}{
		{"from a position the checkpoint has left", p0, 5},
		{"from a position it never had", p2, 5},
		{"under an older epoch", p1, 4},
	} {
		if err := commit(tt.prev, p2, tt.epoch); err == nil {
			t.Errorf("commit %s: succeeded, want an error", tt.name)
		}
	}
	if row, _, _ := r.mysql().ckpt.read(ctx, conn); row.Position != p1 {
		t.Errorf("checkpoint at %s after refused commits, want %s", row.Position, p1)
	}
	if err := commit(p1, p2, 6); err != nil {
		t.Fatalf("commit from the stored position under a newer epoch: %v", err)
	}
	if row, _, _ := r.mysql().ckpt.read(ctx, conn); row.Position != p2 || row.Epoch != 6 || row.gtidState != "0-1-8,0-7-2" {
		t.Errorf("checkpoint at %s epoch %d history %q, want %s epoch 6 history 0-1-8,0-7-2", row.Position, row.Epoch, row.gtidState, p2)
	}
}

// TestPreparedStatementsRefusedFallBackToText: a target that refuses
// prepared statements (max_prepared_stmt_count = 0) still gets every row,
// written as text.
func TestPreparedStatementsRefusedFallBackToText(t *testing.T) {
	source, target := servers(t)
	const db = "rt_noprep"
	dropDBs(t, []*testpeer.MariaDB{source, target}, db)
	var limit int
	if err := target.DB(t).QueryRow("SELECT @@GLOBAL.max_prepared_stmt_count").Scan(&limit); err != nil {
		t.Fatal(err)
	}
	target.Exec(t, "SET GLOBAL max_prepared_stmt_count = 0")
	t.Cleanup(func() { target.Exec(t, fmt.Sprintf("SET GLOBAL max_prepared_stmt_count = %d", limit)) })

	cfg := newConfig(t, source, target, db)
	cfg.prepChunkRows = 2
	r := openReplicator(t, cfg)
	from := currentPosition(t, r)
	source.Exec(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO "+db+".t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')",
		"UPDATE "+db+".t SET v = 'z' WHERE id > 2")
	rn := startRun(t, r, from, 1, "test")
	waitCaughtUp(t, r, source, rn)
	if err := rn.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	assertSameData(t, source, target, db, db)
}
