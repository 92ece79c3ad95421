package collector

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// benchFile writes a log of n lines of about 100 bytes and returns its
// path and size.
func benchFile(b *testing.B, n int) (string, int64) {
	b.Helper()
	p := filepath.Join(b.TempDir(), "bench.log")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	pad := strings.Repeat("x", 70)
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "2026-11-22T06:00:00Z INFO %08d %s\n", i, pad)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	fi, _ := f.Stat()
	f.Close()
	return p, fi.Size()
}

// BenchmarkCollectThroughput measures one collector copying a 100 MB-ish
// log into its output (fsync per round, a status commit per round), and
// as the limit the same copy with io.Copy and one fsync ("cat").
func BenchmarkCollectThroughput(b *testing.B) {
	const lines = 400_000
	src, size := benchFile(b, lines)
	b.Run("cat", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			in, _ := os.Open(src)
			out, _ := os.Create(filepath.Join(b.TempDir(), "out.log"))
			if _, err := io.Copy(out, in); err != nil {
				b.Fatal(err)
			}
			out.Sync()
			in.Close()
			out.Close()
		}
		b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e6, "MB/s")
		b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	})
	b.Run("collector", func(b *testing.B) {
		tg := startShepherd(b)
		for i := 0; i < b.N; i++ {
			root := fmt.Sprintf("/bench%d", i)
			sr := dialB(b, tg.addr+root)
			if _, err := NewAdmin(sr).AddSources(context.Background(), "file://"+src); err != nil {
				b.Fatal(err)
			}
			out := b.TempDir()
			cfg := testAgentConfig(tg.addr+root, "b1", out, Local, discard())
			cfg.Assign = true
			cfg.Collector.MaxRead = 4 << 20
			cfg.Collector.RotateSize = DefaultRotateSize
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- RunAgent(ctx, cfg) }()
			waitSize(b, filepath.Join(out, SourceKey("file://"+src)), size, 5*time.Minute)
			cancel()
			<-done
			sr.Close()
		}
		b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e6, "MB/s")
		b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	})
}

// BenchmarkFailover measures the time from a collector's death (its
// heartbeats stop) to its source's new lines appearing in the output of
// the collector that takes it over, with the test timings (status every
// 100ms, dead after 1s, assigner polling every 50ms): about DeadAfter
// plus a poll of the assigner and one of the new owner.
func BenchmarkFailover(b *testing.B) {
	tg := startShepherd(b)
	for i := 0; i < b.N; i++ {
		root := fmt.Sprintf("/failover%d", i)
		s := dialB(b, tg.addr+root)
		dir := b.TempDir()
		src := filepath.Join(dir, "app.log")
		if err := os.WriteFile(src, []byte("first\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		if _, err := NewAdmin(s).AddSources(context.Background(), "file://"+src); err != nil {
			b.Fatal(err)
		}
		actx, acancel := context.WithCancel(context.Background())
		as, err := NewAssigner(s, testAgentConfig("", "assigner", "", Local, discard()).Assigner)
		if err != nil {
			b.Fatal(err)
		}
		adone := make(chan error, 1)
		go func() { adone <- as.Run(actx) }()
		start := func(name string) (stop func(), out string) {
			cfg := testAgentConfig(tg.addr+root, name, filepath.Join(dir, name), Local, discard())
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- RunAgent(ctx, cfg) }()
			return func() { cancel(); <-done }, filepath.Join(dir, name, SourceKey("file://"+src))
		}
		stopA, outA := start("a")
		waitSize(b, outA, int64(len("first\n")), time.Minute)
		stopB, outB := start("b") // a newcomer with a share of 0: gets nothing yet
		stopA()
		died := time.Now()
		f, err := os.OpenFile(src, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		f.WriteString("second\n")
		f.Close()
		waitSize(b, outB, int64(len("second\n")), time.Minute)
		b.ReportMetric(float64(time.Since(died).Milliseconds()), "ms/failover")
		stopB()
		acancel()
		<-adone
		s.Close()
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// waitSize waits until the files under dir hold at least size bytes.
func waitSize(b *testing.B, dir string, size int64, limit time.Duration) {
	b.Helper()
	deadline := time.Now().Add(limit)
	for {
		var got int64
		files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil {
				got += fi.Size()
			}
		}
		if got >= size {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("after %v: %d of %d bytes in %s", limit, got, size, dir)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func dialB(b *testing.B, connect string) *recipe.Session {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := recipe.Dial(ctx, connect, recipe.Options{SessionTimeout: 4 * time.Second, Auth: coordtest.Auth, Logger: discard()})
	if err != nil {
		b.Fatal(err)
	}
	return s
}
