package compat

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

var (
	flagTargets = flag.String("targets", envOr("SHEPHERD_COMPAT_TARGETS", "zookeeper,shepherd"),
		"comma-separated servers to run the scenarios on: zookeeper, shepherd")
	flagUpdate = flag.Bool("update", false,
		"rewrite testdata/*.golden from ZooKeeper's transcripts")
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// target is one server the scenarios run on. Both speak the ZooKeeper
// protocol at addr; nothing else about them may matter to a scenario.
type target struct {
	name string
	addr string
	// missing, when set, says why the server cannot run here (no java);
	// its scenarios skip, or fail under SHEPHERD_IT=1.
	missing string
	// err is a start failure of a server that should have started.
	err error
	// logTail, if set, returns the end of the server's log, printed
	// when a test fails.
	logTail func() string
}

// A starter brings a target up for the whole test binary and returns the
// function that stops it. Each target file registers its starter in init,
// so a target whose server does not build can be left out by file.
type starter func() (*target, func())

var starters = map[string]starter{}

// targets are the servers of this run, in -targets order.
var targets []*target

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	for _, name := range strings.Split(*flagTargets, ",") {
		name = strings.TrimSpace(name)
		start, ok := starters[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "compat: unknown target %q in -targets=%s (known: zookeeper, shepherd)\n", name, *flagTargets)
			return 2
		}
		tg, stop := start()
		defer stop()
		targets = append(targets, tg)
	}
	code := m.Run()
	if code != 0 {
		for _, tg := range targets {
			if tg.logTail != nil {
				fmt.Fprintf(os.Stderr, "--- %s log tail:\n%s\n", tg.name, tg.logTail())
			}
		}
	}
	return code
}

// tailFile returns the last n lines of the file at path.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// require stops the calling (per-target) test when its server is not up.
func (tg *target) require(t *testing.T) {
	t.Helper()
	testpeer.Require(t, tg.name, tg.missing == "", tg.missing)
	if tg.err != nil {
		t.Fatalf("%s did not start: %v", tg.name, tg.err)
	}
}

// compare runs body on every target, each in its own parallel subtest,
// then checks the transcripts: ZooKeeper's against the golden file (which
// -update rewrites from it), every other server's against ZooKeeper's, or
// against the golden file when ZooKeeper did not run.
func compare(t *testing.T, name string, body func(s *script)) {
	t.Parallel()
	results := make([][]string, len(targets))
	t.Cleanup(func() { checkTranscripts(t, name, results) })
	for i, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			tg.require(t)
			lines := runScript(t, tg, name, body)
			if !t.Failed() {
				results[i] = lines
			}
		})
	}
}

const zookeeper = "zookeeper"

func goldenPath(name string) string { return filepath.Join("testdata", name+".golden") }

func checkTranscripts(t *testing.T, name string, results [][]string) {
	var zk []string
	for i, tg := range targets {
		if tg.name == zookeeper {
			zk = results[i]
		}
	}
	golden, gerr := readGolden(name)
	if *flagUpdate && zk != nil {
		if err := os.WriteFile(goldenPath(name), []byte(strings.Join(zk, "\n")+"\n"), 0o644); err != nil {
			t.Fatalf("update golden: %v", err)
		}
		golden, gerr = zk, nil
	}
	for i, tg := range targets {
		got := results[i]
		if got == nil {
			continue
		}
		want, wantName := zk, "zookeeper"
		if tg.name == zookeeper || zk == nil {
			if gerr != nil {
				t.Errorf("%s: %v (run with -targets=zookeeper -update to record it)", tg.name, gerr)
				continue
			}
			want, wantName = golden, goldenPath(name)
		}
		if d := diffLines(want, got); d != "" {
			t.Errorf("%s transcript differs from %s (-%s +%s):\n%s", tg.name, wantName, wantName, tg.name, d)
		}
	}
}

func readGolden(name string) ([]string, error) {
	b, err := os.ReadFile(goldenPath(name))
	if err != nil {
		return nil, fmt.Errorf("no golden transcript: %w", err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"), nil
}
