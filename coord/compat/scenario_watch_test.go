package compat

import (
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// TestWatchesOneShot checks data, exist and child watches through
// go-zookeeper: which event each write fires, and that a watch event
// reaches the client before the reply to a read that follows the change.
func TestWatchesOneShot(t *testing.T) {
	compare(t, "watches-oneshot", func(s *script) {
		c1, c2 := s.session(), s.session()
		c2.create(s.root, nil, zk.FlagPersistent)
		w := s.p("w")
		c2.create(w, []byte("v0"), zk.FlagPersistent)

		data := c1.getW(w)
		exist := c1.existsW(w)
		kids := c1.childrenW(s.root)
		created := c1.existsW(s.p("later"))

		c2.set(w, []byte("v1"), -1)
		c1.await(data)
		c1.await(exist)
		c2.create(s.p("later"), nil, zk.FlagPersistent)
		c1.await(created)
		c1.await(kids)

		// The event for a change comes before the data of the change.
		data = c1.getW(w)
		c2.set(w, []byte("v2"), -1)
		c1.get(w)
		c1.pending(data, "after get")

		// Deletes fire data, exist and child watches on the node and the
		// child watch of its parent.
		data = c1.getW(w)
		own := c1.childrenW(w)
		kids = c1.childrenW(s.root)
		c2.delete(w, -1)
		c1.await(data)
		c1.await(own)
		c1.await(kids)
		c1.exists(w)
	})
}

// TestWatchesWire checks, on the raw protocol, exactly which notifications
// the server sends: one per watcher and change, none after a one-shot
// watch fired, in transaction order.
func TestWatchesWire(t *testing.T) {
	compare(t, "watches-wire", func(s *script) {
		c := s.session()
		c.create(s.root, nil, zk.FlagPersistent)
		x, y := s.p("x"), s.p("y")
		c.create(x, []byte("x"), zk.FlagPersistent)

		w := s.wire()
		w.get(x, true)
		w.exists(x, true)
		w.children(x, true)
		w.exists(y, true)
		w.children2(s.root, true)

		c.set(x, []byte("x1"), -1)
		w.barrier()
		c.set(x, []byte("x2"), -1) // data watches were one-shot
		w.barrier()
		c.create(x+"/k", nil, zk.FlagPersistent)
		w.barrier()
		c.create(y, nil, zk.FlagEphemeral)
		w.barrier()

		// A node with data and child watches is deleted after its child:
		// the child watch fires for the child, then one NodeDeleted.
		w.get(x, true)
		w.children(x, true)
		w.exists(x+"/k", true)
		c.delete(x+"/k", -1)
		c.delete(x, -1)
		w.barrier()

		// Several paths changed by one multi notify in operation order.
		o1, o2 := s.p("o1"), s.p("o2")
		c.create(o1, nil, zk.FlagPersistent)
		c.create(o2, nil, zk.FlagPersistent)
		w.get(o1, true)
		w.get(o2, true)
		w.children(s.root, true)
		w.exists(s.p("o3"), true)
		c.multi(
			&zk.SetDataRequest{Path: o2, Data: []byte("2"), Version: -1},
			&zk.SetDataRequest{Path: o1, Data: []byte("1"), Version: -1},
			&zk.CreateRequest{Path: s.p("o3"), Acl: openACL},
		)
		w.barrier()

		// A read of the changed node comes after the event, even when the
		// watch was set by another read on the same path.
		w.get(o1, true)
		c.set(o1, []byte("11"), -1)
		w.get(o1, false)

		// checkWatches and removeWatches on one-shot watches.
		cw := s.p("cw")
		c.create(cw, nil, zk.FlagPersistent)
		w.checkWatches(cw, proto.WatcherData)
		w.removeWatches(cw, proto.WatcherData)
		w.get(cw, true)
		w.checkWatches(cw, proto.WatcherData)
		w.checkWatches(cw, proto.WatcherChildren)
		w.checkWatches(cw, proto.WatcherAny)
		w.removeWatches(cw, proto.WatcherChildren)
		w.removeWatches(cw, proto.WatcherData)
		w.barrier()
		w.checkWatches(cw, proto.WatcherData)
		c.set(cw, []byte("after remove"), -1)
		w.barrier()
		w.children(cw, true)
		w.exists(cw, true)
		w.removeWatches(cw, proto.WatcherAny)
		w.checkWatches(cw, proto.WatcherAny)
		c.create(cw+"/k", nil, zk.FlagPersistent)
		w.barrier()
		w.checkWatches(s.p("missing"), proto.WatcherAny)
		w.removeWatches(s.p("missing"), proto.WatcherAny)
		w.checkWatches(cw, 7)
	})
}

// TestWatchesPersistent checks addWatch: persistent watches fire on every
// change of their node (and its child list), recursive ones on every
// change below them, and neither is consumed by firing.
func TestWatchesPersistent(t *testing.T) {
	compare(t, "watches-persistent", func(s *script) {
		c := s.session()
		c.create(s.root, nil, zk.FlagPersistent)
		pw, rw := s.p("pw"), s.p("rw")
		w := s.wire()
		w.addWatch(pw, proto.AddWatchPersistent)
		w.addWatch(rw, proto.AddWatchPersistentRecursive)

		c.create(pw, nil, zk.FlagPersistent)
		c.set(pw, []byte("1"), -1)
		c.set(pw, []byte("2"), -1)
		c.create(pw+"/c", nil, zk.FlagPersistent)
		c.create(pw+"/c/d", nil, zk.FlagPersistent)
		c.set(pw+"/c", []byte("3"), -1)
		c.delete(pw+"/c/d", -1)
		c.delete(pw+"/c", -1)
		c.delete(pw, -1)
		c.create(pw, nil, zk.FlagPersistent)
		w.barrier()

		c.create(rw, nil, zk.FlagPersistent)
		c.create(rw+"/a", nil, zk.FlagPersistent)
		c.set(rw+"/a", []byte("1"), -1)
		c.create(rw+"/a/b", nil, zk.FlagEphemeral)
		c.delete(rw+"/a/b", -1)
		c.set(rw, []byte("r"), -1)
		w.barrier()

		w.checkWatches(pw, proto.WatcherData)
		w.checkWatches(pw, proto.WatcherChildren)
		w.checkWatches(pw, proto.WatcherAny)
		w.checkWatches(rw, proto.WatcherAny)
		w.checkWatches(rw+"/a", proto.WatcherAny)

		// Removing persistent watches: WatcherType Persistent (4) and
		// PersistentRecursive (5) arrived in ZooKeeper 3.9; 3.8 removes
		// them only with Any (3). Each attempt is followed by a change, so
		// the transcript shows whether it removed.
		w.removeWatches(pw, 4)
		c.set(pw, []byte("5"), -1)
		w.barrier()
		w.removeWatches(rw, 5)
		c.set(rw+"/a", []byte("6"), -1)
		w.barrier()
		w.removeWatches(pw, proto.WatcherAny)
		w.removeWatches(rw, proto.WatcherAny)
		c.set(pw, []byte("7"), -1)
		c.set(rw+"/a", []byte("8"), -1)
		w.barrier()
		w.checkWatches(pw, proto.WatcherAny)

		// A one-shot and a persistent watch on one node from one session:
		// a change sends one event. What is left afterwards is not
		// compared: in 3.8 the one-shot watch overwrites the persistent
		// one's mode (ZOOKEEPER-4466, fixed in 3.9).
		both := s.p("both")
		c.create(both, nil, zk.FlagPersistent)
		w.addWatch(both, proto.AddWatchPersistent)
		w.get(both, true)
		c.set(both, []byte("1"), -1)
		w.barrier()

		w.addWatch(pw, 2)
		w.addWatch("bad", proto.AddWatchPersistent)
	})
}
