package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// generatorEnv makes the test binary serve as a generator process (see
// TestMain).
const generatorEnv = "BENCH_TEST_GENERATOR"

func TestHarnessMeasuresPinnedServerAndReportsFailedTarget(t *testing.T) {
	requireZooKeeper(t)
	online, err := onlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(online) < 2 {
		t.Skipf("the harness needs 2 CPUs, this process may use %v", online)
	}
	t.Setenv(generatorEnv, "1")
	dir := t.TempDir()
	// A server binary that dies at once: its row must show the failure
	// and the other server's runs must still be measured.
	broken := filepath.Join(dir, "broken")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho no such luck >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"zk", "coord", "gen"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := Harness{
		Targets:   []Target{ApacheZooKeeper(filepath.Join(dir, "zk")), ShepherdCoord(broken, filepath.Join(dir, "coord"))},
		Workloads: []string{"get"},
		Options: Options{
			Clients: 4, InFlight: 2, Duration: 500 * time.Millisecond, Warmup: 200 * time.Millisecond,
			Logger: coordtest.Logger(t),
		},
		Repeats:          1,
		Generators:       2,
		GeneratorCommand: []string{os.Args[0]},
		Dir:              filepath.Join(dir, "gen"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out strings.Builder
	err = h.Run(ctx, &out)
	report := out.String()
	t.Logf("\n%s", report)
	if !errors.Is(err, ErrServerExited) {
		t.Errorf("Run error = %v, want the broken target's ErrServerExited", err)
	}
	for _, want := range []string{
		"#### get", "| zookeeper ", "| shepherd ", "baseline", "failed 1",
		"confined to CPU " + FormatCPUList(online[:1]), "2 load-generator process(es)",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	zkLine := ""
	for line := range strings.Lines(report) {
		if strings.HasPrefix(line, "| zookeeper ") {
			zkLine = line
		}
	}
	cells := strings.Split(zkLine, "|")
	if len(cells) < 6 || strings.TrimSpace(cells[2]) == "—" || strings.TrimSpace(cells[5]) == "—" {
		t.Errorf("zookeeper row %q lacks ops/s or CPU per op", zkLine)
	}
}
