package core

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// testSpec is a valid hot-standby spec for task name.
func testSpec(name string) *Spec {
	sp := &Spec{
		Name:   name,
		Source: SourceEndpoint{Endpoint: Endpoint{Host: "source.test", User: "repl", Flavor: FlavorMariaDB}},
		Target: TargetEndpoint{Endpoint: Endpoint{Host: "target.test", User: "apply", Flavor: FlavorMariaDB}},
		Start:  StartEarliest,
	}
	sp.setDefaults()
	return sp
}

// coldSpec is a valid cold-standby spec for task name in group.
func coldSpec(name, group string) *Spec {
	sp := testSpec(name)
	sp.Standby = Standby{Mode: ModeCold, Group: group}
	return sp
}

// memFleet is one MemEngine per task, for cores that run several.
type memFleet map[string]*MemEngine

func (f memFleet) Open(ctx context.Context, sp *Spec, log *slog.Logger) (Replicator, error) {
	e, ok := f[sp.Name]
	if !ok {
		return nil, fmt.Errorf("%w: memFleet: no engine for task %q", ErrNonRetryable, sp.Name)
	}
	return e.Open(ctx, sp, log)
}

// ProbeSource finds every source a reachable primary.
func (f memFleet) ProbeSource(ctx context.Context, ep Endpoint, log *slog.Logger) SourceHealth {
	return (&MemEngine{}).ProbeSource(ctx, ep, log)
}

// runningCore is a Core running in the test, with its own session.
type runningCore struct {
	t      testing.TB
	host   string
	c      *Core
	s      *recipe.Session
	cancel context.CancelFunc
	done   chan struct{}
}

// startCore runs a core named host with the test's short intervals;
// edit adjusts its config. The core stops when the test ends.
func startCore(t testing.TB, connect, host string, eng Engine, edit func(*Config)) *runningCore {
	t.Helper()
	return startCoreOn(t, dial(t, connect, testSessionTimeout), host, eng, edit)
}

func startCoreOn(t testing.TB, s *recipe.Session, host string, eng Engine, edit func(*Config)) *runningCore {
	t.Helper()
	cfg := Config{
		Host:               host,
		Engine:             eng,
		ScanInterval:       200 * time.Millisecond,
		CheckpointInterval: 100 * time.Millisecond,
		RetryBase:          50 * time.Millisecond,
		RetryMax:           400 * time.Millisecond,
		Logger:             coordtest.Logger(t).With("core", host),
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := New(s, cfg)
	if err != nil {
		t.Fatalf("core.New(%s): %v", host, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc := &runningCore{t: t, host: host, c: c, s: s, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rc.done)
		if err := c.Run(ctx); err != nil {
			t.Errorf("core %s: Run: %v", host, err)
		}
	}()
	t.Cleanup(rc.stop)
	return rc
}

// stop stops the core gracefully and waits for it.
func (rc *runningCore) stop() {
	rc.cancel()
	select {
	case <-rc.done:
	case <-time.After(20 * time.Second):
		rc.t.Errorf("core %s did not stop within 20s", rc.host)
	}
}

// crash ends the core's session at once, as if its process died and the
// server noticed: its instance nodes go, nothing is handed over.
func (rc *runningCore) crash() {
	rc.s.Close()
	rc.stop()
}

// waitOwner waits until task's first instance belongs to host and is in
// state, and returns it.
func waitOwner(t testing.TB, a *Admin, task, host, state string, d time.Duration) Instance {
	t.Helper()
	var in Instance
	coordtest.WaitFor(t, d, fmt.Sprintf("%s to own %s in state %s", host, task, state), func() error {
		ts, err := a.Task(context.Background(), task)
		if err != nil {
			return err
		}
		owner, ok := ts.Owner()
		if !ok {
			return fmt.Errorf("no instance")
		}
		if !strings.HasPrefix(owner.Name, host+"-") || owner.State.State != state {
			return fmt.Errorf("owner %s is %s (%s); instances %v", owner.Name, owner.State.State, owner.State.Error, instanceNames(ts))
		}
		in = owner
		return nil
	})
	return in
}

func instanceNames(ts TaskStatus) []string {
	var names []string
	for _, in := range ts.Instances {
		names = append(names, in.Name+"="+in.State.State)
	}
	return names
}

// waitApplied waits until the engine has applied every source event,
// each exactly once.
func waitApplied(t testing.TB, e *MemEngine, d time.Duration) {
	t.Helper()
	coordtest.WaitFor(t, d, "every event applied once", func() error {
		_, err := e.Check()
		return err
	})
}

// mustAdd stores a spec.
// failedTask is task t1 whose event 200 fails for good, owned FAILED by core h1.
type failedTask struct {
	connect string
	a       *Admin
	eng     *MemEngine
	h1      *runningCore
	failed  Instance // h1's FAILED instance of t1
}

// startFailedTask adds t1 on tg, starts core h1 (its config changed by
// edit) over 500 in-memory events of which event 200 fails for good, and
// waits for h1 to own t1 FAILED.
func startFailedTask(t testing.TB, tg *target, edit func(*Config)) failedTask {
	t.Helper()
	ft := failedTask{connect: chrootOf(t, tg), eng: NewMemEngine(500)}
	ft.a = NewAdmin(dial(t, ft.connect, testSessionTimeout), "")
	mustAdd(t, ft.a, testSpec("t1"))
	ft.eng.poison = 200
	ft.h1 = startCore(t, ft.connect, "h1", ft.eng, edit)
	ft.failed = waitOwner(t, ft.a, "t1", "h1", StateFailed, 10*time.Second)
	return ft
}

func mustAdd(t testing.TB, a *Admin, sp *Spec) {
	t.Helper()
	if err := a.AddTask(context.Background(), sp, false); err != nil {
		t.Fatalf("AddTask %s: %v", sp.Name, err)
	}
}

// kill stops the Runs of owners with prefix for good, and waits until
// none of them applies.
func (e *MemEngine) kill(t testing.TB, prefix string) {
	t.Helper()
	e.mu.Lock()
	e.dead[prefix] = true
	e.mu.Unlock()
	coordtest.WaitFor(t, 5*time.Second, prefix+"* to stop applying", func() error {
		e.mu.Lock()
		defer e.mu.Unlock()
		for owner, n := range e.running {
			if n > 0 && strings.HasPrefix(owner, prefix) {
				return fmt.Errorf("%s applies", owner)
			}
		}
		return nil
	})
}
