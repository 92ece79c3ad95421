package core

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/duration"
)

func TestDecideSwitch(t *testing.T) {
	down := SourceHealth{Addr: "p:1", Err: errors.New("connection refused")}
	primary := SourceHealth{Addr: "p:1", Server: "s1", LogBin: true, LogReplicaUpdates: true, GTID: "0-1-5"}
	replica := func(addr string, readOnly bool) SourceHealth {
		return SourceHealth{Addr: addr, Server: "s-" + addr, ReadOnly: readOnly, LogBin: true, LogReplicaUpdates: true, GTID: "0-1-5"}
	}
	noUpdates := replica("r0:1", false)
	noUpdates.LogReplicaUpdates = false
	behind := replica("r1:1", false)
	behind.GTID = "0-1-4"
	demoted := primary
	demoted.ReadOnly = true
	for _, tt := range []struct {
		name   string
		active SourceHealth
		down   time.Duration
		others []SourceHealth
		want   string
	}{
		{"healthy primary stays", primary, 0, []SourceHealth{replica("r1:1", false)}, ""},
		{"down for less than failoverAfter stays", down, 29 * time.Second, []SourceHealth{replica("r1:1", true)}, ""},
		{"down long enough: a writable candidate first", down, 30 * time.Second, []SourceHealth{replica("r1:1", true), replica("r2:1", false)}, "r2:1"},
		{"down long enough: else the first that can serve", down, time.Minute, []SourceHealth{{Addr: "r1:1", Err: errors.New("x")}, replica("r2:1", true)}, "r2:1"},
		{"a candidate without log_slave_updates cannot serve", down, time.Minute, []SourceHealth{noUpdates}, ""},
		{"a candidate behind the checkpoint cannot take over", down, time.Minute, []SourceHealth{behind, replica("r2:1", true)}, "r2:1"},
		{"read-only source leaves for a writable one", demoted, 0, []SourceHealth{replica("r1:1", true), replica("r2:1", false)}, "r2:1"},
		{"read-only source stays when none is writable", demoted, 0, []SourceHealth{replica("r1:1", true)}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := decideSwitch(tt.active, tt.down, 30*time.Second, tt.others, FlavorMariaDB, Checkpoint{Position: Position{File: "b.000001", Pos: 4, GTID: "0-1-5"}})
			if got != tt.want {
				t.Fatalf("decideSwitch = %q (%s), want %q", got, reason, tt.want)
			}
		})
	}
}

func TestSourceCandidatesInSpec(t *testing.T) {
	sp := testSpec("t1")
	sp.Source.Host, sp.Source.Port = "p.test", 3306
	sp.Source.Hosts = []string{"r1.test:3307", "[::1]:3308"}
	if err := sp.Validate(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range sp.Source.Candidates() {
		got = append(got, e.Addr())
	}
	if want := []string{"p.test:3306", "r1.test:3307", "[::1]:3308"}; !slices.Equal(got, want) {
		t.Fatalf("candidates %v, want %v", got, want)
	}
	if a := sp.ActiveSource(LastCommit{Source: "r1.test:3307"}).Addr(); a != "r1.test:3307" {
		t.Fatalf("active source after a switch: %s", a)
	}
	if a := sp.ActiveSource(LastCommit{Source: "gone.test:3306"}).Addr(); a != "p.test:3306" {
		t.Fatalf("active source recorded but no longer a candidate: %s, want the primary", a)
	}
	for _, bad := range []struct {
		hosts []string
		after time.Duration
		want  string
	}{
		{[]string{"r1.test"}, 0, "want host:port"},
		{[]string{"r1.test:0"}, 0, "want 1-65535"},
		{[]string{"p.test:3306"}, 0, "given twice"},
		{[]string{"target.test:3306"}, 0, "is the target"},
		{nil, time.Minute, "needs source.hosts"},
		{[]string{"r1.test:3306"}, time.Millisecond, "at least"},
	} {
		sp := testSpec("t1")
		sp.Source.Host, sp.Source.Port = "p.test", 3306
		sp.Source.Hosts, sp.Source.FailoverAfter = bad.hosts, duration.Duration(bad.after)
		if err := sp.Validate(); err == nil || !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("hosts %v failoverAfter %v: got %v, want an ErrInvalidSpec saying %q", bad.hosts, bad.after, err, bad.want)
		}
	}
	doc := []byte("name: t1\nsource: {host: p.test, user: repl, hosts: ['r1.test:3306'], failoverAfter: 5s}\ntarget: {host: t.test, user: u}\n")
	parsed, err := ParseSpec(doc)
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Source.FailoverAfter.D() != 5*time.Second || len(parsed.Source.Hosts) != 1 || parsed.Source.Host != "p.test" {
		t.Fatalf("parsed source %+v", parsed.Source)
	}
	again, err := decodeStoredSpec("t1", parsed.Marshal())
	if err != nil || again.Source.FailoverAfter != parsed.Source.FailoverAfter || !slices.Equal(again.Source.Hosts, parsed.Source.Hosts) {
		t.Fatalf("stored spec round trip: %+v, %v", again, err)
	}
}

// TestSourceFailover: a RUNNING task with source candidates leaves a
// source unreachable for failoverAfter for a writable candidate, leaves
// a read-only source for a writable one, and switches on an operator's
// request; each switch is recorded in lastCommit, and across them every
// event is applied exactly once.
func TestSourceFailover(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		ctx := coordtest.Context(t, 90*time.Second)
		connect := chrootOf(t, tg)
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		sp := testSpec("t1")
		sp.Source.Host, sp.Source.Port = "p.test", 3306
		sp.Source.Hosts = []string{"r1.test:3306", "r2.test:3306"}
		sp.Source.FailoverAfter = duration.Duration(time.Second)
		mustAdd(t, a, sp)
		eng := NewMemEngine(3000)
		eng.delay = time.Millisecond
		startCore(t, connect, "h1", eng, func(c *Config) { c.Tasks = []string{"t1"} })
		waitOwner(t, a, "t1", "h1", StateRunning, 10*time.Second)

		const everything = memEverything
		waitSwitch := func(to, reason string) {
			t.Helper()
			coordtest.WaitFor(t, 30*time.Second, "a switch to "+to, func() error {
				ts, err := a.Task(ctx, "t1")
				if err != nil {
					return err
				}
				if lc := ts.LastCommit; lc == nil || lc.Source != to || lc.Switch == nil || lc.Switch.To != to {
					return fmt.Errorf("lastCommit %+v", ts.LastCommit)
				}
				if !strings.Contains(ts.LastCommit.Switch.Reason, reason) {
					return fmt.Errorf("switch reason %q, want %q", ts.LastCommit.Switch.Reason, reason)
				}
				return nil
			})
			eng.AddEvents(1000) // applied from the new source
		}
		// The primary dies: after failoverAfter the task reads the
		// writable candidate, though r1 comes first.
		eng.SetSource("p.test:3306", SourceHealth{Err: errors.New("connection refused")})
		eng.SetSource("r1.test:3306", SourceHealth{Server: "r1", ReadOnly: true, LogBin: true, LogReplicaUpdates: true, GTID: everything})
		waitSwitch("r2.test:3306", "unreachable")

		// r2 is demoted and r1 promoted.
		eng.SetSource("r2.test:3306", SourceHealth{Server: "r2", ReadOnly: true, LogBin: true, LogReplicaUpdates: true, GTID: everything})
		eng.SetSource("r1.test:3306", SourceHealth{Server: "r1", LogBin: true, LogReplicaUpdates: true, GTID: everything})
		waitSwitch("r1.test:3306", "read-only")

		// An operator moves it back to the primary, repaired. r1 stays
		// writable meanwhile: were it read-only, the task would leave it
		// for the writable primary by itself, before or after the
		// request, and the switch would not be the operator's.
		eng.SetSource("p.test:3306", SourceHealth{Server: "p", LogBin: true, LogReplicaUpdates: true, GTID: everything})
		if _, err := a.SwitchSource(ctx, "t1", "nowhere.test:3306", "test"); !errors.Is(err, ErrNotCandidate) {
			t.Fatalf("switch to a server that is no candidate: %v, want ErrNotCandidate", err)
		}
		req, err := a.SwitchSource(ctx, "t1", "p.test:3306", "test")
		if err != nil || req.From != "r1.test:3306" || !req.Running {
			t.Fatalf("switch request %+v, %v", req, err)
		}
		waitSwitch("p.test:3306", "asked for by test")
		coordtest.WaitFor(t, 10*time.Second, "the request served and deleted", func() error {
			ts, err := a.Task(ctx, "t1")
			if err != nil {
				return err
			}
			done, err := a.SourceSwitched(ctx, &ts, "p.test:3306")
			if err == nil && !done {
				err = errors.New("request pending")
			}
			return err
		})
		waitApplied(t, eng, 60*time.Second)
		opened := eng.OpenedSources()
		if i := slices.Index(opened, "r2.test:3306"); i < 0 || slices.Index(opened[i:], "r1.test:3306") < 0 {
			t.Fatalf("runs opened on %v: want r2 then r1", opened)
		}
		if n, _, _, _ := eng.stats(); n != 1 {
			t.Fatalf("%d runs applied at once", n)
		}
	})
}
