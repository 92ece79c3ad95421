package ctl

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestInputFilesAreBounded: the files ctl is given are read with a cap,
// and a SIGTERM ends a read that waits (a FIFO nobody writes) with the
// usual 128+N status (issue 9). No server is needed: the files are read
// before connecting.
func TestInputFilesAreBounded(t *testing.T) {
	const nowhere = "127.0.0.1:1"
	if r := runCtl(t, nowhere, "job", "add", "--file", "/dev/zero"); r.code != ExitFailure || !strings.Contains(r.stderr, "/dev/zero is larger than 1 MiB") {
		t.Errorf("job add --file /dev/zero: %v; want exit 1 naming the file and the 1 MiB cap", r)
	}
	if r := runCtl(t, nowhere, "task", "add", "-f", "/dev/zero"); r.code != ExitFailure || !strings.Contains(r.stderr, "/dev/zero is larger than 1 MiB") {
		t.Errorf("task add -f /dev/zero: %v; want exit 1 naming the file and the 1 MiB cap", r)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"job", "add", "--file", fifo},
		{"task", "add", "-f", fifo},
		{"load", fifo},
	} {
		t.Run(strings.Join(args[:len(args)-1], " "), func(t *testing.T) {
			sigs := make(chan os.Signal, 1)
			sigs <- syscall.SIGTERM // arrives while ctl waits for a writer, or before: the same stop
			r := runCtlEnv(t, Env{Signals: sigs}, nowhere, args...)
			if r.code != 128+int(syscall.SIGTERM) || !strings.Contains(r.stderr, "interrupted by terminated") {
				t.Errorf("ctl %s: %v; want exit %d, interrupted by terminated", strings.Join(args, " "), r, 128+int(syscall.SIGTERM))
			}
		})
	}
}
