package compat

import (
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// TestACL checks the digest, auth, ip and world schemes: which operation
// needs which permission, what NoAuth and InvalidACL look like, and how
// getACL and setACL report ACLs and their version.
func TestACL(t *testing.T) {
	compare(t, "acl", func(s *script) {
		alice := s.session()
		alice.addAuth("digest", "alice:secret")
		alice.create(s.root, nil, zk.FlagPersistent)
		d := s.p("digest")
		aliceAll := zk.DigestACL(zk.PermAll, "alice", "secret")
		alice.createACL(d, []byte("d"), zk.FlagPersistent, aliceAll)
		alice.create(d+"/kid", nil, zk.FlagPersistent)
		alice.get(d)
		alice.getACL(d)

		anon := s.session()
		anon.get(d)
		anon.set(d, []byte("x"), -1)
		anon.create(d+"/other", nil, zk.FlagPersistent)
		anon.delete(d+"/kid", -1)
		anon.children(d)
		anon.exists(d)
		anon.getACL(d)
		anon.setACL(d, openACL, -1)
		anon.sync(d)
		anon.addAuth("digest", "alice:wrong")
		anon.get(d)
		anon.addAuth("digest", "alice:secret")
		anon.get(d)
		anon.delete(d+"/kid", -1)

		// setACL is versioned by aversion.
		alice.setACL(d, append(aliceAll, zk.WorldACL(zk.PermRead)...), 0)
		// getACL needs READ or ADMIN; without ADMIN the digest hashes are
		// masked.
		stranger0 := s.session()
		stranger0.getACL(d)
		alice.setACL(d, aliceAll, 0)
		alice.setACL(d, aliceAll, 1)
		alice.setACL(s.p("missing"), aliceAll, -1)
		alice.getACL(d)

		// The auth scheme stands for the creator's authenticated ids.
		alice.createACL(s.p("auth"), nil, zk.FlagPersistent, zk.AuthACL(zk.PermAll))
		alice.getACL(s.p("auth"))
		bob := s.session()
		bob.addAuth("digest", "bob:hunter2")
		bob.get(s.p("auth"))
		bob.createACL(s.p("both"), nil, zk.FlagPersistent, append(zk.AuthACL(zk.PermRead|zk.PermWrite), zk.WorldACL(zk.PermRead)...))
		bob.getACL(s.p("both"))
		alice.getACL(s.p("both"))
		stranger := s.session()
		stranger.createACL(s.p("auth-none"), nil, zk.FlagPersistent, zk.AuthACL(zk.PermAll))

		// The ip scheme matches the client's address, with optional mask.
		for _, ip := range []string{"127.0.0.1", "127.0.0.0/8", "10.1.2.3", "10.0.0.0/8"} {
			stranger.createACL(s.p("ip-"+ip[:3]+ip[len(ip)-1:]), []byte(ip), zk.FlagPersistent,
				[]zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: ip}})
			stranger.get(s.p("ip-" + ip[:3] + ip[len(ip)-1:]))
		}

		// World read-only: reads pass, writes and child creation do not.
		ro := s.p("ro")
		alice.createACL(ro, []byte("r"), zk.FlagPersistent, zk.WorldACL(zk.PermRead))
		stranger.get(ro)
		stranger.set(ro, nil, -1)
		stranger.create(ro+"/kid", nil, zk.FlagPersistent)
		stranger.setACL(ro, openACL, -1)
		stranger.getACL(ro)

		// Delete needs DELETE on the parent, not on the node.
		nd := s.p("no-delete")
		alice.createACL(nd, nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll&^zk.PermDelete))
		alice.create(nd+"/kid", nil, zk.FlagPersistent)
		stranger.delete(nd+"/kid", -1)
		stranger.create(nd+"/kid2", nil, zk.FlagPersistent)
		stranger.delete(nd, -1)
		stranger.exists(nd)

		// Invalid ACLs, sent raw so the client cannot fix them up.
		w := s.wire()
		for _, acl := range [][]proto.ACL{
			nil,
			{},
			{{Perms: proto.PermAll, Id: proto.Id{Scheme: "foo", ID: "bar"}}},
			{{Perms: proto.PermAll, Id: proto.Id{Scheme: "world", ID: "someone"}}},
			{{Perms: proto.PermAll, Id: proto.Id{Scheme: "digest", ID: "nocolon"}}},
			{{Perms: proto.PermAll, Id: proto.Id{Scheme: "digest", ID: "carol:notahash"}}},
			{{Perms: proto.PermAll, Id: proto.Id{Scheme: "ip", ID: "notanip"}}},
			{{Perms: proto.PermAll, Id: proto.Id{Scheme: "ip", ID: "127.0.0.1/33"}}},
			{{Perms: proto.PermAll, Id: proto.Id{Scheme: "auth", ID: ""}}},
			{{Perms: 0, Id: proto.Id{Scheme: "world", ID: "anyone"}}},
			{{Perms: 0x7f, Id: proto.Id{Scheme: "world", ID: "anyone"}}},
		} {
			w.createACL(s.p("invalid"), nil, proto.ModePersistent, acl)
			w.delete(s.p("invalid"), -1)
		}
		w.setACL(ro, nil, -1)
		w.setACL(ro, []proto.ACL{}, -1)

		// An unknown auth scheme fails the auth packet and closes the
		// connection.
		bad := s.wire()
		bad.addAuth("foo", "bar")
		bad.closedByServer(wireTimeout)
	})
}
