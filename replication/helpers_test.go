package replication

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// The integration tests share one source and one target mariadbd, started
// by TestMain; each test works in databases of its own and replicates only
// those (Include), so tests do not see each other's rows even though they
// read the same binlog. Tests that stop or break a server start their own.

var shared struct {
	source, target *testpeer.MariaDB
	err            error
}

// sourceArgs run the shared source in a non-UTC time zone, so that a
// TIMESTAMP replicated through local time would show up as a difference.
var sourceArgs = []string{"--default-time-zone=+05:30"}

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	var dirs []string
	if _, ok := testpeer.MariaDBAvailable(); ok {
		launch := func(o testpeer.MariaDBOptions) *testpeer.MariaDB {
			dir, err := os.MkdirTemp("", "replication-test-")
			if err != nil {
				shared.err = err
				return nil
			}
			dirs = append(dirs, dir)
			db, err := testpeer.LaunchMariaDB(dir, o)
			if err != nil {
				shared.err = err
			}
			return db
		}
		shared.source = launch(testpeer.MariaDBOptions{ExtraArgs: sourceArgs})
		shared.target = launch(testpeer.MariaDBOptions{})
	}
	code := m.Run()
	for _, s := range []*testpeer.MariaDB{shared.source, shared.target} {
		if s != nil {
			s.Close()
		}
	}
	for _, d := range dirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// servers returns the shared source and target, or ends the test when
// MariaDB is unavailable (skip, or failure under SHEPHERD_IT=1).
func servers(t testing.TB) (source, target *testpeer.MariaDB) {
	t.Helper()
	why, ok := testpeer.MariaDBAvailable()
	testpeer.Require(t, "MariaDB", ok, why)
	if shared.err != nil || shared.source == nil || shared.target == nil {
		t.Fatalf("shared MariaDB servers did not start: %v", shared.err)
	}
	return shared.source, shared.target
}

func endpoint(m *testpeer.MariaDB) Endpoint {
	return Endpoint{Host: m.Host(), Port: m.Port(), User: "root"}
}

// newConfig is a Config replicating the given databases from source to
// target, with a task name unique to the test.
func newConfig(t testing.TB, source, target *testpeer.MariaDB, dbs ...string) Config {
	return Config{
		Task:            strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()),
		Source:          endpoint(source),
		Target:          endpoint(target),
		Include:         dbs,
		HeartbeatPeriod: 200 * time.Millisecond,
		MaxBackoff:      500 * time.Millisecond,
		Logger:          coordtest.Logger(t),
	}
}

func openReplicator(t testing.TB, cfg Config) *Replicator {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// run is a Run in the background.
type run struct {
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	last   Progress
	states []State
}

// startRun starts r.Run from `from`; stop ends it.
func startRun(t testing.TB, r *Replicator, from Position, epoch int64, owner string) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rn := &run{cancel: cancel, done: make(chan error, 1)}
	go func() {
		rn.done <- r.Run(ctx, from, epoch, owner, func(p Progress) {
			rn.mu.Lock()
			defer rn.mu.Unlock()
			rn.last = p
			if len(rn.states) == 0 || rn.states[len(rn.states)-1] != p.State {
				rn.states = append(rn.states, p.State)
			}
		})
	}()
	t.Cleanup(func() { rn.stop() })
	return rn
}

// stop cancels the Run and returns its error, which must be the context's.
func (rn *run) stop() error {
	rn.cancel()
	select {
	case err := <-rn.done:
		rn.done <- err // keep it for a second stop
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("Run did not return within 30s of cancel")
	}
}

func (rn *run) progress() Progress {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.last
}

func (rn *run) sawState(s State) bool {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return slices.Contains(rn.states, s)
}

// currentPosition is where the source's binlog ends now.
func currentPosition(t testing.TB, r *Replicator) Position {
	t.Helper()
	p, err := r.ResolveStart(context.Background(), "current")
	if err != nil {
		t.Fatalf("ResolveStart(current): %v", err)
	}
	return p
}

// waitCaughtUp waits until the target's checkpoint covers every
// transaction the source has logged so far (by GTID state).
func waitCaughtUp(t testing.TB, r *Replicator, source *testpeer.MariaDB, rn *run) {
	t.Helper()
	var want string
	if err := source.DB(t).QueryRow("SELECT @@gtid_binlog_pos").Scan(&want); err != nil {
		t.Fatalf("read source gtid_binlog_pos: %v", err)
	}
	coordtest.WaitFor(t, 60*time.Second, "target catching up with source GTID "+want, func() error {
		if rn != nil {
			select {
			case err := <-rn.done:
				rn.done <- err
				return fmt.Errorf("Run returned: %w", err)
			default:
			}
		}
		cp, ok, err := r.TargetCheckpoint(context.Background())
		if err != nil || !ok {
			return fmt.Errorf("checkpoint %v, %v", ok, err)
		}
		if c, ok := ComparePositions(FlavorMariaDB, Position{GTID: cp.Position.GTID}, Position{GTID: want}); !ok || c < 0 {
			return fmt.Errorf("checkpoint at %s", cp.Position)
		}
		return nil
	})
}

// tableDigest summarises a table's rows as sorted per-row hashes of the
// values the server returns, so that two tables with the same rows in any
// order have the same digest. It returns the digest and the row count.
func tableDigest(t testing.TB, db *sql.DB, schema, table string) (string, int) {
	t.Helper()
	rows, err := db.Query("SELECT * FROM " + qualified(schema, table))
	if err != nil {
		t.Fatalf("read %s.%s: %v", schema, table, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var hashes []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("read %s.%s: %v", schema, table, err)
		}
		h := sha256.New()
		for _, v := range vals {
			if v == nil {
				io.WriteString(h, "N")
			} else {
				fmt.Fprintf(h, "V%d:", len(v))
				h.Write(v)
			}
		}
		hashes = append(hashes, hex.EncodeToString(h.Sum(nil)))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read %s.%s: %v", schema, table, err)
	}
	slices.Sort(hashes)
	h := sha256.Sum256([]byte(strings.Join(hashes, "\n")))
	return hex.EncodeToString(h[:8]), len(hashes)
}

// tables lists the base tables of a database.
func tables(t testing.TB, db *sql.DB, schema string) []string {
	t.Helper()
	rows, err := db.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME", schema)
	if err != nil {
		t.Fatalf("list tables of %s: %v", schema, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	return names
}

// createTable returns SHOW CREATE TABLE without the AUTO_INCREMENT
// counter, which legitimately differs after deletes.
func createTable(t testing.TB, db *sql.DB, schema, table string) string {
	t.Helper()
	var name, ddl string
	if err := db.QueryRow("SHOW CREATE TABLE "+qualified(schema, table)).Scan(&name, &ddl); err != nil {
		t.Fatalf("SHOW CREATE TABLE %s.%s: %v", schema, table, err)
	}
	var out []string
	for _, f := range strings.Fields(ddl) {
		if !strings.HasPrefix(f, "AUTO_INCREMENT=") {
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}

// assertSameData compares every table of srcDB on the source with the
// same-named table of dstDB on the target: names, definitions and rows.
func assertSameData(t testing.TB, source, target *testpeer.MariaDB, srcDB, dstDB string) {
	t.Helper()
	st, dt := tables(t, source.DB(t), srcDB), tables(t, target.DB(t), dstDB)
	if !slices.Equal(st, dt) {
		t.Fatalf("tables differ: source %s has %q, target %s has %q", srcDB, st, dstDB, dt)
	}
	for _, table := range st {
		assertSameTable(t, source, target, srcDB, table, dstDB, table)
	}
}

// assertSameTable compares one table's rows and definition.
func assertSameTable(t testing.TB, source, target *testpeer.MariaDB, srcDB, srcTable, dstDB, dstTable string) {
	t.Helper()
	sd, sn := tableDigest(t, source.DB(t), srcDB, srcTable)
	dd, dn := tableDigest(t, target.DB(t), dstDB, dstTable)
	if sd != dd {
		t.Errorf("source %s.%s has %d rows (digest %s), target %s.%s has %d rows (digest %s)%s",
			srcDB, srcTable, sn, sd, dstDB, dstTable, dn, dd, firstDifference(source.DB(t), target.DB(t), srcDB, srcTable, dstDB, dstTable))
	}
	norm := func(ddl, db, table string) string {
		ddl = strings.ReplaceAll(ddl, quoteIdent(db)+".", "")
		return strings.Replace(ddl, "TABLE "+quoteIdent(table), "TABLE `t`", 1)
	}
	sc := norm(createTable(t, source.DB(t), srcDB, srcTable), srcDB, srcTable)
	dc := norm(createTable(t, target.DB(t), dstDB, dstTable), dstDB, dstTable)
	if sc != dc {
		t.Errorf("definitions of %s.%s and %s.%s differ:\nsource: %s\ntarget: %s", srcDB, srcTable, dstDB, dstTable, sc, dc)
	}
}

// firstDifference finds a row present on one side only, for the message.
func firstDifference(src, dst *sql.DB, srcDB, srcTable, dstDB, dstTable string) string {
	read := func(db *sql.DB, schema, table string) map[string]int {
		rows, err := db.Query("SELECT * FROM " + qualified(schema, table))
		if err != nil {
			return nil
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		out := map[string]int{}
		for rows.Next() {
			rows.Scan(ptrs...)
			var parts []string
			for _, v := range vals {
				if v.Valid {
					parts = append(parts, fmt.Sprintf("%q", v.String))
				} else {
					parts = append(parts, "NULL")
				}
			}
			out[strings.Join(parts, ",")]++
		}
		return out
	}
	a, b := read(src, srcDB, srcTable), read(dst, dstDB, dstTable)
	for k, n := range a {
		if b[k] != n {
			return fmt.Sprintf("; source has %d× (%s), target %d×", n, k, b[k])
		}
	}
	for k, n := range b {
		if a[k] != n {
			return fmt.Sprintf("; target has %d× (%s), source %d×", n, k, a[k])
		}
	}
	return ""
}

// dropDBs drops databases on both servers when the test ends.
func dropDBs(t testing.TB, servers []*testpeer.MariaDB, dbs ...string) {
	t.Cleanup(func() {
		for _, s := range servers {
			for _, d := range dbs {
				s.DB(t).Exec("DROP DATABASE IF EXISTS " + quoteIdent(d))
			}
		}
	})
	for _, s := range servers {
		for _, d := range dbs {
			if _, err := s.DB(t).Exec("DROP DATABASE IF EXISTS " + quoteIdent(d)); err != nil {
				t.Fatalf("drop %s: %v", d, err)
			}
		}
	}
}

// mysql is r's sink, which the tests open as the MySQL one, for tests that
// reach into its checkpoint row.
func (r *Replicator) mysql() *mysqlTarget { return r.sink.(*mysqlTarget) }
