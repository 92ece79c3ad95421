package recipe

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// Every recipe test runs against each server of -targets: Apache
// ZooKeeper 3.8 (the reference) and shepherd coord. Both are started once
// per test binary with a short tick, so that session timeouts — and the
// fault tests that wait for them — take a second, not ten.
var flagTargets = flag.String("targets", os.Getenv("SHEPHERD_RECIPE_TARGETS"),
	"comma-separated servers to test on (default: all registered: zookeeper, shepherd)")

// testTick is both servers' tickTime: sessions may last 2 to 100 ticks.
const testTick = 200 * time.Millisecond

// Session timeouts the tests ask for: one for fault tests, where it is
// the time to wait for a takeover, and a roomier one elsewhere so that a
// slow CI machine does not expire sessions by accident.
const (
	faultTimeout  = 1600 * time.Millisecond
	normalTimeout = 8 * time.Second
)

// target is one server the tests run on.
type target struct {
	name string
	addr string
	// missing, when set, says why the server cannot run here; its tests
	// skip, or fail under SHEPHERD_IT=1.
	missing string
	err     error // a start failure of a server that should have started
}

// A starter brings a target up for the whole test binary and returns the
// function that stops it. Each target registers itself from its own file.
type starter func() (*target, func())

var starters = map[string]starter{}

var targets []*target

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	names := slices.Sorted(maps.Keys(starters))
	if *flagTargets != "" {
		names = strings.Split(*flagTargets, ",")
	}
	for _, name := range names {
		name = strings.TrimSpace(name)
		start, ok := starters[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "recipe: unknown target %q (known: %v)\n", name, slices.Sorted(maps.Keys(starters)))
			return 2
		}
		tg, stop := start()
		defer stop()
		targets = append(targets, tg)
	}
	return m.Run()
}

func (tg *target) require(t testing.TB) {
	t.Helper()
	testpeer.Require(t, tg.name, tg.missing == "", tg.missing)
	if tg.err != nil {
		t.Fatalf("%s did not start: %v", tg.name, tg.err)
	}
}

// onEachTarget runs body as a subtest per target.
func onEachTarget(t *testing.T, body func(t *testing.T, tg *target)) {
	t.Helper()
	if len(targets) == 0 {
		t.Fatal("no target server registered")
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			tg.require(t)
			body(t, tg)
		})
	}
}

// testLogger sends a test's slog output to t.Log, so that logs appear
// only for failing tests, next to the failure.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// dial connects a Session to addr (a connect string, maybe with a chroot)
// and closes it when the test ends.
func dial(t testing.TB, addr string, opts Options) *Session {
	t.Helper()
	if opts.SessionTimeout == 0 {
		opts.SessionTimeout = normalTimeout
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	if opts.Retry == (RetryPolicy{}) {
		opts.Retry = RetryPolicy{BaseDelay: 20 * time.Millisecond, MaxDelay: 500 * time.Millisecond, MaxElapsed: 30 * time.Second}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Dial(ctx, addr, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(s.Close)
	return s
}

var pathSeq atomic.Int64

// testPath returns a path no other test uses.
func testPath(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/recipe-test/%s-%d", name, pathSeq.Add(1))
}

// ctxFor returns a context that ends with the test or after d.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond every 10ms until it returns nil or d passes, then
// fails the test with cond's last error.
func waitFor(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %v: %v", what, d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stateRecorder collects the states a Session reports.
type stateRecorder struct {
	ch chan State
}

func recordStates(s *Session) *stateRecorder {
	r := &stateRecorder{ch: make(chan State, 64)}
	s.Listen(func(st State) { r.ch <- st })
	return r
}

// expect waits for the next states to be want, in order.
func (r *stateRecorder) expect(t testing.TB, d time.Duration, want ...State) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for i, w := range want {
		select {
		case got := <-r.ch:
			if got != w {
				t.Fatalf("state %d: got %v, want %v (want sequence %v)", i, got, w, want)
			}
		case <-timer.C:
			t.Fatalf("state %d: no %v within %v (want sequence %v)", i, w, d, want)
		}
	}
}

func init() { starters["zookeeper"] = startZooKeeper }

// startZooKeeper runs Apache ZooKeeper 3.8 with testTick and no limit on
// connections per client address (the benchmarks open 128 sessions).
func startZooKeeper() (*target, func()) {
	tg := &target{name: "zookeeper"}
	if why, ok := testpeer.ZooKeeperAvailable(); !ok {
		tg.missing = why
		return tg, func() {}
	}
	dir, err := os.MkdirTemp("", "recipe-zookeeper-")
	if err != nil {
		tg.err = err
		return tg, func() {}
	}
	z, err := testpeer.LaunchZooKeeper(dir, testpeer.ZKOptions{
		TickTime: testTick,
		ExtraConfig: map[string]string{
			"maxClientCnxns":    "0",
			"maxSessionTimeout": fmt.Sprint((100 * testTick).Milliseconds()),
			"forceSync":         "no",
		},
	})
	if err != nil {
		tg.err = err
		os.RemoveAll(dir)
		return tg, func() {}
	}
	tg.addr = z.Addr()
	return tg, func() {
		_ = z.Stop()
		os.RemoveAll(dir)
	}
}
