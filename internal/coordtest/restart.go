package coordtest

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// Restartable is a coordination server of one test's own, which the test
// restarts with its data on the same address.
type Restartable struct {
	Addr    string
	Restart func(t testing.TB)
}

// RestartSessionTimeout is the session timeout of clients that ride out a
// restart of a StartRestartable server (with a 500 ms tick: 200 ticks is
// 100 s). A test asserting that a session survives a restart assumes the
// server is back within it; a JVM restarting on a loaded 2-core machine
// has taken 28 s, so the margin is three times that.
const RestartSessionTimeout = 90 * time.Second

// StartRestartable starts a server for t alone: "shepherd" in-process or
// "zookeeper" as a child JVM, with the given tick, fsync on (a restart
// must keep what it acknowledged) and sessions of up to 200 ticks, so
// that a session can outlast a restart. It stops when t ends.
func StartRestartable(t testing.TB, name string, tick time.Duration) Restartable {
	t.Helper()
	switch name {
	case "shepherd":
		return restartableShepherd(t, tick)
	case "zookeeper":
		z := testpeer.StartZooKeeperWith(t, testpeer.ZKOptions{
			TickTime:    tick,
			ExtraConfig: map[string]string{"maxSessionTimeout": fmt.Sprint((maxSessionTicks * tick).Milliseconds())},
		})
		return Restartable{Addr: z.Addr(), Restart: z.Restart}
	}
	t.Fatalf("coordtest: no server %q", name)
	return Restartable{}
}

func restartableShepherd(t testing.TB, tick time.Duration) Restartable {
	cfg := coord.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.TickTime = tick
	cfg.MaxSessionTimeout = maxSessionTicks * tick
	cfg.Logger = slog.New(slog.DiscardHandler)
	var srv *coord.Server
	start := func(t testing.TB) {
		var err error
		if srv, err = coord.NewServer(cfg); err == nil {
			err = srv.Start()
		}
		if err != nil {
			t.Fatalf("start shepherd coord: %v", err)
		}
	}
	start(t)
	cfg.Listen = srv.Addr() // the same port after a restart
	t.Cleanup(func() { _ = srv.Close() })
	return Restartable{Addr: srv.Addr(), Restart: func(t testing.TB) {
		if err := srv.Close(); err != nil {
			t.Fatalf("stop shepherd coord: %v", err)
		}
		start(t)
	}}
}
