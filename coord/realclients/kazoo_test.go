package realclients

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

const (
	kazooScript = "testdata/kazoo_session.py"
	// kazooTimeout bounds one run of the script; against a healthy server
	// it takes a few seconds (ZooKeeper some 20 more: auth_sasl_invalid
	// waits for its read timeout).
	kazooTimeout = 150 * time.Second
)

// TestKazooSession runs testdata/kazoo_session.py against each server. The
// script checks its own results: it prints "ok <check>" per check that
// holds, "FAIL [<section>] <check>: <why>" for the first check of a
// section that does not, and "PASS <n> checks" when no section failed.
func TestKazooSession(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			py, ok := testpeer.KazooPython()
			testpeer.Require(t, "kazoo", ok, "python3-kazoo is not importable by "+py)
			srv := k.start(t)
			r := runKazoo(t, py, srv.Addr(), "/kazoo")
			for _, f := range r.failed {
				t.Errorf("kazoo against %s: FAIL %s", k.name, f)
			}
			switch {
			case len(r.failed) > 0:
				t.Fatalf("kazoo against %s: %d sections failed, %d checks passed\nkazoo log:\n%s", k.name, len(r.failed), len(r.passed), r.stderr)
			case r.err != nil:
				t.Fatalf("kazoo against %s: %v after %d checks (last passed: %q)\nstdout:\n%s\nstderr:\n%s", k.name, r.err, len(r.passed), last(r.passed), r.stdout, r.stderr)
			case r.total == "":
				t.Fatalf("kazoo against %s exited without its PASS line after %d checks\nstdout:\n%s", k.name, len(r.passed), r.stdout)
			}
			t.Logf("kazoo against %s: %s", k.name, r.total)
		})
	}
}

// kazooResult is what one run of the script reported.
type kazooResult struct {
	passed []string // names of the checks that held, in order
	failed []string // the FAIL lines without "FAIL "
	total  string   // the PASS line, if the script got to the end

	stdout, stderr string
	err            error // the process's failure, if any
}

// parseKazooOutput reads the script's stdout.
func parseKazooOutput(out string) kazooResult {
	r := kazooResult{stdout: out}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "ok "):
			r.passed = append(r.passed, strings.TrimPrefix(line, "ok "))
		case strings.HasPrefix(line, "FAIL "):
			r.failed = append(r.failed, strings.TrimPrefix(line, "FAIL "))
		case strings.HasPrefix(line, "PASS "):
			r.total = line
		}
	}
	return r
}

// runKazoo runs the script against addr, under root.
func runKazoo(t *testing.T, py, addr, root string) kazooResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kazooTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, kazooScript, addr, root)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := parseKazooOutput(stdout.String())
	r.stderr, r.err = stderr.String(), err
	return r
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}
