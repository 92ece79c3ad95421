package compat

import (
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// TestVersions checks the version conditions of setData and delete, and
// reads of missing nodes.
func TestVersions(t *testing.T) {
	compare(t, "versions", func(s *script) {
		c := s.session()
		c.create(s.root, nil, zk.FlagPersistent)
		a := s.p("a")
		c.create(a, []byte("v0"), zk.FlagPersistent)
		c.set(a, []byte("v1"), 0)
		c.set(a, []byte("stale"), 0)
		c.set(a, []byte("v2"), -1)
		c.set(a, []byte("v3"), 2)
		c.set(a, []byte("neg"), -2)
		c.get(a)
		c.set(s.p("missing"), nil, -1)
		c.set(s.p("missing"), nil, 5)
		c.get(s.p("missing"))
		c.exists(s.p("missing"))
		c.children(s.p("missing"))

		c.create(a+"/kid", nil, zk.FlagPersistent)
		c.delete(a, -1)
		c.delete(a+"/kid", 7)
		c.delete(a+"/kid", 0)
		c.delete(a+"/kid", 0)
		c.exists(a)
		c.delete(a, 2)
		c.delete(a, 3)
		c.delete(a, -1)
		c.delete(s.p("missing"), 3)

		// getChildren versus getChildren2, and the parent's counters.
		w := s.wire()
		for _, k := range []string{"x", "y", "z"} {
			w.create(s.p(k), []byte(k), proto.ModePersistent)
		}
		w.delete(s.p("y"), -1)
		w.children(s.root, false)
		w.children2(s.root, false)
		w.children2(s.p("x"), false)
		w.children(s.p("nope"), false)
		w.children2(s.p("nope"), false)
		w.exists(s.p("nope"), false)
		w.get(s.p("nope"), false)
		w.set(s.p("x"), []byte("longer data"), 0)
		w.get(s.p("x"), false)
	})
}

// TestZooKeeperNode reads and writes the built-in /zookeeper subtree.
// It is the only scenario that touches it, since it changes it.
func TestZooKeeperNode(t *testing.T) {
	compare(t, "zookeeper-node", func(s *script) {
		w := s.wire()
		w.exists("/zookeeper", false)
		w.children2("/zookeeper", false)
		w.get("/zookeeper/quota", false)
		w.children2("/zookeeper/quota", false)
		w.getACL("/zookeeper")
		w.getACL("/zookeeper/quota")
		w.get("/zookeeper/config", false)
		w.getACL("/zookeeper/config")

		w.create("/zookeeper", nil, proto.ModePersistent)
		w.create("/zookeeper/quota", nil, proto.ModePersistent)
		w.delete("/zookeeper", -1)
		w.delete("/zookeeper/quota", -1)
		w.delete("/zookeeper/quota", 0)
		w.create("/zookeeper/t-compat", []byte("x"), proto.ModePersistent)
		w.create("/zookeeper/quota/t-compat", []byte("x"), proto.ModePersistent)
		w.set("/zookeeper/quota", []byte("q"), 0)
		w.children2("/zookeeper", false)
		w.delete("/zookeeper/t-compat", -1)
		w.delete("/zookeeper/quota/t-compat", -1)
		w.set("/zookeeper/quota", nil, -1)
		w.exists("/zookeeper", false)
		w.exists("/zookeeper/quota", false)
	})
}
