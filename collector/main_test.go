package collector

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// envChild makes the test binary run one collector agent instead of the
// tests: the kill -9 tests start collectors as processes this way, from
// the binary already built, with the same RunAgent `shepherd collector`
// runs. Its value is the agent's arguments, one per line.
const envChild = "COLLECTOR_TEST_CHILD"

func TestMain(m *testing.M) {
	if args := os.Getenv(envChild); args != "" {
		os.Exit(childMain(strings.Split(args, "\n")))
	}
	os.Exit(m.Run())
}

// childMain runs an agent from "key=value" arguments until SIGTERM.
func childMain(args []string) int {
	kv := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		kv[k] = v
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg := testAgentConfig(kv["name"], kv["out"], Strategy(kv["strategy"]), log)
	cfg.Assign = kv["assign"] == "1"
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := runAgent(ctx, kv["zk"], cfg); err != nil {
		log.Error("agent failed", "err", err)
		return 1
	}
	return 0
}

// Timings of the tests: fast heartbeats, death after a second.
const (
	testPoll      = 50 * time.Millisecond
	testStatus    = 100 * time.Millisecond
	testDeadAfter = time.Second
)

func testAgentConfig(name, out string, strategy Strategy, log *slog.Logger) AgentConfig {
	if strategy == "" {
		strategy = Local
	}
	return AgentConfig{
		Collector: Config{
			Name: name, OutDir: out, PollInterval: testPoll, StatusInterval: testStatus,
			RotateSize: 4 << 10, MaxRead: 16 << 10, Logger: log,
		},
		Assigner: AssignerConfig{Name: name, Strategy: strategy, PollInterval: testPoll, DeadAfter: testDeadAfter, Logger: log},
	}
}

// runAgent dials connect as `shepherd collector` does, with the tests'
// credential, and runs cfg on that session until ctx ends.
func runAgent(ctx context.Context, connect string, cfg AgentConfig) error {
	s, err := recipe.Dial(ctx, connect, recipe.Options{SessionTimeout: 4 * time.Second, Auth: coordtest.Auth, Logger: cfg.Collector.Logger})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer s.Close()
	return RunAgent(ctx, s, cfg)
}

// target is a coordination server the tests run against.
type target struct {
	name    string
	addr    string
	restart func(t testing.TB) // stop and start it again, same address and data
}

// forEachTarget runs fn against `shepherd coord` in-process and against
// Apache ZooKeeper 3.8, each the test's own.
func forEachTarget(t *testing.T, fn func(t *testing.T, tg *target)) {
	for _, name := range []string{"shepherd", "zookeeper"} {
		t.Run(name, func(t *testing.T) { fn(t, startTarget(t, name)) })
	}
}

func startShepherd(t testing.TB) *target { return startTarget(t, "shepherd") }

func startTarget(t testing.TB, name string) *target {
	t.Helper()
	r := coordtest.StartRestartable(t, name, 500*time.Millisecond)
	return &target{name: name, addr: r.Addr, restart: r.Restart}
}

// testLogger logs to the test when -v and COLLECTOR_TEST_LOG are set.
func testLogger() *slog.Logger {
	if os.Getenv("COLLECTOR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func lineOf(src, i int) string { return fmt.Sprintf("source-%02d line-%06d", src, i) }
