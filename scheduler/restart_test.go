package scheduler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
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

// TestRunSurvivesServerRestart restarts the coordination server while a
// master runs a job: back within the session timeout, the run completes
// once, at attempt 1, and nobody else runs it.
func TestRunSurvivesServerRestart(t *testing.T) {
	servers := map[string]func(t *testing.T) restartable{
		"zookeeper": restartableZooKeeper,
		"shepherd":  restartableShepherd,
	}
	for _, tg := range targets {
		t.Run(tg.Name, func(t *testing.T) {
			tg.Require(t)
			srv := servers[tg.Name](t)
			out := filepath.Join(t.TempDir(), "effects")
			job := appendJob("batch", "@yearly", out, "sleep 2")
			for _, h := range []string{"a", "b"} {
				startSchedulerOn(t, dialTimeout(t, srv.addr, 15*time.Second), Options{Jobs: []Job{job}, Host: h}, nil)
			}
			s := dialTimeout(t, srv.addr, 15*time.Second)
			key := trigger(t, s, "batch")
			checkFor(t, 20*time.Second, 50*time.Millisecond, func() error {
				if len(lines(t, out)) == 0 {
					return fmt.Errorf("the run has not started")
				}
				return nil
			})
			srv.restart(t)
			var r Result
			checkFor(t, 30*time.Second, 100*time.Millisecond, func() error {
				got, ok, err := ReadResult(context.Background(), s, "batch", key)
				if !ok {
					return fmt.Errorf("no result (%v)", err)
				}
				r = got
				return nil
			})
			if r.Status != Succeeded || r.Attempt != 1 {
				t.Errorf("result %+v, want succeeded at attempt 1", r)
			}
			if got := lines(t, out); len(got) != 1 {
				t.Errorf("effects %q, want one run", got)
			}
		})
	}
}

func restartableZooKeeper(t *testing.T) restartable {
	z := testpeer.StartZooKeeperWith(t, testpeer.ZKOptions{TickTime: time.Second})
	return restartable{addr: z.Addr(), restart: z.Restart}
}

func restartableShepherd(t *testing.T) restartable {
	cfg := coord.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.TickTime = time.Second
	cfg.NoSync = true
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
