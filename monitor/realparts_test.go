package monitor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord"
	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/dns"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// startPoller runs a cluster poller over the real reader until the test
// ends.
func startPoller(t *testing.T, s *recipe.Session, opts cluster.Options) *cluster.Poller {
	t.Helper()
	p := cluster.NewPoller(cluster.NewReader(s, opts), 100*time.Millisecond, coordtest.Logger(t))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return p
}

// stoppableCoord is a shepherd coord of one test's own that the test
// stops and starts again on the same address, with its data.
type stoppableCoord struct {
	t   *testing.T
	cfg coord.Config
	srv *coord.Server
}

func startStoppableCoord(t *testing.T) *stoppableCoord {
	c := &stoppableCoord{t: t, cfg: coord.DefaultConfig()}
	c.cfg.Listen, c.cfg.DataDir, c.cfg.Logger = "127.0.0.1:0", t.TempDir(), slog.New(slog.DiscardHandler)
	c.cfg.TickTime = testTick
	c.start()
	c.cfg.Listen = c.srv.Addr()
	t.Cleanup(func() { _ = c.srv.Close() })
	return c
}

func (c *stoppableCoord) addr() string { return c.cfg.Listen }

func (c *stoppableCoord) start() {
	srv, err := coord.NewServer(c.cfg)
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		c.t.Fatalf("start shepherd coord on %s: %v", c.cfg.Listen, err)
	}
	c.srv = srv
}

func (c *stoppableCoord) stop() {
	if err := c.srv.Close(); err != nil {
		c.t.Fatal(err)
	}
}

// runScheduler runs a scheduler on its own session until the test ends.
func runScheduler(t *testing.T, connect string) {
	sc, err := scheduler.New(dial(t, connect, recipe.Options{Auth: coordtest.Auth}), scheduler.Options{Host: "s1", LogDir: t.TempDir(), Logger: coordtest.Logger(t), Resync: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = sc.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// TestJobRulesAgainstARealScheduler: a job whose command fails, then
// succeeds once the test lets it (JobFailed, and JobNoSuccess with a 2s
// window); and a job that overruns its expected duration until the test
// lets it finish (JobTooLong). Each alert fires and resolves once.
func TestJobRulesAgainstARealScheduler(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		dir := t.TempDir()
		fixed, stop := filepath.Join(dir, "fixed"), filepath.Join(dir, "stop")
		for _, j := range []scheduler.Job{
			{Name: "flaky", Schedule: "@every 1s", Command: "sh", Args: []string{"-c", "test -e " + fixed}},
			{Name: "slow", Schedule: "@every 1s", Command: "sh", Args: []string{"-c", "while [ ! -e " + stop + " ]; do sleep 0.05; done"},
				ConcurrencyPolicy: scheduler.Forbid},
		} {
			if err := scheduler.NewAdmin(s).StoreJob(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		runScheduler(t, connect)

		r := newReceiver(t)
		cfg := testConfig(r)
		cfg.Rules.JobTooLongPerJob = map[string]time.Duration{"slow": 2 * time.Second}
		cfg.Rules.JobNoSuccessPerJob = map[string]time.Duration{"flaky": 2 * time.Second}
		startMonitor(t, s, startPoller(t, s, cluster.Options{}), cfg, Deps{})
		r.waitCount(t, RuleJobFailed, StatusFiring, 1)
		r.waitCount(t, RuleJobTooLong, StatusFiring, 1)
		r.waitCount(t, RuleJobNoSuccess, StatusFiring, 1)
		if err := os.WriteFile(fixed, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		r.waitCount(t, RuleJobFailed, StatusResolved, 1)
		r.waitCount(t, RuleJobNoSuccess, StatusResolved, 1)
		if err := os.WriteFile(stop, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		r.waitCount(t, RuleJobTooLong, StatusResolved, 1)
		for _, rule := range []string{RuleJobFailed, RuleJobTooLong, RuleJobNoSuccess} {
			for _, st := range []string{StatusFiring, StatusResolved} {
				if n := r.count(rule, st); n != 1 {
					t.Errorf("%s %s sent %d times: %+v", rule, st, n, r.all())
				}
			}
		}
	})
}

// TestCoordUnhealthyWhenAServerStops: the monitor probes every server of
// the connect string; one stopped is CoordUnhealthy until it is back.
func TestCoordUnhealthyWhenAServerStops(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	other := startStoppableCoord(t)
	connect := tg.Addr + "/" + fmt.Sprintf("coord-%d", time.Now().UnixNano())
	s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
	r := newReceiver(t)
	mcfg := testConfig(r)
	mcfg.Hold = map[string]time.Duration{RuleCoordUnhealthy: 0}
	m, _ := startMonitor(t, s, startPoller(t, s, cluster.Options{CoordServers: []string{tg.Addr, other.addr()}}), mcfg, Deps{})
	waitEvaluations(t, m, 3)
	if n := len(r.all()); n != 0 {
		t.Fatalf("both servers up: %+v", r.all())
	}
	other.stop()
	r.waitCount(t, RuleCoordUnhealthy, StatusFiring, 1)
	if got := r.all()[0]; got.Labels["server"] != other.addr() || got.Severity != Critical {
		t.Fatalf("firing %+v, want critical for %s", got, other.addr())
	}
	other.start()
	r.waitCount(t, RuleCoordUnhealthy, StatusResolved, 1)
}

// TestTaskNoStandbyWithRealCores: a hot-standby task run by one core has
// no standby until a second core joins its line.
func TestTaskNoStandbyWithRealCores(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		// The source is unreachable: the owner stays RUNNING, retrying.
		sp := &core.Spec{Name: "orders", Version: core.SpecVersion, State: core.DesiredRunning, Start: core.StartCurrent,
			Source:  core.SourceEndpoint{Endpoint: core.Endpoint{Host: "127.0.0.1", Port: 1, User: "u", Flavor: core.FlavorMySQL}},
			Target:  core.TargetEndpoint{Endpoint: core.Endpoint{Host: "127.0.0.1", Port: 2, User: "u", Flavor: core.FlavorMySQL}},
			Standby: core.Standby{Mode: core.ModeHot}}
		if err := core.NewAdmin(s, "").AddTask(ctx, sp, false); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		cctx, stopCores := context.WithCancel(ctx)
		defer wg.Wait()
		defer stopCores()
		startCore := func(host string) {
			c, err := core.New(dial(t, connect, recipe.Options{Auth: coordtest.Auth}), core.Config{Host: host, Tasks: []string{"orders"}, Engine: core.MySQL{}, Logger: coordtest.Logger(t)})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { _ = c.Run(cctx) })
		}
		r := newReceiver(t)
		cfg := testConfig(r)
		cfg.Hold = map[string]time.Duration{RuleTaskNoStandby: 0}
		startMonitor(t, s, startPoller(t, s, cluster.Options{}), cfg, Deps{})
		startCore("a")
		r.waitCount(t, RuleTaskNoStandby, StatusFiring, 1)
		startCore("b")
		r.waitCount(t, RuleTaskNoStandby, StatusResolved, 1)
	})
}

// TestCoordOutageIsReportedByTheLastActiveMonitor: the only coordination
// server stops; the monitor that was active, unable to store anything,
// reports CoordUnhealthy from its own probes, and its resolution when the
// server is back — once each.
func TestCoordOutageIsReportedByTheLastActiveMonitor(t *testing.T) {
	srv := startStoppableCoord(t)
	s := dial(t, srv.addr(), recipe.Options{Auth: coordtest.Auth})
	r := newReceiver(t)
	mcfg := testConfig(r)
	mcfg.Hold = map[string]time.Duration{RuleCoordUnhealthy: 0}
	snap := healthySnap()
	snap.Coord = []coordhealth.Server{{Addr: srv.addr(), OK: true}}
	m, _ := startMonitor(t, s, cluster.NewFixed(snap), mcfg, Deps{})
	waitEvaluations(t, m, 2)
	srv.stop()
	r.waitCount(t, RuleCoordUnhealthy, StatusFiring, 1)
	if got := r.all()[0]; got.Labels["server"] != srv.addr() || got.Severity != Critical {
		t.Fatalf("firing %+v, want critical for %s", got, srv.addr())
	}
	srv.start()
	r.waitCount(t, RuleCoordUnhealthy, StatusResolved, 1)
	waitEvaluations(t, m, 3) // active again, from the stored state
	if n := len(r.all()); n != 2 {
		t.Fatalf("%d notifications, want 2: %+v", n, r.all())
	}
}

// TestJobMissedAgainstARealScheduler: a job whose runs may start at most
// a microsecond late is recorded missed at every fire (JobMissed); given
// a sane starting deadline, its runs succeed and the alert resolves.
func TestJobMissedAgainstARealScheduler(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		admin := scheduler.NewAdmin(s)
		j := scheduler.Job{Name: "tight", Schedule: "@every 1s", Command: "true", StartingDeadline: scheduler.Duration(time.Microsecond)}
		if err := admin.StoreJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		runScheduler(t, connect)
		r := newReceiver(t)
		startMonitor(t, s, startPoller(t, s, cluster.Options{}), testConfig(r), Deps{})
		r.waitCount(t, RuleJobMissed, StatusFiring, 1)
		j.StartingDeadline = scheduler.Duration(time.Minute)
		if err := admin.StoreJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		r.waitCount(t, RuleJobMissed, StatusResolved, 1)
	})
}

// TestServiceNoHealthyAddressWithARealRegistry: a name whose only
// address is blocked by an operator has no healthy address until it is
// unblocked.
func TestServiceNoHealthyAddressWithARealRegistry(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		n, err := dns.NewName("app1", "api.svc.example")
		if err != nil {
			t.Fatal(err)
		}
		addr, err := dns.ParseAddr("10.0.0.1:80")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dns.Register(ctx, s, n, dns.Registration{Addr: addr}); err != nil {
			t.Fatal(err)
		}
		r := newReceiver(t)
		cfg := testConfig(r)
		cfg.Hold = map[string]time.Duration{RuleServiceNoHealthyAddress: 0}
		startMonitor(t, s, startPoller(t, s, cluster.Options{Sections: []cluster.Section{cluster.SectionServices}}), cfg, Deps{})
		if _, err := dns.NewAdmin(s).Block(ctx, n, addr, "test", "maintenance"); err != nil {
			t.Fatal(err)
		}
		r.waitCount(t, RuleServiceNoHealthyAddress, StatusFiring, 1)
		if _, err := dns.NewAdmin(s).Unblock(ctx, n, addr); err != nil {
			t.Fatal(err)
		}
		r.waitCount(t, RuleServiceNoHealthyAddress, StatusResolved, 1)
	})
}
