package recipe

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// restartable is a server of the test's own, restarted with its data.
type restartable struct {
	addr    string
	restart func(t testing.TB)
}

// TestMutexSurvivesServerRestart restarts the coordination server under a
// lock holder: with the server back within the session timeout, the
// session and the lock survive, and nobody else gets the lock meanwhile.
func TestMutexSurvivesServerRestart(t *testing.T) {
	t.Parallel()
	servers := map[string]func(t *testing.T) restartable{
		"zookeeper": restartableZooKeeper,
		"shepherd":  restartableShepherd,
	}
	for _, tg := range targets {
		start := servers[tg.name]
		t.Run(tg.name, func(t *testing.T) {
			tg.require(t)
			srv := start(t)
			ctx := ctxFor(t, 60*time.Second)
			p := testPath(t)
			holder := dial(t, srv.addr, Options{SessionTimeout: 15 * time.Second})
			rec := recordStates(holder)
			waiter := dial(t, srv.addr, Options{SessionTimeout: 15 * time.Second})
			m, w := NewMutex(holder, p), NewMutex(waiter, p)
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			done := lockAsync(ctx, w)
			waitChildren(t, holder, p, 2)
			id := holder.ID()
			began := time.Now()
			srv.restart(t)
			rec.expect(t, 30*time.Second, StateSuspended, StateReconnected)
			t.Logf("server back and session %#x reconnected after %v", id, time.Since(began).Round(time.Millisecond))
			if holder.ID() != id {
				t.Fatalf("session %#x replaced by %#x over the restart", id, holder.ID())
			}
			select {
			case <-m.Lost():
				t.Fatal("the lock was lost over a restart within the session timeout")
			default:
			}
			notYet(t, done, "the waiter while the holder still holds after the restart")
			if err := m.Unlock(); err != nil {
				t.Fatal(err)
			}
			if err := recv(t, done, "the waiter after the holder unlocked"); err != nil {
				t.Fatal(err)
			}
			if err := w.Unlock(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func restartableZooKeeper(t *testing.T) restartable {
	z := testpeer.StartZooKeeperWith(t, testpeer.ZKOptions{TickTime: 500 * time.Millisecond})
	return restartable{addr: z.Addr(), restart: z.Restart}
}

func restartableShepherd(t *testing.T) restartable {
	cfg := coord.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.TickTime = 500 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	var srv *coord.Server
	start := func() {
		var err error
		if srv, err = coord.NewServer(cfg); err == nil {
			err = srv.Start()
		}
		if err != nil {
			t.Fatalf("start shepherd coord: %v", err)
		}
	}
	start()
	cfg.Listen = srv.Addr() // the same port after a restart
	t.Cleanup(func() { _ = srv.Close() })
	return restartable{addr: srv.Addr(), restart: func(t testing.TB) {
		if err := srv.Close(); err != nil {
			t.Fatalf("stop shepherd coord: %v", err)
		}
		start()
	}}
}
