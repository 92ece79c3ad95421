package compat

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/shepherd-dev/shepherd/coord"
)

const shepherd = "shepherd"

func init() { starters[shepherd] = startShepherd }

// startShepherd runs the bundled server in-process, configured like the
// ZooKeeper target: tickTime 2 s, every four-letter word, fsync on. Its
// log goes to a file whose tail is printed when a test fails.
func startShepherd() (*target, func()) {
	tg := &target{name: shepherd}
	dir, err := os.MkdirTemp("", "compat-shepherd-")
	if err != nil {
		tg.err = err
		return tg, func() {}
	}
	logPath := filepath.Join(dir, "shepherd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		tg.err = err
		os.RemoveAll(dir)
		return tg, func() {}
	}
	cfg := coord.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.TickTime = 2 * time.Second
	cfg.FourLetterWords = []string{"*"}
	cfg.Logger = slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := coord.NewServer(cfg)
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		tg.err = err
		logFile.Close()
		os.RemoveAll(dir)
		return tg, func() {}
	}
	tg.addr = srv.Addr()
	tg.logTail = func() string { return tailFile(logPath, 40) }
	return tg, func() {
		_ = srv.Close()
		logFile.Close()
		os.RemoveAll(dir)
	}
}
