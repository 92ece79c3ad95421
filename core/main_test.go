package core

import (
	"os"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/sessiontest"
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
	opts.Logger = coordtest.Logger(t)
	opts.Retry = recipe.RetryPolicy{BaseDelay: 20 * time.Millisecond, MaxDelay: 300 * time.Millisecond, MaxElapsed: 20 * time.Second}
	return sessiontest.Dial(t, connect, opts)
}
