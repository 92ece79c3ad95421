package compat

import (
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// TestMulti checks that a multi is one transaction: all of it or none,
// one zxid, and a result per operation that says which one failed.
func TestMulti(t *testing.T) {
	compare(t, "multi", func(s *script) {
		c := s.session()
		c.create(s.root, nil, zk.FlagPersistent)
		c.create(s.p("b"), []byte("b"), zk.FlagPersistent)
		c.create(s.p("c"), []byte("c"), zk.FlagPersistent)

		// Success: every kind of write, as go-zookeeper sends them.
		c.multi(
			&zk.CreateRequest{Path: s.p("a"), Data: []byte("a"), Acl: openACL},
			&zk.SetDataRequest{Path: s.p("a"), Data: []byte("a2"), Version: 0},
			&zk.DeleteRequest{Path: s.p("b"), Version: 0},
			&zk.CheckVersionRequest{Path: s.p("c"), Version: 0},
		)
		c.exists(s.p("a"))
		c.exists(s.p("b"))
		c.children(s.root)

		// Failure in the middle: nothing applies; the results name the op
		// that failed and mark the others.
		c.multi(
			&zk.CreateRequest{Path: s.p("d"), Data: nil, Acl: openACL},
			&zk.SetDataRequest{Path: s.p("missing"), Data: nil, Version: -1},
			&zk.CreateRequest{Path: s.p("e"), Data: nil, Acl: openACL},
		)
		c.exists(s.p("d"))
		c.multi(
			&zk.CheckVersionRequest{Path: s.p("c"), Version: 5},
			&zk.DeleteRequest{Path: s.p("c"), Version: -1},
		)
		c.multi(
			&zk.DeleteRequest{Path: s.p("c"), Version: -1},
			&zk.CheckVersionRequest{Path: s.p("c"), Version: 0},
		)
		c.exists(s.p("c"))

		// Later ops see earlier ones: create a node, then its child, then
		// write and check both.
		c.multi(
			&zk.CreateRequest{Path: s.p("p"), Data: nil, Acl: openACL},
			&zk.CreateRequest{Path: s.p("p", "q"), Data: []byte("q"), Acl: openACL},
			&zk.SetDataRequest{Path: s.p("p", "q"), Data: []byte("q2"), Version: 0},
			&zk.CheckVersionRequest{Path: s.p("p", "q"), Version: 1},
			&zk.CreateRequest{Path: s.p("p", "s-"), Data: nil, Acl: openACL, Flags: zk.FlagSequence},
			&zk.CreateRequest{Path: s.p("p", "s-"), Data: nil, Acl: openACL, Flags: zk.FlagSequence},
		)
		c.children(s.p("p"))
		c.exists(s.p("p", "q"))
		c.multi(
			&zk.CreateRequest{Path: s.p("r"), Data: nil, Acl: openACL},
			&zk.DeleteRequest{Path: s.p("r"), Version: 0},
			&zk.CreateRequest{Path: s.p("r"), Data: []byte("again"), Acl: openACL},
		)
		c.get(s.p("r"))

		// The raw client shows create2 results, header codes, empty and
		// read-only multis.
		w := s.wire()
		w.multi(false,
			mCreate2(s.p("m1"), []byte("1"), proto.ModePersistent),
			mCreate(s.p("m2"), nil, proto.ModeEphemeral),
			mCreate2(s.p("m-"), nil, proto.ModePersistentSequential),
			mSet(s.p("m1"), []byte("11"), 0),
			mCheck(s.p("m1"), 1),
		)
		w.multi(false,
			mCreate2(s.p("m3"), nil, proto.ModePersistent),
			mCreate2(s.p("m1"), nil, proto.ModePersistent),
			mDelete(s.p("m2"), -1),
		)
		w.multi(false)
		w.multi(false, mCreate(s.p("m2", "x"), nil, proto.ModePersistent))
		w.multi(false, mCreate("bad", nil, proto.ModePersistent))
		w.multi(false, mDelete(s.p("m1"), -1), mCheck(s.p("m1"), -1))
		w.multi(true, mGet(s.p("m1")), mChildren(s.root), mGet(s.p("missing")), mChildren(s.p("m2")))
		w.multi(true)
		w.multi(true, mSet(s.p("m1"), nil, -1))
		w.multi(false, mGet(s.p("m1")))
		w.exists(s.p("m1"), false)
	})
}
