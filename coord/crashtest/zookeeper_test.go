package crashtest

import (
	"testing"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// The same crash and linearizability runs against Apache ZooKeeper 3.8
// (forceSync on): proof that the checkers accept the behaviour shepherd
// claims to copy — every stat the crash test expects and every history the
// register model allows is ZooKeeper's — so a failure against shepherd is
// a difference from ZooKeeper, not an artefact of the test. They restart
// less often than shepherd's runs, since a JVM takes seconds to start.
// Without java and the zookeeper package they skip, or fail under
// SHEPHERD_IT=1.

func TestCrashDurabilityZooKeeper(t *testing.T) {
	zk := testpeer.StartZooKeeper(t)
	total, checked := crashUnderLoad(t, zk, testSeed(t), 2, crashHooks{})
	t.Logf("%d writes acknowledged, %d with unknown outcome, %d zxids checked", total.acked, total.unknown, checked)
}

func TestLinearizabilityZooKeeper(t *testing.T) {
	zk := testpeer.StartZooKeeper(t)
	linearizableAcrossRestarts(t, zk, testSeed(t), 2)
}
