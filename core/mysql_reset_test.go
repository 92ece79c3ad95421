package core

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// TestMySQLResetPositionToGTID: a stopped task between two mariadbd
// servers is reset, as ctl task reset-position does it:
//   - to file:pos: lastCommit stores it with the GTID state the source has
//     there and the source's identity;
//   - to another server's file:pos, or to a GTID set the source has not
//     written: refused, nothing stored;
//   - to a GTID set past the target's checkpoint: lastCommit stores the set
//     alone, and once started the task resumes there by GTID — the
//     transaction inside the set is skipped, the ones after it are applied
//     once — and commits file positions of the source again.
func TestMySQLResetPositionToGTID(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		source, target := sharedMariaDB(t)
		ctx := coordtest.Context(t, 2*time.Minute)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		log := slog.New(slog.DiscardHandler)
		db := testDB("reset")
		for _, m := range []*testpeer.MariaDB{source, target} {
			m.Exec(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".t (id INT PRIMARY KEY)")
		}
		task := "reset_" + db
		mustAdd(t, a, mysqlSpec(task, db, source, target))
		startCore(t, connect, "h1", MySQL{}, func(c *Config) { c.Tasks = []string{task} })
		waitOwner(t, a, task, "h1", StateRunning, 30*time.Second)
		waitStartsPinned(t, ctx, a, []string{task})

		src := source.DB(t)
		insert := func(ids ...int) {
			t.Helper()
			for _, id := range ids { // a transaction each
				if _, err := src.ExecContext(ctx, "INSERT INTO "+db+".t VALUES (?)", id); err != nil {
					t.Fatal(err)
				}
			}
		}
		gtidNow := func() string {
			t.Helper()
			var g string
			if err := src.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&g); err != nil {
				t.Fatal(err)
			}
			return g
		}
		waitRows := func(want string) {
			t.Helper()
			coordtest.WaitFor(t, 30*time.Second, "target rows "+want, func() error {
				var got string
				err := target.DB(t).QueryRowContext(ctx, "SELECT COALESCE(GROUP_CONCAT(id ORDER BY id), '') FROM "+db+".t").Scan(&got)
				if err != nil || got != want {
					return fmt.Errorf("rows %q, %v", got, err)
				}
				return nil
			})
		}
		reset := func(to string) (PositionReset, error) {
			t.Helper()
			pos, err := ParsePosition(to)
			if err != nil {
				t.Fatalf("ParsePosition(%q): %v", to, err)
			}
			return a.ResetPosition(ctx, task, pos, MySQL{}, log)
		}
		lastCommit := func() LastCommit {
			t.Helper()
			lc, _, err := readLastCommit(ctx, a.s, a.layout.LastCommit(task))
			if err != nil {
				t.Fatal(err)
			}
			return lc
		}

		insert(1, 2, 3)
		waitRows("1,2,3")
		if err := a.SetState(ctx, task, DesiredStopped); err != nil {
			t.Fatal(err)
		}
		waitOwner(t, a, task, "h1", StatePaused, 30*time.Second)

		insert(4) // inside the GTID set reset to below: skipped
		skipTo := gtidNow()
		insert(5, 6)
		server := "mariadb:" + strconv.FormatUint(uint64(source.ServerID()), 10)

		// file:pos: completed with the source's GTID state there and its
		// identity.
		var file string
		var pos uint32
		var doDB, ignoreDB string
		if err := src.QueryRowContext(ctx, "SHOW MASTER STATUS").Scan(&file, &pos, &doDB, &ignoreDB); err != nil {
			t.Fatal(err)
		}
		res, err := reset(fmt.Sprintf("%s:%d", file, pos))
		want := Position{File: file, Pos: pos, GTID: gtidNow(), Server: server}
		if err != nil || res.After != want {
			t.Fatalf("reset to %s:%d: %+v, %v; want it completed to %+v", file, pos, res.After, err, want)
		}
		if lc := lastCommit(); lc.Position() != want {
			t.Fatalf("lastCommit after the file:pos reset: %+v, want %+v", lc, want)
		}

		// Refused: an offset of another server, and transactions the
		// source has not written.
		seq := skipTo[strings.LastIndexByte(skipTo, '-')+1:]
		n, err := strconv.Atoi(seq)
		if err != nil || strings.Contains(skipTo, ",") {
			t.Fatalf("source GTID state %q: want one domain", skipTo)
		}
		beyond := skipTo[:len(skipTo)-len(seq)] + strconv.Itoa(n+1000)
		for _, to := range []string{
			fmt.Sprintf("%s:%d@mariadb:%d", file, pos, source.ServerID()+1),
			beyond,
		} {
			if _, err := reset(to); !errors.Is(err, ErrPositionNotOnSource) {
				t.Errorf("reset to %s: %v, want ErrPositionNotOnSource", to, err)
			}
		}
		if lc := lastCommit(); lc.Position() != want {
			t.Fatalf("lastCommit after refused resets: %+v, want %+v kept", lc, want)
		}

		// A GTID set: stored alone, and resumed from.
		res, err = reset(skipTo)
		if err != nil || res.After != (Position{GTID: skipTo}) {
			t.Fatalf("reset to %s: %+v, %v; want the GTID set alone", skipTo, res.After, err)
		}
		if lc := lastCommit(); lc.Position() != (Position{GTID: skipTo}) {
			t.Fatalf("lastCommit after the GTID reset: %+v, want gtid %s alone", lc, skipTo)
		}
		if err := a.SetState(ctx, task, DesiredRunning); err != nil {
			t.Fatal(err)
		}
		waitOwner(t, a, task, "h1", StateRunning, 30*time.Second)
		insert(7)
		waitRows("1,2,3,5,6,7")
		end := gtidNow()
		coordtest.WaitFor(t, 30*time.Second, "lastCommit at the end, a file position of "+server, func() error {
			lc := lastCommit()
			if lc.GTID != end || lc.File == "" || lc.Server != server {
				return fmt.Errorf("lastCommit %+v; want gtid %s, a file, server %s", lc, end, server)
			}
			return nil
		})
		var cpGTID string
		if err := target.DB(t).QueryRowContext(ctx, "SELECT gtid FROM shepherd.shepherd_checkpoint WHERE task = ?", task).Scan(&cpGTID); err != nil || cpGTID != end {
			t.Errorf("target checkpoint gtid %q, %v; want %s", cpGTID, err, end)
		}
		waitRows("1,2,3,5,6,7") // and nothing applied twice or late
	})
}
