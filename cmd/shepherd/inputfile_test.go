package main

import (
	"bufio"
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildShepherd builds the shepherd binary into a temporary directory.
func buildShepherd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "shepherd")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestInputFileInterruptedBySIGTERM: a process told to read its config
// or jobs from a FIFO nobody writes waits for a writer, and SIGTERM stops
// it at once, cleanly (exit status 0) and saying why, for every kind of
// file the processes read (issue 9). The wait for the exit is a liveness
// bound.
func TestInputFileInterruptedBySIGTERM(t *testing.T) {
	bin := buildShepherd(t)
	for _, tc := range []struct {
		name string
		args func(fifo string) []string
	}{
		{"scheduler --jobs", func(f string) []string { return []string{"scheduler", "--zk", "127.0.0.1:1", "--jobs", f} }},
		{"collector --config", func(f string) []string { return []string{"collector", "--config", f} }},
		{"core --config", func(f string) []string { return []string{"core", "--config", f} }},
		{"coord --config", func(f string) []string { return []string{"coord", "--config", f} }},
		{"up --config", func(f string) []string { return []string{"up", "--config", f, "--data-dir", filepath.Dir(f)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "input.yaml")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, append([]string{"--log-level", "debug"}, tc.args(fifo)...)...)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			var log bytes.Buffer
			reading := make(chan struct{})
			go func() {
				sc := bufio.NewScanner(stderr)
				signalled := false
				for sc.Scan() {
					log.WriteString(sc.Text() + "\n")
					// Its signal handler is installed once it says so.
					if !signalled && strings.Contains(sc.Text(), "msg=reading") {
						signalled = true
						close(reading)
					}
				}
				exited <- cmd.Wait()
			}()
			select {
			case <-reading:
			case err := <-exited:
				t.Fatalf("exited before reading its file: %v\n%s", err, log.String())
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("no \"reading\" log line after 60s")
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("after SIGTERM: %v, want exit status 0\n%s", err, log.String())
				}
				if out := log.String(); !strings.Contains(out, "stopped") || !strings.Contains(out, fifo) {
					t.Errorf("no message naming the stop and the file:\n%s", out)
				}
			case <-time.After(60 * time.Second): // liveness bound only
				cmd.Process.Kill()
				t.Fatalf("still running 60s after SIGTERM while reading a FIFO\n%s", log.String())
			}
		})
	}
	t.Run("scheduler --jobs /dev/zero", func(t *testing.T) {
		out, err := exec.Command(bin, "scheduler", "--zk", "127.0.0.1:1", "--jobs", "/dev/zero").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "/dev/zero is larger than 1 MiB") {
			t.Errorf("scheduler --jobs /dev/zero: %v\n%s\nwant exit 1 naming the file and the 1 MiB cap", err, out)
		}
	})
}
