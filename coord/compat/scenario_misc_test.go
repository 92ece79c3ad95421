package compat

import (
	"bytes"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// TestMiscOps covers the requests outside the znode CRUD: sync,
// getEphemerals, getAllChildrenNumber, whoAmI, reconfig, unknown op codes
// and oversized packets.
func TestMiscOps(t *testing.T) {
	compare(t, "misc-ops", func(s *script) {
		c := s.session()
		c.create(s.root, nil, zk.FlagPersistent)
		c.sync(s.root)
		c.sync(s.p("missing"))

		w := s.wire()
		w.sync(s.root)
		w.sync("")
		w.sync("bad")
		w.create(s.p("a"), nil, proto.ModePersistent)
		w.create(s.p("a", "e1"), nil, proto.ModeEphemeral)
		w.create(s.p("a", "p"), nil, proto.ModePersistent)
		w.create(s.p("a", "p", "e2"), nil, proto.ModeEphemeral)
		w.create(s.p("e3"), nil, proto.ModeEphemeral)
		c.create(s.p("other"), nil, zk.FlagEphemeral)
		w.getEphemerals(s.root)
		w.getEphemerals(s.p("a"))
		w.getEphemerals(s.p("a", "e"))
		w.getEphemerals(s.p("none"))
		w.getAllChildrenNumber(s.root)
		w.getAllChildrenNumber(s.p("a"))
		w.getAllChildrenNumber(s.p("a", "e1"))
		w.getAllChildrenNumber(s.p("missing"))

		w.whoAmI()
		w.addAuth("digest", "alice:secret")
		w.addAuth("digest", "alice:secret")
		w.whoAmI()

		w.raw("reconfig", proto.OpReconfig, func(e *proto.Encoder) {
			e.String("")
			e.String("")
			e.String("server.1=127.0.0.1:2888:3888;2181")
			e.Long(-1)
		})
		w.raw("createSession", proto.OpCreateSession, nil)
		w.raw("deleteContainer", proto.OpDeleteContainer, func(e *proto.Encoder) { e.String(s.p("a")) })
		w.exists(s.p("a"), false)
		w.raw("unknown", 999, func(e *proto.Encoder) { e.String(s.root) })
		w.closedByServer(wireTimeout / 5)

		// A packet over jute.maxbuffer (1 MiB) closes the connection; one
		// well under it is served.
		big := s.wire()
		big.create(s.p("big"), bytes.Repeat([]byte("x"), 1000000), proto.ModePersistent)
		big.create(s.p("too-big"), bytes.Repeat([]byte("x"), 1100000), proto.ModePersistent)
		big.closedByServer(wireTimeout)
		c.exists(s.p("too-big"))
	})
}
