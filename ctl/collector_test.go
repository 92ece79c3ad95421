package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

func TestSourceVerbs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		if out := mustCtlAuth(t, zk, "source", "list"); out != "" {
			t.Fatalf("source list before any add printed %q, want nothing", out)
		}
		a, b := "file:///var/log/a*.log", "http://127.0.0.1:9/b.log"
		if out := mustCtlAuth(t, zk, "source", "add", a, b); out != "added 2 of 2\n" {
			t.Fatalf("source add printed %q", out)
		}
		if out := mustCtlAuth(t, zk, "source", "add", a); out != "added 0 of 1\n" {
			t.Fatalf("adding a present source printed %q, want nothing added", out)
		}
		if out := mustCtlAuth(t, zk, "source", "list"); out != a+"\n"+b+"\n" {
			t.Fatalf("source list printed %q, want both in order", out)
		}
		r := runCtlAuth(t, zk, "source", "rm", a, "file:///nope")
		if r.code != 0 || r.stdout != "removed 1 of 2\n" || !strings.Contains(r.stderr, "not in the list") {
			t.Fatalf("source rm: %v", r)
		}
		var doc struct{ Sources []string }
		if err := json.Unmarshal([]byte(mustCtlAuth(t, zk, "--json", "source", "list")), &doc); err != nil || len(doc.Sources) != 1 || doc.Sources[0] != b {
			t.Fatalf("--json source list: %+v, %v", doc, err)
		}
	})
}

func TestSourceUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"source"}, "missing subcommand"},
		{[]string{"source", "bogus"}, "unknown subcommand"},
		{[]string{"source", "add"}, "missing source URI"},
		{[]string{"source", "add", "ftp://x/y"}, "scheme must be file, http or https"},
		{[]string{"source", "add", "file:relative"}, "absolute"},
		{[]string{"source", "rm"}, "missing source URI"},
		{[]string{"collector"}, "missing subcommand"},
		{[]string{"collector", "list", "--dead-after", "-1s"}, "must be positive"},
	} {
		// The address is never dialled: usage errors come first.
		r := runCtlAuth(t, "127.0.0.1:1", tc.args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("ctl %s: want exit %d and %q, got %v", strings.Join(tc.args, " "), ExitUsage, tc.want, r)
		}
	}
}

func TestCollectorList(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		if out := mustCtlAuth(t, zk, "collector", "list"); strings.Count(out, "\n") != 1 {
			t.Fatalf("collector list with no collectors printed %q, want the header only", out)
		}
		dir := t.TempDir()
		src := filepath.Join(dir, "app.log")
		if err := os.WriteFile(src, []byte("one\ntwo\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mustCtlAuth(t, zk, "source", "add", "file://"+src)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- collector.RunAgent(ctx, collector.AgentConfig{
				Connect: zk, Session: recipe.Options{SessionTimeout: 2 * time.Second, Auth: coordtest.Auth}, Assign: true,
				Collector: collector.Config{Name: "host1", OutDir: filepath.Join(dir, "out"),
					PollInterval: 20 * time.Millisecond, StatusInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)},
				Assigner: collector.AssignerConfig{Strategy: collector.Local, PollInterval: 20 * time.Millisecond,
					DeadAfter: time.Second, Logger: slog.New(slog.DiscardHandler)},
			})
		}()
		stopped := false
		stop := func() {
			if !stopped {
				stopped = true
				cancel()
				if err := <-done; err != nil {
					t.Errorf("collector: %v", err)
				}
			}
		}
		defer stop()
		waitFor(t, 20*time.Second, "the collector to report its lines", func() error {
			out := mustCtlAuth(t, zk, "collector", "list")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 3 {
				return fmt.Errorf("collector list printed %q, want a header, a row and the sources", out)
			}
			f := strings.Fields(lines[1])
			if f[0] != "host1" || f[1] != "alive" || f[len(f)-3] != "1" || f[len(f)-1] != "2" {
				return fmt.Errorf("row %q: want host1 alive with 1 source and 2 lines", lines[1])
			}
			if lines[2] != "host1: file://"+src {
				return fmt.Errorf("sources line %q", lines[2])
			}
			return nil
		})
		var doc struct {
			Collectors []collector.CollectorInfo
		}
		if err := json.Unmarshal([]byte(mustCtlAuth(t, zk, "--json", "collector", "list")), &doc); err != nil ||
			len(doc.Collectors) != 1 || !doc.Collectors[0].Alive || doc.Collectors[0].Lines != 2 {
			t.Fatalf("--json collector list: %+v, %v", doc, err)
		}
		// Stopped on purpose, it says so at once, whatever --dead-after.
		stop()
		r := runCtlAuth(t, zk, "collector", "list")
		lines := strings.Split(r.stdout, "\n")
		if r.code != 0 || len(lines) < 2 || len(strings.Fields(lines[1])) < 2 || strings.Fields(lines[1])[1] != "stopped" ||
			!strings.Contains(r.stderr, "no assigner leads") {
			t.Fatalf("collector list after a graceful stop: %v; want host1 stopped, judged on ctl's clock", r)
		}
	})
}

// TestCollectorAndSourceHelp: --help of every collector and source verb
// exits 0 and prints the verb's usage and flags, without dialling.
func TestCollectorAndSourceHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"collector", "--help"}, []string{"shepherd ctl collector", "list"}},
		{[]string{"collector", "list", "--help"}, []string{"shepherd ctl collector list", "--dead-after", "--help"}},
		{[]string{"collector", "list", "-h"}, []string{"--dead-after"}},
		{[]string{"source", "--help"}, []string{"shepherd ctl source", "add", "rm", "list"}},
		{[]string{"source", "add", "--help"}, []string{"shepherd ctl source add uri…", "--help"}},
		{[]string{"source", "rm", "--help"}, []string{"shepherd ctl source rm uri…", "--help"}},
		{[]string{"source", "list", "--help"}, []string{"shepherd ctl source list", "--help"}},
	} {
		r := runCtl(t, "127.0.0.1:1", tc.args...)
		if r.code != 0 {
			t.Errorf("ctl %s: exit %d, want 0: %v", strings.Join(tc.args, " "), r.code, r)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("ctl %s printed %q, want it to contain %q", strings.Join(tc.args, " "), r.stdout, w)
			}
		}
	}
}

// TestCollectorListJudgesAsTheAssigner: collectors whose statuses are
// kept fresh, one whose status went stale, one that left and one that
// never wrote one; a real assigner gives the sources to those it judges
// alive. ctl collector list must call alive exactly the collectors the
// assigner gave sources to: both judge by collector's one rule, on the
// server's clock at the assigner's round, with its --dead-after.
func TestCollectorListJudgesAsTheAssigner(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		s := dialSession(t, conn)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		writeStatus := func(name string, leaving bool) error {
			data, _ := json.Marshal(collector.Status{Version: 2, Name: name, Time: time.Now(), Leaving: leaving})
			_, err := s.Set(ctx, collector.StatusPath(name), data, -1)
			return err
		}
		for _, name := range []string{"fresh1", "fresh2", "stale", "leaving", "silent"} {
			if err := s.EnsurePath(ctx, collector.CollectorPath(name)); err != nil {
				t.Fatal(err)
			}
			if name == "silent" {
				continue
			}
			if err := s.EnsurePath(ctx, collector.StatusPath(name)); err != nil {
				t.Fatal(err)
			}
			if err := writeStatus(name, name == "leaving"); err != nil {
				t.Fatal(err)
			}
		}
		mustCtlAuth(t, conn, "source", "add", "file:///var/log/a.log", "file:///var/log/b.log", "file:///var/log/c.log", "file:///var/log/d.log")

		// The fresh collectors' heartbeats, until the test ends.
		beats := make(chan struct{})
		go func() {
			defer close(beats)
			for ctx.Err() == nil {
				for _, name := range []string{"fresh1", "fresh2"} {
					_ = writeStatus(name, false)
				}
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		a, err := collector.NewAssigner(s, collector.AssignerConfig{Name: "ctltest", Strategy: collector.Global,
			PollInterval: 50 * time.Millisecond, DeadAfter: time.Second, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		defer func() {
			cancel()
			<-beats
			if err := <-done; err != nil {
				t.Errorf("assigner: %v", err)
			}
		}()

		waitFor(t, 30*time.Second, "ctl and the assigner to agree on who is alive", func() error {
			var ov collector.Overview
			if err := json.Unmarshal([]byte(mustCtlAuth(t, conn, "--json", "collector", "list")), &ov); err != nil {
				return err
			}
			if ov.Judged != collector.JudgedByAssigner {
				return fmt.Errorf("judged %q, want by the assigner", ov.Judged)
			}
			var alive []string
			assigned := 0
			for _, c := range ov.Collectors {
				if c.Alive != (len(c.Sources) > 0) {
					return fmt.Errorf("%s: ctl says alive=%v (%s), the assigner gave it %v", c.Name, c.Alive, c.Reason, c.Sources)
				}
				if c.Alive {
					alive = append(alive, c.Name)
				}
				assigned += len(c.Sources)
			}
			if strings.Join(alive, ",") != "fresh1,fresh2" || assigned != 4 {
				return fmt.Errorf("alive %v with %d sources assigned, want fresh1 and fresh2 holding all 4", alive, assigned)
			}
			// Dead younger than ctl's own default: judged with the
			// assigner's --dead-after, not ctl's.
			for _, c := range ov.Collectors {
				if c.Name == "stale" && c.StatusAge >= collector.DefaultDeadAfter {
					t.Fatalf("inconclusive: stale is %v old, past ctl's default dead-after", c.StatusAge)
				}
			}
			return nil
		})
	})
}
