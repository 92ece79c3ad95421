package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ZooKeeperClasspath is where Debian's zookeeper package installs Apache
// ZooKeeper 3.8, with the logging binding its server needs. The jar's
// manifest names the rest of its dependencies.
const ZooKeeperClasspath = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"

// zooKeeperJVMFlags pins what the comparison depends on: the heap is
// zkServer.sh's default size (ZK_SERVER_HEAP=1000 MB), fixed from the
// start as the ZooKeeper administrator's guide advises (so that no run
// pays for growing it), and ZooKeeper's RSS is what a stock install shows
// rather than a quarter of this machine's memory; logging is at WARN so
// that neither server pays for per-request log lines. The collector and
// JIT thread counts are the JVM's own choice for the CPUs it is given.
var zooKeeperJVMFlags = []string{"-Xms1000m", "-Xmx1000m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"}

// ErrZooKeeperMissing is returned by the ApacheZooKeeper target's Start
// when java or the ZooKeeper jar is not installed.
var ErrZooKeeperMissing = errors.New("bench: Apache ZooKeeper not installed (need java and the Debian zookeeper package)")

// processTarget is a Target backed by a server process this package runs.
type processTarget struct {
	name  string
	proc  *serverProcess
	check func() error // run before Start: are the binaries there?
}

func (t *processTarget) Name() string { return t.name }
func (t *processTarget) Addr() string { return t.proc.addr }
func (t *processTarget) PID() int     { return t.proc.pid() }
func (t *processTarget) Stop() error  { return t.proc.stop() }

// pin confines the server to cpus from its next start on.
func (t *processTarget) pin(cpus []int) { t.proc.cpus = cpus }

func (t *processTarget) Start(ctx context.Context) error {
	if err := t.check(); err != nil {
		return err
	}
	if _, err := resetDir(t.proc.dir, "data"); err != nil {
		return err
	}
	return t.proc.startFresh(ctx)
}

func (t *processTarget) Restart(ctx context.Context) error {
	if t.proc.addr == "" {
		return fmt.Errorf("bench: %s: restart before start", t.name)
	}
	if err := t.proc.kill(); err != nil {
		return err
	}
	return t.proc.start(ctx)
}

// ApacheZooKeeper returns a Target running Apache ZooKeeper 3.8 in
// standalone mode from the Debian package, with its configuration, data
// and log in dir. It syncs every transaction to disk (forceSync=yes, the
// default, stated so nobody wonders) and allows unlimited connections
// per address, which watch-fanout needs.
func ApacheZooKeeper(dir string) Target {
	dir = absPath(dir)
	dataDir := filepath.Join(dir, "data")
	command := func(addr string) ([]string, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		cfg := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(cfg, []byte(zooKeeperConfig(dataDir, port)), 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", cfg, err)
		}
		argv := append([]string{"java"}, zooKeeperJVMFlags...)
		return append(argv, "-cp", ZooKeeperClasspath, "org.apache.zookeeper.server.ZooKeeperServerMain", cfg), nil
	}
	return &processTarget{
		name:  "zookeeper",
		proc:  newServerProcess("zookeeper", dir, command),
		check: zooKeeperInstalled,
	}
}

// absPath makes p absolute, because servers run with their own directory
// as working directory. If the working directory cannot be found p is
// returned unchanged, and the start that needs it reports the failure.
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// zooKeeperConfig renders zoo.cfg for a standalone server.
func zooKeeperConfig(dataDir, port string) string {
	return strings.Join([]string{
		"tickTime=2000",
		"dataDir=" + dataDir,
		"clientPort=" + port,
		"clientPortAddress=127.0.0.1",
		"maxClientCnxns=0",
		"forceSync=yes",
		"admin.enableServer=false",
		"4lw.commands.whitelist=*",
		"",
	}, "\n")
}

// zooKeeperInstalled reports ErrZooKeeperMissing unless java and every jar
// of ZooKeeperClasspath are present.
func zooKeeperInstalled() error {
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("%w: %v", ErrZooKeeperMissing, err)
	}
	for _, jar := range filepath.SplitList(ZooKeeperClasspath) {
		if _, err := os.Stat(jar); err != nil {
			return fmt.Errorf("%w: %v", ErrZooKeeperMissing, err)
		}
	}
	return nil
}

// ShepherdCoord returns a Target running `binary coord` with its data
// and log in dir.
func ShepherdCoord(binary, dir string) Target {
	return ShepherdCoordAs("shepherd", binary, dir)
}

// ShepherdCoordAs is ShepherdCoord under another name, for comparing two
// builds of shepherd side by side.
func ShepherdCoordAs(name, binary, dir string) Target {
	binary, dir = absPath(binary), absPath(dir)
	dataDir := filepath.Join(dir, "data")
	command := func(addr string) ([]string, error) {
		// As many connections per address as ZooKeeper's maxClientCnxns=0
		// allows: watch-fanout opens a thousand.
		return []string{binary, "coord", "--listen", addr, "--data-dir", dataDir, "--max-client-conns", "0"}, nil
	}
	return &processTarget{
		name: name,
		proc: newServerProcess(name, dir, command),
		check: func() error {
			if _, err := os.Stat(binary); err != nil {
				return fmt.Errorf("bench: shepherd binary: %w", err)
			}
			return nil
		},
	}
}

// Existing returns a Target for a server someone else runs at addr, with
// process id pid (0 if unknown, which leaves CPU and RSS unmeasured).
// Start only checks that it serves; Stop does nothing; Restart returns
// ErrRestartUnsupported. Its data directory is not fresh, so workloads
// run against it should not keep their data.
func Existing(name, addr string, pid int) Target {
	return &existingTarget{name: name, addr: addr, pid: pid}
}

type existingTarget struct {
	name, addr string
	pid        int
}

func (t *existingTarget) Name() string { return t.name }
func (t *existingTarget) Addr() string { return t.addr }
func (t *existingTarget) PID() int     { return t.pid }
func (t *existingTarget) Stop() error  { return nil }

func (t *existingTarget) Start(ctx context.Context) error {
	return awaitReadable(ctx, t.addr, "/", connectTimeout, slog.Default())
}

func (t *existingTarget) Restart(context.Context) error {
	return fmt.Errorf("%w: %s at %s is not run by bench", ErrRestartUnsupported, t.name, t.addr)
}
