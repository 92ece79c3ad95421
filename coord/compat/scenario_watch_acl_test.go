package compat

import (
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// TestWatchesACL checks that watch events do not reveal nodes the
// watcher's session may not read (CVE-2024-23944, fixed in ZooKeeper
// 3.8.4 and in Debian's 3.8.0-11+deb12u2): an event is sent only to a
// watcher with READ on the node it is about — the node itself for created,
// changed and deleted, the parent for a child-list change — whatever kind
// of watch fired. A one-shot watch whose event is withheld is consumed all
// the same, and the check uses the identities the watcher holds when the
// event happens.
func TestWatchesACL(t *testing.T) {
	compare(t, "watches-acl", func(s *script) {
		alice := s.session()
		alice.addAuth("digest", "alice:secret")
		private := zk.DigestACL(zk.PermAll, "alice", "secret")
		alice.create(s.root, nil, zk.FlagPersistent)
		tree, dir, kids, priv, shot := s.p("tree"), s.p("dir"), s.p("kids"), s.p("priv"), s.p("shot")
		alice.create(tree, nil, zk.FlagPersistent)
		alice.create(dir, nil, zk.FlagPersistent)
		alice.create(kids, nil, zk.FlagPersistent)
		alice.createACL(priv, []byte("p"), zk.FlagPersistent, private)
		alice.create(shot, []byte("s"), zk.FlagPersistent)

		w := s.wire() // anonymous: READ on what is open only
		w.addWatch(tree, proto.AddWatchPersistentRecursive)
		w.addWatch(dir, proto.AddWatchPersistent)
		w.addWatch(priv, proto.AddWatchPersistent)
		w.children(kids, true) // not on dir: 3.8 would turn its persistent watch one-shot (ZOOKEEPER-4466)
		w.exists(s.p("shot/hidden"), true)
		w.get(shot, true)

		// A recursive watch hears about the open nodes below it only,
		// even below a private one.
		alice.create(tree+"/open", nil, zk.FlagPersistent)
		alice.createACL(tree+"/secret", []byte("x"), zk.FlagPersistent, private)
		alice.create(tree+"/secret/deeper", nil, zk.FlagPersistent)
		alice.set(tree+"/secret", []byte("y"), -1)
		alice.set(tree+"/secret/deeper", []byte("z"), -1)
		alice.set(tree+"/open", []byte("o"), -1)
		alice.delete(tree+"/secret/deeper", -1)
		alice.delete(tree+"/secret", -1)
		w.barrier()

		// An open parent's child list is public, the private child is not.
		alice.createACL(dir+"/hidden", nil, zk.FlagPersistent, private)
		alice.create(dir+"/shown", nil, zk.FlagPersistent)
		alice.delete(dir+"/hidden", -1)
		alice.createACL(kids+"/hidden", nil, zk.FlagPersistent, private)
		w.barrier()

		// A persistent watch on a private node hears nothing of it.
		alice.set(priv, []byte("q"), -1)
		alice.create(priv+"/kid", nil, zk.FlagPersistent)
		alice.delete(priv+"/kid", -1)
		w.barrier()

		// One-shot watches: an exists watch on a node then created private,
		// and a data watch on a node made private, are consumed silently;
		// opening the nodes afterwards brings no late event.
		alice.createACL(s.p("shot/hidden"), nil, zk.FlagPersistent, private)
		alice.setACL(shot, private, -1)
		alice.set(shot, []byte("t"), -1)
		w.barrier()
		alice.setACL(s.p("shot/hidden"), openACL, -1)
		alice.setACL(shot, openACL, -1)
		alice.set(s.p("shot/hidden"), []byte("u"), -1)
		alice.set(shot, []byte("v"), -1)
		w.barrier()

		// After addauth the watcher hears what alice may read.
		w.addAuth("digest", "alice:secret")
		alice.set(priv, []byte("r"), -1)
		alice.createACL(tree+"/later", nil, zk.FlagPersistent, private)
		w.barrier()
	})
}
