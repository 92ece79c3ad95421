package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/ctl"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/monitor"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// TestEveryViewReadsTheSameState injects the faults operators meet — the
// target down while the source moves on, the task stopped, its core
// gone — into a task run by a real core (in-memory engine), watched by a
// real monitor (its source reading faked from the engine) and shown by
// the console and by ctl. Each view must show the same state, and a lag
// that grows with the fault: the console once read "RUNNING · lag 0"
// with the target down while the monitor said 1m30s behind.
func TestEveryViewReadsTheSameState(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	ctx := coordtest.Context(t, 3*time.Minute)
	connect := tg.Chroot(t, "views")
	s := dial(t, connect, coordtest.Auth)
	log := slog.New(slog.DiscardHandler)
	if err := auth.NewStore(s, auth.Options{BcryptCost: bcrypt.MinCost}).AddUser(ctx, "viewer", auth.Viewer, []byte(testPassword), false); err != nil {
		t.Fatal(err)
	}
	a := core.NewAdmin(s, "")
	sp := mustSpec(t, specJSON)
	if err := a.AddTask(ctx, sp, false); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	bg := func(name string, run func(ctx context.Context) error) context.CancelFunc {
		ctx, cancel := context.WithCancel(ctx)
		wg.Go(func() {
			if err := run(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", name, err)
			}
		})
		return cancel
	}
	t.Cleanup(wg.Wait)

	const initial = 300
	eng := core.NewMemEngine(initial)
	var events atomic.Int64 // the source's position: its event count
	events.Store(initial)
	c, err := core.New(dial(t, connect, coordtest.Auth), core.Config{Host: "c1", Tasks: []string{sp.Name}, Engine: eng,
		CheckpointInterval: 100 * time.Millisecond, RetryBase: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	stopCore := bg("core", c.Run)
	poller := cluster.NewPoller(cluster.NewReader(s, cluster.Options{}), 100*time.Millisecond, log)
	t.Cleanup(bg("poller", poller.Run))
	mcfg := monitor.DefaultConfig()
	mcfg.Interval = 100 * time.Millisecond
	mcfg.Rules.LagWarning = 400 * time.Millisecond
	m, err := monitor.New(mcfg, monitor.Deps{Session: dial(t, connect, coordtest.Auth), Feed: poller, Logger: log,
		ReadSource: func(_ context.Context, ep core.Endpoint, _ string, now time.Time) monitor.SourceReading {
			return monitor.SourceReading{Addr: ep.Addr(), At: now, Logs: []monitor.BinlogFile{{Name: "mem-bin.000001", Size: uint64(events.Load())}}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bg("monitor", m.Run))
	con := newConsole(t, connect, s, func(_ *Config, d *Deps) { d.Feed = poller })
	viewer := con.as("viewer")

	// views reads the task's state and lag as the console's API and as
	// ctl task list show them.
	ctlRow := regexp.MustCompile(`(?m)^orders\s+\S+\s+\S+\s+\S+\s+(RUNNING|RETRYING|FAILED|STOPPED|NOT RUNNING|INVALID)\s+\S+(?: \(gtid \S+\))?\s+(\S+)\s+\d+$`)
	views := func() (api cluster.TaskView, ctlState, ctlLag string, err error) {
		st, body := viewer.do("GET", "/api/v1/tasks/orders", nil, nil)
		var tv struct {
			View cluster.TaskView `json:"view"`
		}
		if st != 200 || json.Unmarshal([]byte(body), &tv) != nil {
			return api, "", "", fmt.Errorf("GET task: %d %s", st, body)
		}
		var out, errs bytes.Buffer
		if code := ctl.Run(ctx, ctl.Env{Stdout: &out, Stderr: &errs}, []string{"--zk", connect, "--auth-file", coordtest.AuthFile(t), "task", "list"}); code != 0 {
			return tv.View, "", "", fmt.Errorf("ctl task list: exit %d: %s", code, errs.String())
		}
		row := ctlRow.FindStringSubmatch(out.String())
		if row == nil {
			return tv.View, "", "", fmt.Errorf("ctl task list has no row for orders:\n%s", out.String())
		}
		return tv.View, row[1], row[2], nil
	}
	// agree waits until both views show state, with a lag that satisfies
	// lagOK in each (ctl's as text, the API's as the view).
	agree := func(what, state string, lagOK func(known bool, lag time.Duration, text string) bool) {
		t.Helper()
		coordtest.WaitFor(t, 60*time.Second, what, func() error {
			api, ctlState, ctlLag, err := views()
			if err != nil {
				return err
			}
			if api.State != state || ctlState != state {
				return fmt.Errorf("console says %s (%s), ctl %s; want %s", api.State, api.Error, ctlState, state)
			}
			if !lagOK(api.LagKnown, api.Lag, api.LagText()) || !lagOK(ctlLag != "unknown" && ctlLag != "-", parseLag(ctlLag), ctlLag) {
				snap := poller.Latest()
				ts, _ := snap.Task("orders")
				return fmt.Errorf("lag: console %s, ctl %s (view %+v; samples %+v; instances %+v)", api.LagText(), ctlLag, api, snap.SourceSamples["orders"], ts.Instances)
			}
			return nil
		})
	}
	caughtUp := func(known bool, lag time.Duration, _ string) bool { return known && lag == 0 }
	behind := func(known bool, lag time.Duration, _ string) bool { return known && lag >= 500*time.Millisecond }

	agree("the task caught up", cluster.TaskRunning, caughtUp)

	// The target goes down while the source moves on: retrying, and late.
	eng.SetDown(true)
	eng.AddEvents(200)
	events.Add(200)
	agree("the target down", cluster.TaskRetrying, behind)
	lagAlert := func(want bool) {
		t.Helper()
		coordtest.WaitFor(t, 30*time.Second, fmt.Sprintf("the monitor's ReplicationLag firing: %v", want), func() error {
			st, _, err := monitor.ReadState(ctx, s)
			if err != nil {
				return err
			}
			firing := false
			for _, al := range st.Alerts {
				firing = firing || al.Rule == monitor.RuleReplicationLag && al.Labels["task"] == "orders" && al.State == monitor.StateFiring
			}
			if firing != want {
				return fmt.Errorf("alerts %v", st.Alerts)
			}
			return nil
		})
	}
	lagAlert(true) // the monitor sees it late too
	eng.SetDown(false)
	agree("the target back", cluster.TaskRunning, caughtUp)
	lagAlert(false)

	// Stopped on purpose: not late, whatever the source does.
	if err := a.SetState(ctx, sp.Name, core.DesiredStopped); err != nil {
		t.Fatal(err)
	}
	eng.AddEvents(100)
	events.Add(100)
	agree("the task stopped", cluster.TaskStopped, func(known bool, _ time.Duration, text string) bool { return text == "-" })

	// Wanted again, but its core is gone: not running, and late.
	stopCore()
	if err := a.SetState(ctx, sp.Name, core.DesiredRunning); err != nil {
		t.Fatal(err)
	}
	agree("no core", cluster.TaskNotRunning, behind)
}

// parseLag reads ctl's lag column; -1 for "unknown" or "-".
func parseLag(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		return -1
	}
	return d
}
