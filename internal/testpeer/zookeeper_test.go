package testpeer

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/coordhealth"
)

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// connect opens a session and waits until it is established, so that the
// first request does not race the handshake.
func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(discardLogger{}))
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(15 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			t.Fatalf("no session with %s after 15s (state %v)", addr, c.State())
		}
	}
}

func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func TestZooKeeperLifecycle(t *testing.T) {
	z := StartZooKeeper(t)
	addr := z.Addr()

	if got, err := coordhealth.Ask(context.Background(), addr, "ruok"); err != nil || got != "imok" {
		t.Fatalf("ruok = %q, %v; want imok", got, err)
	}
	srvr, err := coordhealth.Ask(context.Background(), addr, "srvr")
	if err != nil || !strings.Contains(srvr, "Mode: standalone") {
		t.Fatalf("srvr = %q, %v; want a standalone server", srvr, err)
	}
	cfg, err := os.ReadFile(z.configPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"forceSync=yes", "tickTime=2000", "admin.enableServer=false", "4lw.commands.whitelist=*", "clientPortAddress=127.0.0.1"} {
		if !strings.Contains(string(cfg), line+"\n") {
			t.Errorf("zoo.cfg lacks %q:\n%s", line, cfg)
		}
	}

	c := connect(t, addr)
	if _, err := c.Create("/durable", []byte("kept"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create /durable: %v", err)
	}
	c.Close()

	t.Run("restart keeps port and data", func(t *testing.T) {
		before := z.PID()
		z.Restart(t)
		if z.Addr() != addr {
			t.Errorf("Addr() after restart = %s, want %s", z.Addr(), addr)
		}
		if z.PID() == before || processAlive(before) {
			t.Errorf("old pid %d still running or reused after restart (now %d)", before, z.PID())
		}
		if data, _, err := connect(t, addr).Get("/durable"); err != nil || string(data) != "kept" {
			t.Fatalf("get /durable after restart = %q, %v; want kept", data, err)
		}
	})

	t.Run("kill is a crash the data survives", func(t *testing.T) {
		pid := z.PID()
		z.Kill()
		if z.PID() != 0 || processAlive(pid) {
			t.Fatalf("after Kill: PID() = %d, pid %d alive = %v", z.PID(), pid, processAlive(pid))
		}
		if _, err := coordhealth.Ask(context.Background(), addr, "ruok"); err == nil {
			t.Fatal("ruok answered after Kill")
		}
		z.Kill() // idempotent
		if err := z.Stop(); err != nil {
			t.Fatalf("Stop after Kill: %v", err)
		}
		z.Restart(t)
		if data, _, err := connect(t, addr).Get("/durable"); err != nil || string(data) != "kept" {
			t.Fatalf("get /durable after kill and restart = %q, %v; want kept", data, err)
		}
	})
}

func TestZooKeeperStoppedWhenTestEnds(t *testing.T) {
	var pid int
	t.Run("owner", func(t *testing.T) {
		pid = StartZooKeeper(t).PID()
		if !processAlive(pid) {
			t.Fatalf("pid %d not running right after start", pid)
		}
	})
	if pid != 0 && processAlive(pid) {
		t.Fatalf("zookeeper pid %d still running after its test ended", pid)
	}
}

// TestZooKeeperExtendedTypes pins down how ZooKeeper 3.8 enables TTL nodes,
// so the options documented on ZKOptions stay true.
func TestZooKeeperExtendedTypes(t *testing.T) {
	tests := []struct {
		name    string
		opts    ZKOptions
		wantErr string // go-zookeeper has no sentinel for Unimplemented (-6)
	}{
		{name: "stock server refuses TTL nodes", wantErr: "unknown error: -6"},
		{name: "zoo.cfg key", opts: ZKOptions{ExtraConfig: map[string]string{"extendedTypesEnabled": "true"}}},
		{name: "system property", opts: ZKOptions{SystemProperties: map[string]string{"zookeeper.extendedTypesEnabled": "true"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			z := StartZooKeeperWith(t, tc.opts)
			c := connect(t, z.Addr())
			_, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Minute)
			if (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
				t.Fatalf("CreateTTL error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestZooKeeperTickTimeOption(t *testing.T) {
	z := StartZooKeeperWith(t, ZKOptions{TickTime: 500 * time.Millisecond})
	conf, err := coordhealth.Ask(context.Background(), z.Addr(), "conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tickTime=500", "minSessionTimeout=1000", "maxSessionTimeout=10000"} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf lacks %q:\n%s", want, conf)
		}
	}
}

// TestPeersTalkToZooKeeper checks that kazoo and zkCli, as found by this
// package, reach a server it started: a node written by kazoo is read back
// by zkCli and by go-zookeeper.
func TestPeersTalkToZooKeeper(t *testing.T) {
	py, ok := KazooPython()
	Require(t, "kazoo", ok, "python3-kazoo is not importable by "+py)
	cli, ok := ZkCli()
	Require(t, "zkCli.sh", ok, cli+" or java is missing")
	z := StartZooKeeper(t)

	script := `import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1])
zk.start(timeout=15)
zk.create("/from-kazoo", b"hello")
zk.stop()
`
	if out, err := exec.Command(py, "-c", script, z.Addr()).CombinedOutput(); err != nil {
		t.Fatalf("kazoo create: %v\n%s", err, out)
	}
	out, err := exec.Command(cli, "-server", z.Addr(), "get", "/from-kazoo").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello") {
		t.Fatalf("zkCli get /from-kazoo: %v\n%s", err, out)
	}
	if data, _, err := connect(t, z.Addr()).Get("/from-kazoo"); err != nil || string(data) != "hello" {
		t.Fatalf("go-zookeeper get /from-kazoo = %q, %v", data, err)
	}
}
