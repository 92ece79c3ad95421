package core

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// Every coordination test runs against both servers: shepherd coord (in
// process) and Apache ZooKeeper 3.8 (a child JVM), started once per test
// binary with a short tick so that session timeouts — and failovers —
// take a second or two.
const testTick = 100 * time.Millisecond

// testSessionTimeout is the session timeout of the cores under test: how
// long a crashed owner keeps its task before a standby takes over.
const testSessionTimeout = 1500 * time.Millisecond

type target = coordtest.Target

var targets []*target

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	var stop func()
	targets, stop = coordtest.Start("core", testTick)
	defer stop()
	defer removeBinary()
	defer stopSharedMariaDB()
	return m.Run()
}

// onEachTarget runs body as a subtest per server.
func onEachTarget(t *testing.T, body func(t *testing.T, tg *target)) {
	t.Helper()
	coordtest.OnEach(t, targets, body)
}

// chrootOf returns a connect string for tg with a chroot of the test's
// own, so that every test sees an empty tree.
func chrootOf(t testing.TB, tg *target) string { return tg.Chroot(t, "coretest") }

// dial opens a session for the test, closed when it ends.
func dial(t testing.TB, connect string, timeout time.Duration) *recipe.Session {
	t.Helper()
	return dialWith(t, connect, recipe.Options{SessionTimeout: timeout, Auth: coordtest.Auth})
}

// dialWith is dial with other options: a session without the tests'
// credential (an attacker's), or with InsecureOpenACL.
func dialWith(t testing.TB, connect string, opts recipe.Options) *recipe.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts.Logger = testLogger(t)
	opts.Retry = recipe.RetryPolicy{BaseDelay: 20 * time.Millisecond, MaxDelay: 300 * time.Millisecond, MaxElapsed: 20 * time.Second}
	s, err := recipe.Dial(ctx, connect, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", connect, err)
	}
	t.Cleanup(s.Close)
	return s
}

// testLogger sends slog output to t.Log, shown only for failing tests.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ctxFor returns a context that ends with the test or after d.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond every 20ms until it returns nil, failing the test
// with cond's last error if d passes first.
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
		time.Sleep(20 * time.Millisecond)
	}
}
