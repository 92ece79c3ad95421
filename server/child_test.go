package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// childEnv, when set to a connect string, makes the test binary a
// console process of its own (for measuring a console's memory alone):
// it prints its address and serves until SIGTERM.
const childEnv = "SERVER_TEST_CHILD"

func runChild(connect string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := recipe.Dial(ctx, connect, recipe.Options{Auth: coordtest.Auth, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	poller := cluster.NewPoller(cluster.NewReader(s, cluster.Options{}), 5*time.Second, log)
	srv, err := New(Config{}, Deps{Session: s, Feed: poller, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(ln.Addr().String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = poller.Run(ctx)
	}()
	err = srv.Serve(ctx, ln)
	stop()
	<-done
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startChild starts a console process on connect and returns its base
// URL and PID; it is stopped when the test ends.
func startChild(t testing.TB, connect string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+connect)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("console child: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return "http://" + strings.TrimSpace(line), cmd.Process.Pid
}

// procStatusMB reads a /proc/<pid>/status field in kB as MB (VmRSS,
// VmHWM); 0 where /proc is absent.
func procStatusMB(pid int, field string) float64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}
