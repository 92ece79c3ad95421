// Package coordtest runs a test binary's scenarios against both
// coordination servers Shepherd supports: `shepherd coord` in-process and
// Apache ZooKeeper 3.8 as a child JVM (internal/testpeer). Packages built
// on the coordination layer (ctl, scheduler, core, …) start both once in
// TestMain and run every scenario on each, so nothing comes to depend on a
// feature only the bundled server has. coord/recipe's own tests use it
// too, so it must never import coord/recipe (internal/sessiontest dials
// sessions). It also holds the helpers every test package shares: the
// tests' credential (Auth, AuthFile), WaitFor, Context and Logger.
package coordtest

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// Target is one server the tests run on.
type Target struct {
	Name string // "shepherd" or "zookeeper"
	Addr string // host:port
	// missing, when set, says why the server cannot run here: its tests
	// skip, or fail under SHEPHERD_IT=1.
	missing string
	err     error // a start failure of a server that should have started
}

// maxSessionTicks lets tests ask for sessions far longer than the short
// tick would otherwise allow (20 ticks), e.g. a few seconds to survive a
// server restart.
const maxSessionTicks = 200

// Start launches both servers with the given tick (a short one makes
// session timeouts, and the tests that wait for them, fast) and no fsync.
// name prefixes their temporary directories. stop ends both; call it when
// m.Run returns. A server that cannot start is recorded, not fatal: its
// tests fail (or skip, for a missing peer without SHEPHERD_IT) in Require.
func Start(name string, tick time.Duration) (targets []*Target, stop func()) {
	targets, stop, _ = StartNamed(name, tick, "shepherd", "zookeeper")
	return targets, stop
}

// StartNamed is Start for the servers named (shepherd, zookeeper), e.g.
// from a test binary's flag; an unknown name is an error.
func StartNamed(name string, tick time.Duration, servers ...string) (targets []*Target, stop func(), err error) {
	starters := map[string]func(string, time.Duration) (*Target, func()){"shepherd": startShepherd, "zookeeper": startZooKeeper}
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	for _, server := range servers {
		start, ok := starters[server]
		if !ok {
			return targets, stop, fmt.Errorf("coordtest: unknown server %q (known: shepherd, zookeeper)", server)
		}
		tg, s := start(name, tick)
		targets = append(targets, tg)
		stops = append(stops, s)
	}
	return targets, stop, nil
}

func startShepherd(name string, tick time.Duration) (*Target, func()) {
	tg := &Target{Name: "shepherd"}
	dir, err := os.MkdirTemp("", name+"-shepherd-")
	if err != nil {
		tg.err = err
		return tg, func() {}
	}
	cfg := coord.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.TickTime = tick
	cfg.MaxSessionTimeout = maxSessionTicks * tick
	cfg.MaxClientConns = 0
	cfg.FourLetterWords = []string{"*"}
	cfg.NoSync = true
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := coord.NewServer(cfg)
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		tg.err = err
		os.RemoveAll(dir)
		return tg, func() {}
	}
	tg.Addr = srv.Addr()
	return tg, func() {
		_ = srv.Close()
		os.RemoveAll(dir)
	}
}

func startZooKeeper(name string, tick time.Duration) (*Target, func()) {
	tg := &Target{Name: "zookeeper"}
	if why, ok := testpeer.ZooKeeperAvailable(); !ok {
		tg.missing = why
		return tg, func() {}
	}
	dir, err := os.MkdirTemp("", name+"-zookeeper-")
	if err != nil {
		tg.err = err
		return tg, func() {}
	}
	z, err := testpeer.LaunchZooKeeper(dir, testpeer.ZKOptions{
		TickTime: tick,
		ExtraConfig: map[string]string{
			"maxClientCnxns":       "0",
			"maxSessionTimeout":    fmt.Sprint((maxSessionTicks * tick).Milliseconds()),
			"forceSync":            "no",
			"extendedTypesEnabled": "true", // TTL nodes, as shepherd coord has them
		},
	})
	if err != nil {
		tg.err = err
		os.RemoveAll(dir)
		return tg, func() {}
	}
	tg.Addr = z.Addr()
	return tg, func() {
		_ = z.Stop()
		os.RemoveAll(dir)
	}
}

// Require stops t unless the server runs: a missing peer skips (fails
// under SHEPHERD_IT=1), a failed start fails.
func (tg *Target) Require(t testing.TB) {
	t.Helper()
	testpeer.Require(t, tg.Name, tg.missing == "", tg.missing)
	if tg.err != nil {
		t.Fatalf("%s did not start: %v", tg.Name, tg.err)
	}
}

// Up reports whether the server runs (Require would not stop a test).
func (tg *Target) Up() bool { return tg.missing == "" && tg.err == nil }

// OnEach runs body as a subtest per server.
func OnEach(t *testing.T, targets []*Target, body func(t *testing.T, tg *Target)) {
	t.Helper()
	for _, tg := range targets {
		t.Run(tg.Name, func(t *testing.T) {
			tg.Require(t)
			body(t, tg)
		})
	}
}

var (
	chrootSeq   atomic.Int64
	unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
)

// Chroot returns a connect string for tg with a chroot under prefix that
// no other test uses, so that every test sees an empty tree of its own.
// The prefix node is world-writable, as a fresh ensemble's root is: the
// first test to dial a chroot under it with a credential would otherwise
// create it with that credential's ACL and close it to every other test.
func (tg *Target) Chroot(t testing.TB, prefix string) string {
	t.Helper()
	tg.ensurePrefix(t, prefix)
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	return fmt.Sprintf("%s/%s/%s-%d", tg.Addr, prefix, name, chrootSeq.Add(1))
}

// prefixes holds the prefix nodes made so far, as Addr/prefix.
var prefixes sync.Map

// ensurePrefix creates /prefix on tg, world-writable, once per binary.
func (tg *Target) ensurePrefix(t testing.TB, prefix string) {
	t.Helper()
	key := tg.Addr + "/" + prefix
	if _, ok := prefixes.Load(key); ok {
		return
	}
	conn, _, err := zk.Connect([]string{tg.Addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(discardLogger{}))
	if err != nil {
		t.Fatalf("connect to %s: %v", tg.Addr, err)
	}
	defer conn.Close()
	_, err = conn.Create("/"+prefix, nil, 0, zk.WorldACL(zk.PermAll)) // queued until connected
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create /%s on %s: %v", prefix, tg.Name, err)
	}
	prefixes.Store(key, struct{}{})
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// Run is a package's TestMain body: it starts both servers (Start) into
// *targets, runs the tests, stops the servers and returns the exit code
// for os.Exit.
func Run(m *testing.M, name string, tick time.Duration, targets *[]*Target) int {
	var stop func()
	*targets, stop = Start(name, tick)
	defer stop()
	return m.Run()
}
