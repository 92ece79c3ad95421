package recipe

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/shepherd-dev/shepherd/coord"
)

func init() { starters["shepherd"] = startShepherd }

// startShepherd runs `shepherd coord` in-process with the same tick,
// session bounds and connection limit as the ZooKeeper target.
func startShepherd() (*target, func()) {
	tg := &target{name: "shepherd"}
	dir, err := os.MkdirTemp("", "recipe-shepherd-")
	if err != nil {
		tg.err = err
		return tg, func() {}
	}
	cfg := coord.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.TickTime = testTick
	cfg.MaxSessionTimeout = 100 * testTick
	cfg.MaxClientConns = 0
	cfg.NoSync = true
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("RECIPE_SERVER_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := coord.NewServer(cfg)
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		tg.err = err
		os.RemoveAll(dir)
		return tg, func() {}
	}
	tg.addr = srv.Addr()
	return tg, func() {
		done := make(chan struct{})
		go func() { _ = srv.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		os.RemoveAll(dir)
	}
}
