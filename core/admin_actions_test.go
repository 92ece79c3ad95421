package core

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestUpdateTaskIsConditional: an update carrying the version that was
// read succeeds once; a second one with the same, now stale, version is
// refused, so two editors cannot overwrite each other unseen.
func TestUpdateTaskIsConditional(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		ctx := coordtest.Context(t, 30*time.Second)
		a := NewAdmin(dial(t, chrootOf(t, tg), testSessionTimeout), "")
		mustAdd(t, a, testSpec("t1"))
		_, v, err := a.TaskVersion(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		sp := testSpec("t1")
		sp.Filter.Include = []string{"shop.*"}
		if err := a.UpdateTask(ctx, sp, v); err != nil {
			t.Fatalf("update at the version read: %v", err)
		}
		sp.Filter.Include = []string{"other.*"}
		if err := a.UpdateTask(ctx, sp, v); !errors.Is(err, ErrVersionConflict) {
			t.Fatalf("update at a stale version: got %v, want ErrVersionConflict", err)
		}
		got, _, err := a.TaskVersion(ctx, "t1")
		if err != nil || len(got.Filter.Include) != 1 || got.Filter.Include[0] != "shop.*" {
			t.Fatalf("stored spec %+v, %v: want the first update's filter", got, err)
		}
		if err := a.UpdateTask(ctx, testSpec("nope"), AnyVersion); !errors.Is(err, ErrNoTask) {
			t.Fatalf("update of a missing task: got %v, want ErrNoTask", err)
		}
	})
}

// TestHandoverToStandby: a handover makes the standby the RUNNING owner,
// the old owner stands by again behind it, and every event is applied
// exactly once across the change. With no standby it is refused.
func TestHandoverToStandby(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		ctx := coordtest.Context(t, 60*time.Second)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		mustAdd(t, a, testSpec("t1"))
		eng := NewMemEngine(2000)
		hot := func(c *Config) { c.Tasks = []string{"t1"} }
		startCore(t, connect, "h1", eng, hot)
		waitOwner(t, a, "t1", "h1", StateRunning, 10*time.Second)
		if _, err := a.Handover(ctx, "t1"); !errors.Is(err, ErrNoStandby) {
			t.Fatalf("handover without a standby: got %v, want ErrNoStandby", err)
		}
		startCore(t, connect, "h2", eng, hot)
		coordtest.WaitFor(t, 10*time.Second, "h2 to stand by", func() error {
			ts, err := a.Task(ctx, "t1")
			if err != nil || len(ts.Instances) != 2 {
				return fmt.Errorf("instances %v, %v", instanceNames(ts), err)
			}
			return nil
		})
		h, err := a.Handover(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		waitOwner(t, a, "t1", "h2", StateRunning, 10*time.Second)
		coordtest.WaitFor(t, 10*time.Second, "h1 back in line", func() error {
			ts, err := a.Task(ctx, "t1")
			if err != nil || len(ts.Instances) != 2 || ts.Instances[1].Name == h.From {
				return fmt.Errorf("instances %v (old owner node %s), %v", instanceNames(ts), h.From, err)
			}
			return nil
		})
		eng.AddEvents(500)
		waitApplied(t, eng, 20*time.Second)
	})
}

// TestResetPositionPastAFailingEvent: an event that fails for good is
// skipped by stopping the task and skipping the transaction the failure
// names (a position reset to its end); a position behind the target's
// checkpoint and a reset of a running task are refused.
func TestResetPositionPastAFailingEvent(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		ctx := coordtest.Context(t, 60*time.Second)
		ft := startFailedTask(t, tg, func(c *Config) { c.Tasks = []string{"t1"} })
		a, eng := ft.a, ft.eng
		log := slog.New(slog.DiscardHandler)
		past := Position{File: memFile, Pos: 201}
		if _, err := a.ResetPosition(ctx, "t1", past, eng, log); !errors.Is(err, ErrTaskBusy) {
			t.Fatalf("reset of a task not stopped: got %v, want ErrTaskBusy", err)
		}
		if err := a.SetState(ctx, "t1", DesiredStopped); err != nil {
			t.Fatal(err)
		}
		waitOwner(t, a, "t1", "h1", StatePaused, 10*time.Second)
		if _, err := a.ResetPosition(ctx, "t1", Position{File: memFile, Pos: 100}, eng, log); !errors.Is(err, ErrPositionBehind) {
			t.Fatalf("reset behind the target's checkpoint: got %v, want ErrPositionBehind", err)
		}
		// Another server's binlog: the replicator would resume from the
		// checkpoint all the same, so the reset is refused, not stored.
		if _, err := a.ResetPosition(ctx, "t1", Position{File: "replica-bin.000007", Pos: 4}, eng, log); !errors.Is(err, ErrPositionUnordered) {
			t.Fatalf("reset to another binlog: got %v, want ErrPositionUnordered", err)
		}
		// A position the source cannot serve: another server's file
		// offset, a GTID set of a source without GTIDs.
		for _, to := range []string{memFile + ":300@mariadb:2", "0-1-300"} {
			pos, err := ParsePosition(to)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.ResetPosition(ctx, "t1", pos, eng, log); !errors.Is(err, ErrPositionNotOnSource) {
				t.Fatalf("reset to %s: got %v, want ErrPositionNotOnSource", to, err)
			}
		}
		res, err := a.SkipEvent(ctx, "t1", eng, log)
		if past.Server = memServer; err != nil || res.Before.Pos != 200 || res.After != past {
			t.Fatalf("skip: %+v, %v; want it to move from 200 to %v, the end of the failed transaction", res, err, past)
		}
		if _, err := a.SkipEvent(ctx, "t1", eng, log); !errors.Is(err, ErrNoFailure) {
			t.Fatalf("second skip: got %v, want ErrNoFailure (the failure is cleared)", err)
		}
		if err := a.SetState(ctx, "t1", DesiredRunning); err != nil {
			t.Fatal(err)
		}
		coordtest.WaitFor(t, 20*time.Second, "events after 200 applied once, 200 never", func() error {
			eng.mu.Lock()
			defer eng.mu.Unlock()
			for i, n := range eng.applied {
				if want := 1 - boolInt(i == 200); n != want {
					return fmt.Errorf("event %d applied %d times, want %d", i, n, want)
				}
			}
			return nil
		})
	})
}

// TestCheckResetTarget: a reset is checked against the target's
// checkpoint with the one ordering of positions: files by number, and
// positions of different binlogs ordered only by GTID.
func TestCheckResetTarget(t *testing.T) {
	cp := Position{File: "mysql-bin.999999", Pos: 500, GTID: "0-1-100"}
	for _, tt := range []struct {
		pos  Position
		want error
	}{
		{Position{File: "mysql-bin.1000000", Pos: 4}, nil}, // text order would call it behind
		{Position{File: "mysql-bin.999999", Pos: 500}, nil},
		{Position{File: "mysql-bin.999999", Pos: 400}, ErrPositionBehind},
		{Position{File: "mysql-bin.99999", Pos: 900}, ErrPositionBehind}, // text order would call it later
		{Position{File: "replica-bin.000002", Pos: 4}, ErrPositionUnordered},
		{Position{File: "replica-bin.000002", Pos: 4, GTID: "0-1-120"}, nil},
		{Position{File: "replica-bin.000002", Pos: 4, GTID: "0-1-90"}, ErrPositionBehind},
		// A GTID set alone, ordered by GTID state only.
		{Position{GTID: "0-1-100"}, nil},
		{Position{GTID: "0-1-101,1-2-3"}, nil},
		{Position{GTID: "0-1-99"}, ErrPositionBehind},
		{Position{GTID: "1-2-3"}, ErrPositionUnordered},
		// Same file names, another server: only a GTID state orders them.
		{Position{File: "mysql-bin.999999", Pos: 900, Server: "mariadb:2"}, nil}, // the checkpoint's server is unknown
	} {
		err := checkResetTarget(FlavorMariaDB, tt.pos, cp)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("reset to %s against %s: %v, want %v", tt.pos, cp, err, tt.want)
		}
	}
}

// TestCheckResetTargetOfAServer: with the checkpoint's server known, a
// file position of another server is ordered by its GTID state alone.
func TestCheckResetTargetOfAServer(t *testing.T) {
	cp := Position{File: "mysql-bin.999999", Pos: 500, GTID: "0-1-100", Server: "mariadb:1"}
	for _, tt := range []struct {
		pos  Position
		want error
	}{
		{Position{File: "mysql-bin.1000000", Pos: 4, Server: "mariadb:1"}, nil},
		{Position{File: "mysql-bin.1000000", Pos: 4, Server: "mariadb:2"}, ErrPositionUnordered},
		{Position{File: "mysql-bin.000001", Pos: 4, GTID: "0-1-101", Server: "mariadb:2"}, nil},
		{Position{File: "mysql-bin.1000000", Pos: 4, GTID: "0-1-99", Server: "mariadb:2"}, ErrPositionBehind},
	} {
		err := checkResetTarget(FlavorMariaDB, tt.pos, cp)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("reset to %+v against %+v: %v, want %v", tt.pos, cp, err, tt.want)
		}
	}
}

// TestParsePosition: what ctl task reset-position --to and the console
// take — file:pos, file:pos@server, a GTID set of either flavor — and a
// clear refusal of anything else.
func TestParsePosition(t *testing.T) {
	const uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	for _, tt := range []struct {
		in     string
		want   Position
		errHas string
	}{
		{" mysql-bin.000003:4 ", Position{File: "mysql-bin.000003", Pos: 4}, ""},
		{"mysql-bin.1000000:120@mariadb:2", Position{File: "mysql-bin.1000000", Pos: 120, Server: "mariadb:2"}, ""},
		{"mysql-bin.000003:4@mysql:" + uuid, Position{File: "mysql-bin.000003", Pos: 4, Server: "mysql:" + uuid}, ""},
		{"1-2-9,0-1-57", Position{GTID: "0-1-57,1-2-9"}, ""},
		{uuid + ":1-57", Position{GTID: uuid + ":1-57"}, ""},
		{"nowhere", Position{}, "want file:pos"},
		{"0-1-x", Position{}, "not a MariaDB GTID position"},
		{uuid + ":57-1", Position{}, "not a MySQL GTID set"},
		{"mysql-bin.000003:2", Position{}, "inside the file header"},
		{"mysql-bin.000003:4@", Position{}, "names no server after @"},
		{"mysql-bin.000003:4@mariadb:one", Position{}, "want mariadb:<server_id>"},
		{"0-1-57@mariadb:1", Position{}, "a GTID set is of no one server"},
	} {
		got, err := ParsePosition(tt.in)
		switch {
		case tt.errHas == "" && err != nil, tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
			t.Errorf("ParsePosition(%q): %v; want an error saying %q", tt.in, err, tt.errHas)
		case err != nil && !errors.Is(err, ErrInvalidSpec):
			t.Errorf("ParsePosition(%q): %v does not wrap ErrInvalidSpec", tt.in, err)
		case got != tt.want:
			t.Errorf("ParsePosition(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
