package ctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// Every server test runs against both servers: shepherd coord (in
// process) and Apache ZooKeeper 3.8 (a child JVM). Both are started once
// per test binary, with a short tick so that session timeouts — and the
// tests that wait for them — take a second.
const testTick = 100 * time.Millisecond

// target is one server the tests run on.
type target = coordtest.Target

var targets []*target

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	var stop func()
	targets, stop = coordtest.Start("ctl", testTick)
	defer stop()
	return m.Run()
}

// onEachTarget runs body as a subtest per server.
func onEachTarget(t *testing.T, body func(t *testing.T, tg *target)) {
	t.Helper()
	coordtest.OnEach(t, targets, body)
}

// chrootOf returns a connect string for tg with a chroot no other test
// uses, so that every test sees an empty tree of its own.
func chrootOf(t testing.TB, tg *target) string { return tg.Chroot(t, "ctltest") }

// result is one ctl run.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runCtl runs ctl in-process against connect with args and returns what
// it printed. Times print in UTC.
func runCtl(t testing.TB, connect string, args ...string) result {
	t.Helper()
	return runCtlEnv(t, Env{}, connect, args...)
}

// runCtlEnv is runCtl with an Env to start from; its Stdout and Stderr,
// if set, must be *syncBuffers, whose contents the result reports.
func runCtlEnv(t testing.TB, env Env, connect string, args ...string) result {
	t.Helper()
	out, errb := &syncBuffer{}, &syncBuffer{}
	if b, ok := env.Stdout.(*syncBuffer); ok {
		out = b
	} else if env.Stdout != nil {
		t.Fatal("runCtlEnv: Stdout must be a *syncBuffer or nil")
	}
	if b, ok := env.Stderr.(*syncBuffer); ok {
		errb = b
	} else if env.Stderr != nil {
		t.Fatal("runCtlEnv: Stderr must be a *syncBuffer or nil")
	}
	env.Stdout, env.Stderr = out, errb
	env.Location = time.UTC
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	full := append([]string{"--zk", connect, "--timeout", "10s", "--session-timeout", "2s"}, args...)
	code := Run(ctx, env, full)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// mustCtl runs ctl and fails the test unless it exits 0.
func mustCtl(t testing.TB, connect string, args ...string) string {
	t.Helper()
	r := runCtl(t, connect, args...)
	if r.code != 0 {
		t.Fatalf("ctl %s: %v", strings.Join(args, " "), r)
	}
	return r.stdout
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in
// different goroutines, as a running watch's output is.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// withAuth prefixes args with the tests' credential: the verbs that write
// what Shepherd's processes act on (task, job, source) need it, or the
// processes refuse their nodes.
func withAuth(args []string) []string {
	return append([]string{"--auth", coordtest.Auth}, args...)
}

// runCtlAuth is runCtl with the tests' credential.
func runCtlAuth(t testing.TB, connect string, args ...string) result {
	t.Helper()
	return runCtl(t, connect, withAuth(args)...)
}

// runCtlEnvAuth is runCtlEnv with the tests' credential.
func runCtlEnvAuth(t testing.TB, env Env, connect string, args ...string) result {
	t.Helper()
	return runCtlEnv(t, env, connect, withAuth(args)...)
}

// mustCtlAuth is mustCtl with the tests' credential.
func mustCtlAuth(t testing.TB, connect string, args ...string) string {
	t.Helper()
	return mustCtl(t, connect, withAuth(args)...)
}
