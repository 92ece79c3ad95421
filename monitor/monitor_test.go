package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

func failedSnap() *cluster.Snapshot {
	return &cluster.Snapshot{ReadAt: time.Now(), Tasks: []core.TaskStatus{task("orders", core.StateFailed)}}
}

func healthySnap() *cluster.Snapshot {
	return &cluster.Snapshot{ReadAt: time.Now(), Tasks: []core.TaskStatus{task("orders", core.StateRunning, core.StateStandby)}}
}

func testConfig(r *receiver) Config {
	cfg := DefaultConfig()
	cfg.Interval = 100 * time.Millisecond
	cfg.Webhooks = []WebhookConfig{{URL: r.URL}}
	return cfg
}

// TestMonitorSendsOneFiringAndOneResolved: an alert's firing and
// resolution each reach the webhook exactly once, however many
// evaluations pass.
func TestMonitorSendsOneFiringAndOneResolved(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		r := newReceiver(t)
		feed := cluster.NewFixed(failedSnap())
		m, _ := startMonitor(t, dial(t, connect, recipe.Options{Auth: coordtest.Auth}), feed, testConfig(r), Deps{})
		r.waitCount(t, RuleTaskFailed, StatusFiring, 1)
		waitEvaluations(t, m, 3)
		feed.Set(healthySnap())
		r.waitCount(t, RuleTaskFailed, StatusResolved, 1)
		waitEvaluations(t, m, 3)
		if n := len(r.all()); n != 2 {
			t.Fatalf("%d notifications, want 2: %+v", n, r.all())
		}
		st, _, err := ReadState(context.Background(), dial(t, connect, recipe.Options{Auth: coordtest.Auth}))
		if err != nil || len(st.Alerts) != 0 || len(st.Outbox) != 0 || len(st.Events) != 2 {
			t.Fatalf("state after resolution: %+v, %v", st, err)
		}
	})
}

// TestStandbyTakesOverWithoutResending: the active monitor's session
// ends; the standby takes over with the state it left and sends the
// resolution, not the firing again.
func TestStandbyTakesOverWithoutResending(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		r := newReceiver(t)
		feed := cluster.NewFixed(failedSnap())
		sa := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		a, stopA := startMonitor(t, sa, feed, testConfig(r), Deps{})
		r.waitCount(t, RuleTaskFailed, StatusFiring, 1)
		waitEvaluations(t, a, 1)
		b, _ := startMonitor(t, dial(t, connect, recipe.Options{Auth: coordtest.Auth}), feed, testConfig(r), Deps{})
		coordtest.WaitFor(t, 10*time.Second, "b stands by", func() error {
			if evaluations(b) != 0 {
				t.Fatal("the second monitor evaluated while the first was active")
			}
			return nil
		})
		stopA()
		sa.Close()
		waitEvaluations(t, b, 3)
		if n := r.count(RuleTaskFailed, StatusFiring); n != 1 {
			t.Fatalf("firing sent %d times across the takeover", n)
		}
		feed.Set(healthySnap())
		r.waitCount(t, RuleTaskFailed, StatusResolved, 1)
	})
}

// TestUnreadableStateACLIsNotAnUntrustedState: a trust check of the state
// that fails for another reason than an untrusted ACL (here a canceled
// read, as when the monitor is stopped mid-evaluation) skips the
// evaluation. Taking it for an untrusted state made the monitor start from
// an empty one and send again what it had sent.
func TestUnreadableStateACLIsNotAnUntrustedState(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		r := newReceiver(t)
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		var calls atomic.Int32
		failed := make(chan struct{})
		m, _ := startMonitorWith(t, s, cluster.NewFixed(failedSnap()), testConfig(r), Deps{}, func(m *Monitor) {
			m.checkStateTrusted = func(ctx context.Context, base, p string) error {
				// The first evaluation finds no state; the second checks
				// it; the third fails to.
				if calls.Add(1) == 2 {
					close(failed)
					return fmt.Errorf("recipe: check trust of %s: %w", p, context.Canceled)
				}
				return s.CheckTrusted(ctx, base, p)
			}
		})
		r.waitCount(t, RuleTaskFailed, StatusFiring, 1)
		select {
		case <-failed:
		case <-time.After(20 * time.Second):
			t.Fatal("the state's trust was not checked twice")
		}
		waitEvaluations(t, m, 3)
		if n := r.count(RuleTaskFailed, StatusFiring); n != 1 {
			t.Fatalf("firing sent %d times; a failed trust check must not reset the state", n)
		}
	})
}

// TestSilenceMutesTheAlert: a silence written with the monitor's
// credential mutes the alert it matches.
func TestSilenceMutesTheAlert(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		admin := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		if err := AddSilence(ctx, admin, Silence{ID: "maint", Matchers: map[string]string{"rule": RuleTaskFailed, "task": "orders"}, EndsAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		r := newReceiver(t)
		m, _ := startMonitor(t, admin, cluster.NewFixed(failedSnap()), testConfig(r), Deps{})
		waitEvaluations(t, m, 3)
		if n := len(r.all()); n != 0 {
			t.Fatalf("silenced alert sent: %+v", r.all())
		}
		st, _, err := ReadState(ctx, admin)
		a := st.Alerts[`TaskFailed{severity="critical",task="orders"}`]
		if err != nil || a == nil || !a.Silenced || a.State != StateFiring {
			t.Fatalf("state %+v, %v: want TaskFailed firing, silenced", st, err)
		}
	})
}

// TestSilenceAnAnonymousClientWroteIsRefused: in an open cluster an
// attacker silences the alerts; the monitor ignores the silence and
// sends the alert.
func TestSilenceAnAnonymousClientWroteIsRefused(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		anon := dial(t, connect, recipe.Options{})
		if err := AddSilence(ctx, anon, Silence{ID: "evil", Matchers: map[string]string{"rule": RuleTaskFailed}, EndsAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		admin := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		if got, refused, err := Silences(ctx, admin, true); err != nil || len(got) != 0 || refused["evil"] == "" {
			t.Fatalf("anonymous silence: honoured %+v, refused %v, %v", got, refused, err)
		}
		r := newReceiver(t)
		startMonitor(t, admin, cluster.NewFixed(failedSnap()), testConfig(r), Deps{})
		r.waitCount(t, RuleTaskFailed, StatusFiring, 1)
	})
}

// TestStandbyOnlyRaisesNoActiveMonitorOnce: with only standbys, one of
// them sends MonitorStandbyOnly once; an active monitor resolves it once.
func TestStandbyOnlyRaisesNoActiveMonitorOnce(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		r := newReceiver(t)
		feed := cluster.NewFixed(healthySnap())
		cfg := testConfig(r)
		cfg.StandbyOnly = true
		cfg.Hold = map[string]time.Duration{RuleMonitorStandbyOnly: 300 * time.Millisecond}
		startMonitor(t, dial(t, connect, recipe.Options{Auth: coordtest.Auth}), feed, cfg, Deps{})
		startMonitor(t, dial(t, connect, recipe.Options{Auth: coordtest.Auth}), feed, cfg, Deps{})
		r.waitCount(t, RuleMonitorStandbyOnly, StatusFiring, 1)
		a, _ := startMonitor(t, dial(t, connect, recipe.Options{Auth: coordtest.Auth}), feed, testConfig(r), Deps{})
		r.waitCount(t, RuleMonitorStandbyOnly, StatusResolved, 1)
		waitEvaluations(t, a, 5)
		if n := r.count(RuleMonitorStandbyOnly, StatusFiring); n != 1 {
			t.Fatalf("MonitorStandbyOnly fired %d times", n)
		}
	})
}

// TestOutboxOfADeadMonitorIsDelivered: a monitor that decided a
// notification and died before delivering it leaves it in the stored
// outbox; the next active monitor delivers it, once.
func TestOutboxOfADeadMonitorIsDelivered(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		n := Notification{ID: "TaskFailed{task=\"orders\"}@x:firing", Status: StatusFiring, Rule: RuleTaskFailed, Severity: Critical,
			Labels: map[string]string{"task": "orders"}, Summary: "decided by a dead monitor", StartsAt: time.Now()}
		st := State{Version: stateVersion, Active: "dead", Updated: time.Now(),
			Alerts: map[string]*Alert{}, Outbox: []Outgoing{{Batch: Batch{Monitor: "dead", Notifications: []Notification{n}}, Decided: time.Now()}}}
		data, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.EnsurePath(ctx, Root); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, StatePath, data, zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		r := newReceiver(t)
		m, _ := startMonitor(t, s, cluster.NewFixed(healthySnap()), testConfig(r), Deps{})
		r.waitCount(t, RuleTaskFailed, StatusFiring, 1)
		waitEvaluations(t, m, 3)
		if got := r.all(); len(got) != 1 || got[0].ID != n.ID {
			t.Fatalf("delivered %+v, want the stored notification once", got)
		}
	})
}

// TestStateAnAnonymousClientWroteIsNotSent: a state document an
// anonymous client planted, under a root it planted too, with a
// notification in its outbox. The monitor refuses it, as every role
// refuses a planted tree, and sends nothing at all (it used to start
// over from an empty state at each evaluation and send every alert
// again). Once the planted state is gone and the root has the policy
// ACL it writes its own state and sends its alert once, never the
// attacker's.
func TestStateAnAnonymousClientWroteIsNotSent(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		anon := dial(t, connect, recipe.Options{})
		n := Notification{ID: "evil", Status: StatusFiring, Rule: RuleTaskFailed, Labels: map[string]string{}, Summary: "click here"}
		data, _ := json.Marshal(State{Version: stateVersion, Alerts: map[string]*Alert{},
			Outbox: []Outgoing{{Batch: Batch{Notifications: []Notification{n}}, Decided: time.Now()}}})
		if err := anon.EnsurePath(ctx, Root); err != nil {
			t.Fatal(err)
		}
		if _, err := anon.Create(ctx, StatePath, data, zk.FlagPersistent, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		r := newReceiver(t)
		own := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		var refused atomic.Int32
		m, _ := startMonitorWith(t, own, cluster.NewFixed(failedSnap()), testConfig(r), Deps{}, func(m *Monitor) {
			m.checkStateTrusted = func(ctx context.Context, base, p string) error {
				err := own.CheckTrusted(ctx, base, p)
				if errors.Is(err, recipe.ErrUntrusted) {
					refused.Add(1)
				}
				return err
			}
		})
		coordtest.WaitFor(t, 20*time.Second, "three refused evaluations", func() error {
			if n := refused.Load(); n < 3 {
				return fmt.Errorf("%d so far", n)
			}
			return nil
		})
		if got := r.all(); len(got) != 0 {
			t.Fatalf("sent %d notifications from a planted tree: %+v", len(got), got)
		}

		// The operator's mend: the planted state removed, the root given
		// the policy ACL (what ctl secure does to it).
		if err := anon.Delete(ctx, StatePath, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := own.SetACL(ctx, Root, own.NodeACL(), -1); err != nil {
			t.Fatal(err)
		}
		r.waitCount(t, RuleTaskFailed, StatusFiring, 1)
		waitEvaluations(t, m, 3)
		for _, got := range r.all() {
			if got.ID == "evil" || got.Summary == "click here" {
				t.Fatalf("sent the attacker's notification: %+v", got)
			}
		}
		if n := r.count(RuleTaskFailed, StatusFiring); n != 1 {
			t.Fatalf("%d firing notifications after 3 evaluations, want 1: %+v", n, r.all())
		}
	})
}

// TestStateThatDoesNotDecodeIsStartedOver: a corrupt state document does
// not stop the monitor; it is replaced.
func TestStateThatDoesNotDecodeIsStartedOver(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		if err := s.EnsurePath(ctx, Root); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, StatePath, []byte("{not json"), zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		r := newReceiver(t)
		startMonitor(t, s, cluster.NewFixed(failedSnap()), testConfig(r), Deps{})
		r.waitCount(t, RuleTaskFailed, StatusFiring, 1)
		coordtest.WaitFor(t, 10*time.Second, "a state that decodes", func() error {
			_, _, err := ReadState(ctx, s)
			return err
		})
	})
}

// TestTasksOfOneSourceShareOneReading: two tasks replicating from the same
// source account cost the evaluation one reading of it; a third task on
// another account gets its own.
func TestTasksOfOneSourceShareOneReading(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		admin := core.NewAdmin(s, "")
		snap := &cluster.Snapshot{}
		for _, task := range []struct{ name, user string }{{"a", "u"}, {"b", "u"}, {"c", "v"}} {
			sp := &core.Spec{Name: task.name, Version: core.SpecVersion, State: core.DesiredRunning, Start: core.StartCurrent,
				Source:  core.SourceEndpoint{Endpoint: core.Endpoint{Host: "127.0.0.1", Port: 1, User: task.user, Flavor: core.FlavorMySQL}},
				Target:  core.TargetEndpoint{Endpoint: core.Endpoint{Host: "127.0.0.1", Port: 2, User: "u", Flavor: core.FlavorMySQL}},
				Standby: core.Standby{Mode: core.ModeHot}}
			if err := admin.AddTask(ctx, sp, false); err != nil {
				t.Fatal(err)
			}
			snap.Tasks = append(snap.Tasks, core.TaskStatus{Name: task.name, Spec: sp.Redacted()})
		}
		var mu sync.Mutex
		readings := map[string]int{}
		deps := Deps{Session: s, Feed: cluster.NewFixed(snap), Logger: coordtest.Logger(t),
			ReadSource: func(_ context.Context, ep core.Endpoint, _ string, now time.Time) SourceReading {
				mu.Lock()
				defer mu.Unlock()
				readings[ep.User]++
				return SourceReading{At: now, Logs: []BinlogFile{{Name: "bin.000001", Size: 4}}}
			}}
		m, err := New(DefaultConfig(), deps)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := m.readSources(ctx, snap, time.Now())
		if len(got) != 3 || readings["u"] != 1 || readings["v"] != 1 {
			t.Fatalf("readings by user %v for %d tasks, want u:1 v:1 for 3", readings, len(got))
		}
	})
}
