package testpeer

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// EnvIntegration is the environment variable that turns a missing peer from
// a skipped test into a failed one. CI sets it to "1".
const EnvIntegration = "SHEPHERD_IT"

// InstallHint tells a developer how to get every peer this package drives.
const InstallHint = "scripts/install-deps.sh test (apt-get install zookeeper python3-kazoo mariadb-server libcurator-recipes-java default-jdk-headless logrotate nats-server bind9-dnsutils)"

// Paths of the Debian packages' files. The python3 first on PATH is often a
// pyenv or venv install without kazoo, so kazoo is only looked for in the
// system interpreter.
const (
	ZooKeeperJar   = "/usr/share/java/zookeeper.jar"
	SLF4JSimpleJar = "/usr/share/java/slf4j-simple.jar"
	SystemPython   = "/usr/bin/python3"
	ZkCliScript    = "/usr/share/zookeeper/bin/zkCli.sh"
)

// Integration reports whether SHEPHERD_IT=1, i.e. whether missing peers are
// failures rather than skips.
func Integration() bool { return os.Getenv(EnvIntegration) == "1" }

// Require stops the test when a peer it needs is missing: ok false means
// the peer named by what is unavailable, for the reason why. With
// SHEPHERD_IT=1 that is a failure (t.Fatalf); otherwise the test is
// skipped. Both messages carry the install hint.
func Require(t testing.TB, what string, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	msg := fmt.Sprintf("%s is not available: %s (install with: %s)", what, why, InstallHint)
	if Integration() {
		t.Fatalf("%s; %s=1 requires every peer", msg, EnvIntegration)
		return
	}
	t.Skipf("%s; set %s=1 to make this a failure", msg, EnvIntegration)
}

// JavaAvailable reports whether a java binary is on PATH.
func JavaAvailable() bool {
	_, err := exec.LookPath("java")
	return err == nil
}

// ZooKeeperAvailable reports whether Apache ZooKeeper can be started: java
// on PATH and the Debian package's jars present. When it cannot, why says
// what is missing.
func ZooKeeperAvailable() (why string, ok bool) {
	if !JavaAvailable() {
		return "no java on PATH", false
	}
	for _, jar := range []string{ZooKeeperJar, SLF4JSimpleJar} {
		if _, err := os.Stat(jar); err != nil {
			return fmt.Sprintf("missing %s: %v", jar, err), false
		}
	}
	return "", true
}

// kazooProbe runs the import once per test binary: starting Python costs
// tens of milliseconds and the answer cannot change during a run.
var kazooProbe = sync.OnceValue(func() bool {
	return exec.Command(SystemPython, "-c", "import kazoo.client").Run() == nil
})

// KazooPython returns the Python interpreter that can import kazoo, which
// must be the system one (/usr/bin/python3), and whether it can.
func KazooPython() (string, bool) {
	if _, err := os.Stat(SystemPython); err != nil {
		return SystemPython, false
	}
	return SystemPython, kazooProbe()
}

// ZkCli returns the path of ZooKeeper's command-line client and whether it
// can run (the script exists and java is on PATH).
func ZkCli() (string, bool) {
	if _, err := os.Stat(ZkCliScript); err != nil {
		return ZkCliScript, false
	}
	return ZkCliScript, JavaAvailable()
}
