package coord

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/proto"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// TestNonReadingWatcherProcessRSS is the non-reading watcher against a
// real `shepherd coord` process, measured as an operator would: its
// resident memory. A client sets 10,000 data watches and stops reading;
// a writer fires them all. The server must cut the client off, and its
// RSS must grow by less than --max-queued-event-bytes plus 32 MiB while
// it serves the writes. The bound is set low (2 MiB) and the paths are
// 700 bytes, so that the events (7 MB) are more than the kernel's socket
// buffers take off the server's hands (tcp_wmem's 4 MiB by default) and
// the bound, while the tree and its garbage stay small beside them. A
// server without the event bound queued them all: they are under the
// 64 MiB reply bound that was all there was.
func TestNonReadingWatcherProcessRSS(t *testing.T) {
	const (
		bound    = 2 << 20
		watches  = 10000
		perMulti = 100
	)
	bin := buildServerBinary(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testpeer.FreePort(t))
	cmd := exec.Command(bin, "coord", "--listen", addr, "--data-dir", t.TempDir(),
		"--max-queued-event-bytes", strconv.Itoa(bound), "--max-session-timeout", "10m")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	checkFor(t, 60*time.Second, 20*time.Millisecond, func() error { // shepherd coord accepts connections
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})

	tree := newWatchedTree(t, connect(t, addr, 10*time.Second), 700, watches, perMulti)

	// A small receive buffer, set before the handshake: a client that has
	// stopped reading stops the kernel's absorbing too, which would
	// otherwise take megabytes of events off the server's hands.
	smallBuffer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	rc := dialRawWith(t, smallBuffer, addr, proto.ConnectRequest{TimeOut: 600000, Passwd: make([]byte, 16)})
	tree.watch(rc)
	base := rss(t, cmd.Process.Pid)
	peak := base
	// From here on the watcher never reads. Each multi returns once the
	// server has queued its events (or cut the watcher off).
	tree.fire(func() {
		peak = max(peak, rss(t, cmd.Process.Pid))
	})
	rc.nc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a liveness bound, not a timing
	if _, err := io.Copy(io.Discard, rc.nc); err != nil && !isReset(err) {
		t.Fatalf("the watcher that does not read was not cut off (%v): %d events owed it, over the %d-byte bound", err, watches, bound)
	}
	growth := peak - base
	t.Logf("RSS %d MiB with the watches set, at most %d MiB while the events were due: +%.1f MiB", base>>20, peak>>20, float64(growth)/(1<<20))
	if limit := int64(bound + 32<<20); growth > limit {
		t.Errorf("RSS grew by %d bytes, over the bound plus 32 MiB (%d)", growth, limit)
	}
}

// buildServerBinary builds shepherd without the race detector, whose
// shadow memory would be measured with the server's.
func buildServerBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "shepherd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/shepherd-dev/shepherd/cmd/shepherd").CombinedOutput()
	if err != nil {
		t.Fatalf("go build shepherd: %v\n%s", err, out)
	}
	return bin
}

// rss is a process's resident set size in bytes (VmRSS).
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the server's memory: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
