package recipe

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// Every recipe test runs against each server of -targets: Apache
// ZooKeeper 3.8 (the reference) and shepherd coord. Both are started once
// per test binary with a short tick, so that session timeouts — and the
// fault tests that wait for them — take a second, not ten.
var flagTargets = flag.String("targets", os.Getenv("SHEPHERD_RECIPE_TARGETS"),
	"comma-separated servers to test on (default: all registered: zookeeper, shepherd)")

// testTick is both servers' tickTime: sessions may last 2 to 200 ticks.
const testTick = 200 * time.Millisecond

// Session timeouts the tests ask for: one for fault tests, where it is
// the time to wait for a takeover, and a roomier one elsewhere so that a
// slow CI machine does not expire sessions by accident.
const (
	faultTimeout  = 1600 * time.Millisecond
	normalTimeout = 8 * time.Second
)

var targets []*coordtest.Target

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	names := []string{"shepherd", "zookeeper"}
	if *flagTargets != "" {
		names = strings.Split(strings.ReplaceAll(*flagTargets, " ", ""), ",")
	}
	var stop func()
	var err error
	targets, stop, err = coordtest.StartNamed("recipe", testTick, names...)
	defer stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "recipe:", err)
		return 2
	}
	return m.Run()
}

// dial connects a Session to addr (a connect string, maybe with a chroot)
// and closes it when the test ends.
func dial(t testing.TB, addr string, opts Options) *Session {
	t.Helper()
	if opts.SessionTimeout == 0 {
		opts.SessionTimeout = normalTimeout
	}
	if opts.Logger == nil {
		opts.Logger = coordtest.Logger(t)
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

// stateRecorder collects the states a Session reports.
type stateRecorder struct {
	ch chan State
}

func recordStates(s *Session) *stateRecorder {
	r := &stateRecorder{ch: make(chan State, 64)}
	s.Listen(func(st State) { r.ch <- st })
	return r
}

// next waits for the next state.
func (r *stateRecorder) next(t testing.TB, d time.Duration) State {
	t.Helper()
	select {
	case st := <-r.ch:
		return st
	case <-time.After(d):
		t.Fatalf("no state within %v", d)
		return 0
	}
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
