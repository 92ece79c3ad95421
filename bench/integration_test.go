package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/proto"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// The integration tests share one Apache ZooKeeper, started on first use
// and stopped by TestMain.
var shared struct {
	once   sync.Once
	target Target
	dir    string
	err    error
}

func TestMain(m *testing.M) {
	if os.Getenv(generatorEnv) != "" {
		// This test binary is the harness's generator process.
		if err := ServeGenerator(context.Background(), os.Stdin, os.Stdout, slog.Default()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if shared.target != nil {
		if err := shared.target.Stop(); err != nil {
			code = 1
		}
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// requireZooKeeper skips the test without java and the ZooKeeper jar,
// unless SHEPHERD_IT is set: then a missing peer is a failure.
func requireZooKeeper(t *testing.T) {
	t.Helper()
	if err := zooKeeperInstalled(); err != nil {
		if os.Getenv("SHEPHERD_IT") == "" {
			t.Skipf("SHEPHERD_IT unset and %v", err)
		}
		t.Fatalf("SHEPHERD_IT is set: %v", err)
	}
}

// zooKeeper returns the shared ZooKeeper target (see requireZooKeeper).
func zooKeeper(t *testing.T) Target {
	t.Helper()
	requireZooKeeper(t)
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "bench-zk-"); shared.err != nil {
			return
		}
		zk := ApacheZooKeeper(shared.dir)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if shared.err = zk.Start(ctx); shared.err == nil {
			shared.target = zk
		}
	})
	if shared.err != nil {
		t.Fatalf("start Apache ZooKeeper: %v", shared.err)
	}
	return shared.target
}

// shortOptions keeps each workload around half a second.
func shortOptions(t Target) Options {
	return Options{
		Addr: t.Addr(), PID: t.PID(), Target: t,
		Clients: 4, InFlight: 2, Duration: 300 * time.Millisecond, Watchers: 50,
	}
}

func TestWorkloadsAgainstZooKeeper(t *testing.T) {
	zk := zooKeeper(t)
	for _, w := range Workloads() {
		t.Run(w.Name, func(t *testing.T) {
			o := shortOptions(zk)
			if w.Name == "tree200k" {
				o.Ops = 1000
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := Run(ctx, w.Name, o)
			if err != nil {
				t.Fatalf("Run(%s): %v", w.Name, err)
			}
			t.Logf("%+v", res)
			if res.Workload != w.Name || res.Ops <= 0 || res.OpsPerSec <= 0 {
				t.Errorf("Run(%s) = %+v, want the workload's name and some operations", w.Name, res)
			}
			if res.P50 <= 0 || res.P99 < res.P50 {
				t.Errorf("Run(%s): p50 %v, p99 %v; want 0 < p50 <= p99", w.Name, res.P50, res.P99)
			}
			if res.CPUPerOp <= 0 || res.RSSBytes < 1<<20 {
				t.Errorf("Run(%s): cpu/op %v, rss %d; want server CPU and RSS measured", w.Name, res.CPUPerOp, res.RSSBytes)
			}
			checkExtra(t, w.Name, res)
		})
	}
	t.Run("cleaned up", func(t *testing.T) {
		conn, err := connect(context.Background(), zk.Addr(), coordtest.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if ok, _, err := conn.Exists(benchRoot); err != nil || ok {
			t.Errorf("Exists(%s) = %v, %v; want it deleted after runs without KeepData", benchRoot, ok, err)
		}
	})
}

// checkExtra asserts the workload-specific figures.
func checkExtra(t *testing.T, name string, res Result) {
	t.Helper()
	switch name {
	case "watch-fanout":
		if res.Extra["watchers"] != "50" || res.Ops%50 != 0 {
			t.Errorf("watch-fanout: %d notifications with extra %v; want whole rounds of 50 watchers", res.Ops, res.Extra)
		}
	case "lock":
		// Herd-free: a release wakes at most the one successor. Contenders
		// withdrawing at the end can add one wake-up each.
		per, err := strconv.ParseFloat(res.Extra["notify/release"], 64)
		if limit := 1 + 4/float64(res.Ops); err != nil || per <= 0 || per > limit {
			t.Errorf("lock: notify/release %q over %d cycles; want in (0, %.2f]", res.Extra["notify/release"], res.Ops, limit)
		}
	case "tree200k":
		d, err := time.ParseDuration(res.Extra["restart"])
		if err != nil || d <= 0 || res.Extra["znodes"] != "1000" || res.Ops != 1000 {
			t.Errorf("tree200k: ops %d, extra %v; want 1000 znodes and a restart time", res.Ops, res.Extra)
		}
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		workload string
		o        Options
		want     error
	}{
		{"unknown workload", "nope", Options{Addr: "127.0.0.1:1"}, ErrUnknownWorkload},
		{"no address", "get", Options{}, ErrNoAddr},
		{"negative clients", "get", Options{Addr: "127.0.0.1:1", Clients: -1}, ErrBadOption},
		{"negative duration", "get", Options{Addr: "127.0.0.1:1", Duration: -time.Second}, ErrBadOption},
		{"oversized value", "set", Options{Addr: "127.0.0.1:1", ValueBytes: 2 << 20}, ErrBadOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Run(ctx, tt.workload, tt.o); !errors.Is(err, tt.want) {
				t.Errorf("Run(%q, %+v) error = %v, want %v", tt.workload, tt.o, err, tt.want)
			}
		})
	}
}

func TestStartReportsServerThatExits(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "server")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho cannot open data dir >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A Start that waited for readiness instead of noticing the exit
	// would fail with the context's deadline, not ErrServerExited.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := ShepherdCoord(bin, dir).Start(ctx)
	if !errors.Is(err, ErrServerExited) || !strings.Contains(err.Error(), "cannot open data dir") {
		t.Errorf("Start error = %v, want ErrServerExited quoting the server's log", err)
	}
}

// The workloads the wire client runs by default must keep working through
// go-zookeeper too (--client go-zookeeper).
func TestWireWorkloadsThroughGoZooKeeper(t *testing.T) {
	zk := zooKeeper(t)
	for _, name := range WireWorkloads {
		t.Run(name, func(t *testing.T) {
			o := shortOptions(zk)
			o.Client = ClientGoZK
			res, err := Run(coordtest.Context(t, time.Minute), name, o)
			if err != nil || res.Ops <= 0 {
				t.Fatalf("Run(%s) = %+v, %v; want operations", name, res, err)
			}
		})
	}
}

// Every operation the wire client counts is a request the server carried
// out: after a create run, the tree holds exactly as many new znodes.
func TestWireCreateCountsOnlyDoneRequests(t *testing.T) {
	zk := zooKeeper(t)
	o := shortOptions(zk)
	o.KeepData = true
	o.Ops = 777
	o.Duration = time.Minute // the cap ends the run, not the clock
	res, err := Run(coordtest.Context(t, time.Minute), "create", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != o.Ops {
		t.Fatalf("create did %d ops, want the cap %d", res.Ops, o.Ops)
	}
	conn, err := connect(context.Background(), zk.Addr(), coordtest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	runs, _, err := conn.Children(benchRoot)
	if err != nil {
		t.Fatal(err)
	}
	var root string
	for _, r := range runs {
		if strings.HasPrefix(r, "create-") && r > root {
			root = r // the latest create run
		}
	}
	buckets, _, err := conn.Children(benchRoot + "/" + root)
	if err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, b := range buckets {
		kids, _, err := conn.Children(benchRoot + "/" + root + "/" + b)
		if err != nil {
			t.Fatal(err)
		}
		created += len(kids)
	}
	if created != res.Ops || len(buckets) != o.Clients*o.InFlight {
		t.Errorf("%d znodes in %d buckets after %d creates; want one per create in %d buckets", created, len(buckets), res.Ops, o.Clients*o.InFlight)
	}
	levels, err := listLevels(conn, benchRoot+"/"+root)
	if err != nil {
		t.Fatal(err)
	}
	for d := len(levels) - 1; d >= 0; d-- {
		for lo := 0; lo < len(levels[d]); lo += setupBatch {
			if err := deleteBatch(conn, levels[d][lo:min(len(levels[d]), lo+setupBatch)]); err != nil {
				t.Fatalf("clean up: %v", err)
			}
		}
	}
}

// A failed request fails the run, naming the server's error.
func TestWireFailsOnErrorReply(t *testing.T) {
	zk := zooKeeper(t)
	s, err := dialWire(coordtest.Context(t, time.Minute), zk.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	op := wireOp{request: func(enc *proto.Encoder, _ int, _ int64, _ *rand.Rand) proto.OpCode {
		req := proto.GetDataRequest{Path: "/no/such/znode"}
		req.Encode(enc)
		return proto.OpGetData
	}}
	requests := 0
	err = runWireSession(coordtest.Context(t, time.Minute), s, 0, 4, op, newRecorder(1),
		func() bool { requests++; return requests <= 100 }, func() { t.Error("a failed request was counted as done") })
	if !errors.Is(err, errWireReply) || !strings.Contains(err.Error(), proto.ErrNoNode.Error()) {
		t.Errorf("runWireSession error = %v, want errWireReply naming %v", err, proto.ErrNoNode)
	}
}
