package compat

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// TestCreateModes creates a node of every mode and reads back its full
// Stat and its parent's.
func TestCreateModes(t *testing.T) {
	compare(t, "create-modes", func(s *script) {
		c := s.session()
		c.create(s.root, nil, zk.FlagPersistent)
		c.exists(s.root)

		c.create(s.p("persistent"), []byte("data"), zk.FlagPersistent)
		c.exists(s.p("persistent"))
		c.create(s.p("ephemeral"), []byte("e"), zk.FlagEphemeral)
		c.exists(s.p("ephemeral"))
		c.createContainer(s.p("container"), []byte("c"))
		c.exists(s.p("container"))
		c.createTTL(s.p("ttl"), []byte("t"), zk.FlagTTL, time.Hour)
		c.exists(s.p("ttl"))
		c.createTTL(s.p("ttl-seq-"), []byte("ts"), zk.FlagPersistentSequentialWithTTL, time.Hour)
		c.exists(s.p("ttl-seq-0000000004"))
		c.children(s.root)

		// Sequence numbers come from the parent's cversion, which deletes
		// advance too, so they are not reused.
		seq := s.p("seq")
		c.create(seq, nil, zk.FlagPersistent)
		c.create(seq+"/n-", []byte("1"), zk.FlagSequence)
		c.create(seq+"/n-", []byte("2"), zk.FlagSequence)
		c.create(seq+"/plain", nil, zk.FlagPersistent)
		c.create(seq+"/n-", []byte("3"), zk.FlagSequence)
		c.delete(seq+"/n-0000000003", -1)
		c.delete(seq+"/plain", -1)
		c.create(seq+"/n-", []byte("4"), zk.FlagSequence)
		c.create(seq+"/e-", []byte("5"), zk.FlagEphemeralSequential)
		c.create(seq+"/", []byte("6"), zk.FlagSequence)
		c.exists(seq + "/e-0000000005")
		c.children(seq)
		c.exists(seq)

		// Errors.
		c.create(s.p("persistent"), nil, zk.FlagPersistent)
		c.create(s.p("missing", "child"), nil, zk.FlagPersistent)
		c.create(s.p("ephemeral", "child"), nil, zk.FlagPersistent)
		c.create(s.p("ephemeral", "seq-"), nil, zk.FlagEphemeralSequential)
		c.createTTL(s.p("ttl-zero"), nil, zk.FlagTTL, 0)
		c.createTTL(s.p("ttl-huge"), nil, zk.FlagTTL, 1<<40*time.Millisecond)

		// The raw client sends what go-zookeeper refuses to.
		w := s.wire()
		for _, p := range []string{"", "a", "/", s.root + "/", s.root + "//b", s.root + "/./b", s.root + "/../b", s.root + "/a\x00b"} {
			w.create(p, nil, proto.ModePersistent)
		}
		w.create(s.p("bad-mode"), nil, 7)
		w.create(s.p("bad-mode"), nil, -1)
		w.create2(s.p("ttl-mode-on-create"), nil, proto.ModePersistentWithTTL)
		w.createContainer(s.p("container-raw"), nil)
		w.createTTL(s.p("ttl-ephemeral"), nil, proto.ModeEphemeral, 1000)

		// nil and empty data are both dataLength 0, but a server may keep
		// them apart on read.
		w.create2(s.p("nil"), nil, proto.ModePersistent)
		w.create2(s.p("empty"), []byte{}, proto.ModePersistent)
		w.get(s.p("nil"), false)
		w.get(s.p("empty"), false)
		w.set(s.p("empty"), nil, -1)
		w.get(s.p("empty"), false)
		w.create2(s.p("seq2-"), []byte("x"), proto.ModeEphemeralSequential)
	})
}
