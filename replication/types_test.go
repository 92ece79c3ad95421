package replication

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/rowtypes"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

func TestReplicateTypesDMLAndDDL(t *testing.T) {
	source, target := servers(t)
	dropDBs(t, []*testpeer.MariaDB{source, target}, "rt_types")
	cfg := newConfig(t, source, target, "rt_types")
	r := openReplicator(t, cfg)
	from := currentPosition(t, r)

	source.Exec(t, "CREATE DATABASE rt_types", rowtypes.AllTypes,
		"CREATE TABLE rt_types.nokey (a INT, b VARCHAR(10), f FLOAT, t TEXT)",
		"CREATE TABLE rt_types.uk (a INT NOT NULL, b INT, c VARCHAR(5), UNIQUE KEY ua (a))",
		"CREATE TABLE rt_types.composite (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))",
		"CREATE TABLE rt_types.ci (k VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci PRIMARY KEY, v INT)",
	)
	source.Exec(t, rowtypes.Rows...)
	rn := startRun(t, r, from, 1, "test")

	source.Exec(t,
		// Updates in place, to NULL and back, and of the primary key.
		"UPDATE rt_types.alltypes SET tiu = 254, f = f * 2, vc = CONCAT(vc, 'x'), n = 1 WHERE id IN (1, 9)",
		"UPDATE rt_types.alltypes SET id = id + 100 WHERE id IN (2, 3)",
		"UPDATE rt_types.alltypes SET j = NULL, e = NULL, s = 'y', b64 = 0 WHERE id = 6",
		"DELETE FROM rt_types.alltypes WHERE id = 7",
		// Keyless: duplicate rows, one deleted, one updated; float match.
		"INSERT INTO rt_types.nokey VALUES (1, 'x', 1.1, 'a'), (1, 'x', 1.1, 'a'), (2, NULL, NULL, NULL), (3, 'A', 2.5, 'b')",
		"DELETE FROM rt_types.nokey WHERE a = 1 LIMIT 1",
		"UPDATE rt_types.nokey SET b = 'y' WHERE a = 2",
		"UPDATE rt_types.nokey SET t = 'c' WHERE f = 2.5",
		// Unique NOT NULL key as the identity, and a case-insensitive key.
		"INSERT INTO rt_types.uk VALUES (1, 1, 'a'), (2, NULL, 'b')",
		"UPDATE rt_types.uk SET a = 3 WHERE a = 1",
		"INSERT INTO rt_types.ci VALUES ('abc', 1)",
		"UPDATE rt_types.ci SET k = 'ABC' WHERE k = 'abc'",
		// Composite key: shift every key in one statement.
		"INSERT INTO rt_types.composite VALUES (1, 'a', 1), (2, 'a', 2), (3, 'b', 3)",
		"UPDATE rt_types.composite SET a = a + 1 ORDER BY a DESC",
		"DELETE FROM rt_types.composite WHERE a = 4 AND b = 'b'",
	)
	waitCaughtUp(t, r, source, rn)
	assertSameData(t, source, target, "rt_types", "rt_types")

	// DDL in the middle of traffic: columns, renames, indexes, truncate,
	// LIKE, drop; rows written under each shape.
	source.Exec(t,
		"ALTER TABLE rt_types.alltypes ADD COLUMN added VARCHAR(10) DEFAULT 'dflt' AFTER id, DROP COLUMN n",
		"INSERT INTO rt_types.alltypes (id, added, vc) VALUES (200, 'new', 'after alter')",
		"UPDATE rt_types.alltypes SET added = 'upd' WHERE id = 1",
		"RENAME TABLE rt_types.uk TO rt_types.uk2",
		"INSERT INTO rt_types.uk2 VALUES (9, 9, 'z')",
		"CREATE INDEX ib ON rt_types.uk2 (b)",
		"CREATE TABLE rt_types.copy LIKE rt_types.composite",
		"INSERT INTO rt_types.copy SELECT * FROM rt_types.composite",
		"TRUNCATE rt_types.composite",
		"ALTER TABLE rt_types.nokey RENAME TO rt_types.nokey2, ADD COLUMN z INT",
		"INSERT INTO rt_types.nokey2 VALUES (5, 'e', 5.5, 'e', 5)",
		"CREATE TABLE rt_types.gone (a INT PRIMARY KEY)",
		"INSERT INTO rt_types.gone VALUES (1)",
		"DROP TABLE rt_types.gone",
		"CREATE TABLE rt_types.ctas (PRIMARY KEY (id)) SELECT id, vc FROM rt_types.alltypes WHERE id < 10",
	)
	waitCaughtUp(t, r, source, rn)
	assertSameData(t, source, target, "rt_types", "rt_types")

	cp, ok, err := r.TargetCheckpoint(t.Context())
	if err != nil || !ok || cp.Epoch != 1 || cp.Owner != "test" || time.Since(cp.Time) > time.Minute || cp.Time.After(time.Now().Add(time.Second)) {
		t.Errorf("TargetCheckpoint = %+v, %v, %v; want epoch 1 by test, written just now", cp, ok, err)
	}
	// Progress trails commits by at most progressEvery, and reports no
	// lag once the source has sent a heartbeat after the last transaction.
	coordtest.WaitFor(t, 10*time.Second, "progress reporting the checkpoint with no lag", func() error {
		p := rn.progress()
		if p.State != StateRunning || p.Epoch != 1 || p.AppliedRows == 0 || p.AppliedTxns == 0 ||
			p.Position != cp.Position || p.Position.GTID == "" || p.LagSeconds != 0 {
			return fmt.Errorf("progress %+v, checkpoint at %s", p, cp.Position)
		}
		return nil
	})
	if err := r.Run(t.Context(), Position{}, 1, "second", nil); !errors.Is(err, ErrBusy) {
		t.Errorf("a second concurrent Run returned %v, want ErrBusy", err)
	}
	if err := rn.stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	if r.rowDec.ours.Load() == 0 {
		t.Errorf("no rows event was decoded by the fast path (go-mysql: %d)", r.rowDec.theirs.Load())
	}
	r.Close()
	if err := r.Run(t.Context(), cp.Position, 1, "test", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close returned %v, want ErrClosed", err)
	}
}
