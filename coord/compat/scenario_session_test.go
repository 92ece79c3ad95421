package compat

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// expiryWait bounds the wait for a 4 s session to expire: ZooKeeper
// checks expiry once per tick (2 s), so it takes 4 to 6 s.
const expiryWait = 15 * time.Second

// TestSessions checks timeout negotiation, that ephemerals go with their
// session whether it is closed or expires, that the watches of other
// sessions fire when they go, and resuming a session on a new connection.
func TestSessions(t *testing.T) {
	compare(t, "sessions", func(s *script) {
		obs := s.session()
		obs.create(s.root, nil, zk.FlagPersistent)

		// Timeouts are clamped to [2, 20] ticks.
		for _, ms := range []int32{1000, 4000, 10000, 40000, 100000} {
			w := s.wireWith(ms, 0, nil)
			w.closeSession()
			w.closedByServer(wireTimeout)
		}

		// go-zookeeper sends no readOnly byte; ZooKeeper answers with one
		// all the same.
		legacy := s.wireConnect(10000, 0, nil, false)
		legacy.exists(s.root, false)
		legacy.closeSession()

		// A clean close deletes the session's ephemerals at once.
		owner := s.session()
		owner.create(s.p("closed"), nil, zk.FlagEphemeral)
		gone := obs.existsW(s.p("closed"))
		owner.close()
		obs.await(gone)
		obs.exists(s.p("closed"))

		// A connection dropped without closeSession keeps the session,
		// which can be resumed with its id and password.
		keep := s.wireWith(30000, 0, nil)
		keep.create(s.p("kept"), nil, proto.ModeEphemeral)
		keep.drop()
		again := s.wireWith(30000, keep.id, keep.passwd)
		again.exists(s.p("kept"), false)

		// A wrong password is refused as if the session had expired; in
		// ZooKeeper the attempt alone closes the session's live connection.
		wrong := append([]byte(nil), keep.passwd...)
		wrong[0] ^= 0xff
		bad := s.wireWith(30000, keep.id, wrong)
		bad.closedByServer(wireTimeout)
		again.closedByServer(2 * time.Second)
		late := s.wireWith(30000, keep.id, keep.passwd)
		late.exists(s.p("kept"), false)
		late.closeSession()
		late.closedByServer(wireTimeout)
		obs.exists(s.p("kept"))
		closed := s.wireWith(30000, keep.id, keep.passwd)
		closed.closedByServer(wireTimeout)

		// A session whose client goes silent expires after its timeout:
		// its ephemerals go and other sessions' watches fire.
		short := s.wireWith(4000, 0, nil)
		short.create(s.p("expiring"), []byte("e"), proto.ModeEphemeral)
		short.create(s.p("expiring-seq-"), nil, proto.ModeEphemeralSequential)
		deleted := obs.existsW(s.p("expiring"))
		kids := obs.childrenW(s.root)
		short.drop()
		obs.awaitWithin(deleted, expiryWait)
		obs.await(kids)
		obs.children(s.root)
		expired := s.wireWith(4000, short.id, short.passwd)
		expired.closedByServer(wireTimeout)
	})
}
