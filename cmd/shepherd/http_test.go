package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// startProcess starts bin with args, logging to a file of t's, and stops
// it with SIGTERM when the test ends.
func startProcess(t *testing.T, bin string, args ...string) *exec.Cmd {
	t.Helper()
	logf, err := os.Create(filepath.Join(t.TempDir(), "process.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			out, _ := os.ReadFile(logf.Name())
			t.Logf("shepherd %s:\n%s", strings.Join(args, " "), out)
		}
		logf.Close()
	})
	return cmd
}

// get returns the body of a 200 answer to url, or an error.
func get(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("%s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}

// waitHTTP waits until url answers 200 with a body containing each of
// want.
func waitHTTP(t *testing.T, url string, want ...string) {
	t.Helper()
	coordtest.WaitFor(t, time.Minute, url, func() error {
		body, err := get(url)
		if err != nil {
			return err
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				return fmt.Errorf("no %q in:\n%s", w, body)
			}
		}
		return nil
	})
}

// TestHTTPEndpointsOnEveryProcess: coord, core, scheduler and collector
// each serve /health (200 once their session, or the server, works) and
// /metrics (their own metrics and the process's) on one listener.
func TestHTTPEndpointsOnEveryProcess(t *testing.T) {
	bin := buildShepherd(t)
	dir := t.TempDir()
	zk := fmt.Sprintf("127.0.0.1:%d", testpeer.FreePort(t))
	admin := fmt.Sprintf("127.0.0.1:%d", testpeer.FreePort(t))
	startProcess(t, bin, "coord", "--listen", zk, "--data-dir", filepath.Join(dir, "coord"), "--admin-listen", admin)
	waitHTTP(t, "http://"+admin+"/health", "coord: ok")
	waitHTTP(t, "http://"+admin+"/metrics", "shepherd_coord_znodes", "process_cpu_seconds_total")
	waitHTTP(t, "http://"+admin+"/commands/srvr", "Zookeeper version")
	auth := filepath.Join(dir, "coord", "admin.auth")
	for _, tc := range []struct {
		args   []string
		metric string
	}{
		{[]string{"core", "--group", "g1"}, "shepherd_core_"},
		{[]string{"scheduler", "--log-dir", filepath.Join(dir, "runs")}, "shepherd_scheduler_"},
		{[]string{"collector", "--out", filepath.Join(dir, "logs"), "--name", "c1"}, "go_goroutines"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			addr := fmt.Sprintf("127.0.0.1:%d", testpeer.FreePort(t))
			startProcess(t, bin, append(tc.args, "--zk", zk, "--auth-file", auth, "--http-listen", addr)...)
			waitHTTP(t, "http://"+addr+"/health", "session: ok")
			waitHTTP(t, "http://"+addr+"/metrics", tc.metric, "process_cpu_seconds_total")
		})
	}
}
