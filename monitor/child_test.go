package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// childEnv, when set, makes the test binary a monitor process (for the
// kill -9 test) configured by the JSON childConfig in the variable: a
// real session, the real cluster reader and a webhook.
const childEnv = "MONITOR_TEST_CHILD"

type childConfig struct {
	Connect string `json:"connect"`
	Name    string `json:"name"`
	Webhook string `json:"webhook"`
	// Collector makes the child a log collector agent (the assigner too
	// with Assign) writing to OutDir, instead of a monitor.
	Collector bool   `json:"collector,omitempty"`
	Assign    bool   `json:"assign,omitempty"`
	OutDir    string `json:"outDir,omitempty"`
	MaxRead   int    `json:"maxRead,omitempty"` // bytes per source per round; 0: the default
}

func runChild(conf string) int {
	var c childConfig
	if err := json.Unmarshal([]byte(conf), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if c.Collector {
		s, err := recipe.Dial(ctx, c.Connect, recipe.Options{SessionTimeout: testSessionTimeout, Auth: coordtest.Auth, Logger: log})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer s.Close()
		err = collector.RunAgent(ctx, s, collector.AgentConfig{
			Collector: collector.Config{Name: c.Name, OutDir: c.OutDir, PollInterval: 50 * time.Millisecond, StatusInterval: 100 * time.Millisecond, MaxRead: c.MaxRead, Logger: log},
			Assign:    c.Assign,
			Assigner:  collector.AssignerConfig{Name: c.Name, Strategy: collector.Local, PollInterval: 50 * time.Millisecond, DeadAfter: time.Second, Logger: log},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	s, err := recipe.Dial(ctx, c.Connect, recipe.Options{SessionTimeout: testSessionTimeout, Auth: coordtest.Auth, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	cfg := DefaultConfig()
	cfg.Name, cfg.Interval = c.Name, 200*time.Millisecond
	cfg.Hold = map[string]time.Duration{RuleTaskNotRunning: 0}
	cfg.Webhooks = []WebhookConfig{{URL: c.Webhook}}
	poller := cluster.NewPoller(cluster.NewReader(s, cluster.Options{}), 100*time.Millisecond, log)
	m, err := New(cfg, Deps{Session: s, Feed: poller, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { _ = poller.Run(ctx) })
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startChild starts a monitor process; it is killed when the test ends.
func startChild(t *testing.T, c childConfig) *exec.Cmd {
	t.Helper()
	conf, _ := json.Marshal(c)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(conf))
	cmd.Stdout, cmd.Stderr = testWriter{t}, testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// TestKill9ActiveMonitorStandbyTakesOver: two monitor processes; the
// active one is killed with SIGKILL while an alert fires. The other takes
// over from the stored state: the firing is not sent again, and the
// resolution is sent once.
func TestKill9ActiveMonitorStandbyTakesOver(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		admin := core.NewAdmin(s, "")
		sp := &core.Spec{Name: "orders", Version: core.SpecVersion, State: core.DesiredRunning, Start: core.StartCurrent,
			Source:  core.SourceEndpoint{Endpoint: core.Endpoint{Host: "127.0.0.1", Port: 1, User: "u", Flavor: core.FlavorMySQL}},
			Target:  core.TargetEndpoint{Endpoint: core.Endpoint{Host: "127.0.0.1", Port: 2, User: "u", Flavor: core.FlavorMySQL}},
			Standby: core.Standby{Mode: core.ModeHot}}
		if err := admin.AddTask(ctx, sp, false); err != nil {
			t.Fatal(err)
		}
		r := newReceiver(t)
		a := startChild(t, childConfig{Connect: connect, Name: "a", Webhook: r.URL})
		r.waitCount(t, RuleTaskNotRunning, StatusFiring, 1)
		startChild(t, childConfig{Connect: connect, Name: "b", Webhook: r.URL})
		coordtest.WaitFor(t, 30*time.Second, "b a candidate", func() error {
			kids, _, err := s.Children(ctx, ElectionPath)
			if err != nil || len(kids) != 2 {
				return fmt.Errorf("candidates %v, %v", kids, err)
			}
			return nil
		})
		if err := a.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		// b evaluates as the active monitor, twice.
		var seen []time.Time
		coordtest.WaitFor(t, 30*time.Second, "b active", func() error {
			st, _, err := ReadState(ctx, s)
			if err != nil || st.Active != "b" || st.Updated.Before(killed) {
				return fmt.Errorf("active %q at %v, %v", st.Active, st.Updated, err)
			}
			if len(seen) == 0 || !seen[len(seen)-1].Equal(st.Updated) {
				seen = append(seen, st.Updated)
			}
			if len(seen) < 3 {
				return fmt.Errorf("%d evaluations by b", len(seen))
			}
			return nil
		})
		if n := r.count(RuleTaskNotRunning, StatusFiring); n != 1 {
			t.Fatalf("firing sent %d times across the kill: %+v", n, r.all())
		}
		if err := admin.SetState(ctx, "orders", core.DesiredStopped); err != nil {
			t.Fatal(err)
		}
		r.waitCount(t, RuleTaskNotRunning, StatusResolved, 1)
		// A few more evaluations send nothing more.
		st, _, _ := ReadState(ctx, s)
		coordtest.WaitFor(t, 30*time.Second, "more evaluations", func() error {
			now, _, err := ReadState(ctx, s)
			if err != nil || now.Updated.Sub(st.Updated) < time.Second {
				return fmt.Errorf("last at %v, %v", now.Updated, err)
			}
			return nil
		})
		if n := len(r.all()); n != 2 {
			t.Fatalf("%d notifications, want 2: %+v", n, r.all())
		}
		if _, _, err := s.Get(ctx, StandbyPath); !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("%s: %v (no standby alert expected)", StandbyPath, err)
		}
	})
}

// TestCollectorRulesWithCollectorProcesses: a source with no collector
// is SourceUnassigned until collector processes start; of the two, the
// one that is not the assigner is killed with SIGKILL: CollectorDead
// fires once; started again under its name, it resolves once.
func TestCollectorRulesWithCollectorProcesses(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		logDir := t.TempDir()
		src := filepath.Join(logDir, "app.log")
		if err := os.WriteFile(src, []byte("one\ntwo\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := collector.NewAdmin(s).AddSources(ctx, "file://"+src); err != nil {
			t.Fatal(err)
		}
		// Nobody collects the source yet.
		r := newReceiver(t)
		cfg := testConfig(r)
		cfg.Hold = map[string]time.Duration{RuleSourceUnassigned: 0, RuleCollectorDead: time.Second}
		m, _ := startMonitor(t, s, startPoller(t, s, cluster.Options{}), cfg, Deps{})
		r.waitCount(t, RuleSourceUnassigned, StatusFiring, 1)
		out := t.TempDir()
		startChild(t, childConfig{Connect: connect, Name: "c1", Collector: true, Assign: true, OutDir: filepath.Join(out, "c1")})
		c2 := startChild(t, childConfig{Connect: connect, Name: "c2", Collector: true, OutDir: filepath.Join(out, "c2")})
		r.waitCount(t, RuleSourceUnassigned, StatusResolved, 1)
		coordtest.WaitFor(t, 30*time.Second, "both collectors alive", func() error {
			snap := m.deps.Feed.Latest()
			if snap == nil || len(snap.Collectors) != 2 || !snap.Collectors[0].Alive || !snap.Collectors[1].Alive {
				return fmt.Errorf("collectors %+v", snap)
			}
			return nil
		})
		if n := len(r.all()); n != 2 {
			t.Fatalf("both alive: sent %+v", r.all())
		}
		if err := c2.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		r.waitCount(t, RuleCollectorDead, StatusFiring, 1)
		if got := r.all()[2].Labels["collector"]; got != "c2" {
			t.Fatalf("dead collector %q, want c2", got)
		}
		startChild(t, childConfig{Connect: connect, Name: "c2", Collector: true, OutDir: filepath.Join(out, "c2")})
		r.waitCount(t, RuleCollectorDead, StatusResolved, 1)
		if n := len(r.all()); n != 4 {
			t.Fatalf("%d notifications, want 4: %+v", n, r.all())
		}
	})
}

// TestCollectorLaggingWithACollectorProcess: a collector reading 4 KB a
// round falls behind a 16 MB log (CollectorLagging) and catches up.
func TestCollectorLaggingWithACollectorProcess(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		src := filepath.Join(t.TempDir(), "big.log")
		line := strings.Repeat("x", 99) + "\n"
		if err := os.WriteFile(src, []byte(strings.Repeat(line, 160_000)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := collector.NewAdmin(s).AddSources(ctx, "file://"+src); err != nil {
			t.Fatal(err)
		}
		r := newReceiver(t)
		cfg := testConfig(r)
		cfg.Rules.CollectorLagBytes = 1 << 20
		cfg.Hold = map[string]time.Duration{RuleCollectorLagging: 0}
		startMonitor(t, s, startPoller(t, s, cluster.Options{}), cfg, Deps{})
		startChild(t, childConfig{Connect: connect, Name: "c1", Collector: true, Assign: true, OutDir: t.TempDir(), MaxRead: 4 << 10})
		r.waitCount(t, RuleCollectorLagging, StatusFiring, 1)
		coordtest.WaitFor(t, 90*time.Second, "the collector caught up", func() error {
			if r.count(RuleCollectorLagging, StatusResolved) == 0 {
				return fmt.Errorf("still lagging")
			}
			return nil
		})
		r.waitCount(t, RuleCollectorLagging, StatusResolved, 1)
	})
}
