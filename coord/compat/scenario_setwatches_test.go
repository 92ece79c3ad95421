package compat

import (
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// TestSetWatches checks how watches are restored on a new connection
// (what go-zookeeper does after every reconnect): a watch whose node
// changed since the client's last zxid fires at once, the others are
// registered and fire later.
func TestSetWatches(t *testing.T) {
	compare(t, "set-watches", func(s *script) {
		c := s.session()
		c.create(s.root, nil, zk.FlagPersistent)
		w := s.wire()
		base := w.create(s.p("same"), nil, proto.ModePersistent).zxid
		for _, n := range []string{"changed", "deleted", "parent", "quiet-parent"} {
			w.create(s.p(n), nil, proto.ModePersistent)
		}
		rel := w.create(s.p("mark"), nil, proto.ModePersistent).zxid

		// Changes the client missed while "disconnected".
		c.set(s.p("changed"), []byte("x"), -1)
		c.delete(s.p("deleted"), -1)
		c.create(s.p("appeared"), nil, zk.FlagPersistent)
		c.create(s.p("parent", "kid"), nil, zk.FlagPersistent)

		w2 := s.wire()
		w2.setWatches(rel,
			[]string{s.p("same"), s.p("changed"), s.p("deleted")},
			[]string{s.p("appeared"), s.p("absent")},
			[]string{s.p("parent"), s.p("quiet-parent"), s.p("deleted")},
			nil, nil)
		w2.barrier()
		// The registered ones fire on the next change.
		c.set(s.p("same"), []byte("y"), -1)
		c.create(s.p("absent"), nil, zk.FlagPersistent)
		c.create(s.p("quiet-parent", "kid"), nil, zk.FlagPersistent)
		w2.barrier()

		// A relative zxid before every change fires every existing watch.
		w3 := s.wire()
		w3.setWatches(base-1, []string{s.p("same")}, nil, []string{s.p("quiet-parent")}, nil, nil)
		w3.barrier()

		// setWatches2 restores persistent and recursive watches too; they
		// never fire on restore, only on later changes.
		w4 := s.wire()
		w4.setWatches(rel, []string{s.p("changed")}, nil, nil, []string{s.p("parent")}, []string{s.p("quiet-parent")})
		w4.barrier()
		c.set(s.p("parent"), []byte("p"), -1)
		c.set(s.p("quiet-parent", "kid"), []byte("k"), -1)
		w4.barrier()
	})
}
