package crashtest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// sessionsRoot holds the ephemerals of TestSessionExpiryAcrossCrashes.
const sessionsRoot = "/sessions"

// TestSessionExpiryAcrossCrashes checks that sessions are as durable as
// ZooKeeper's, no more and no less: a session's ephemerals survive a crash
// while the session lives, a session that expired before a crash stays
// expired with its ephemerals gone, and a session whose client vanished at
// the crash gets a full timeout after the restart and then expires, its
// ephemerals deleted for good.
func TestSessionExpiryAcrossCrashes(t *testing.T) {
	const (
		tick = 100 * time.Millisecond
		// short is the timeout of the sessions meant to expire: fifteen
		// ticks, and ample time to look at the server right after a
		// restart, even on a busy machine.
		short = 1500 * time.Millisecond
	)
	srv := startShepherd(t, serverOptions{tick: tick, minSession: 2 * tick})
	setup := connect(t, srv.Addr())
	if _, err := setup.Create(sessionsRoot, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", sessionsRoot, err)
	}
	setup.Close()

	expiredBefore := connectFor(t, srv.Addr(), short) // its client vanishes and it expires before the crash
	vanished := connectFor(t, srv.Addr(), short)      // its client vanishes at the crash
	kept := connect(t, srv.Addr())                    // its client comes back after the crash
	eph := map[*client][]string{}
	for name, c := range map[string]*client{"expired-before": expiredBefore, "vanished": vanished, "kept": kept} {
		for i := range 2 {
			p := fmt.Sprintf("%s/%s-%d", sessionsRoot, name, i)
			if _, err := c.Create(p, []byte(name), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create %s: %v", p, err)
			}
			eph[c] = append(eph[c], p)
		}
	}

	expiredBefore.cutLink()
	waitGone(t, srv.Addr(), eph[expiredBefore], 10*short, "the session whose client vanished")
	vanished.cutLink()
	srv.Kill()
	srv.Restart(t)

	requirePresence(t, srv.Addr(), eph[expiredBefore], false, "after the crash: the session had expired before it")
	requirePresence(t, srv.Addr(), eph[vanished], true, "right after the restart: a session alive at the crash gets a full timeout")
	if err := kept.waitSession(reconnectTimeout); err != nil {
		t.Fatal(err)
	}
	requirePresence(t, srv.Addr(), eph[kept], true, "after the crash: their session is alive")
	waitGone(t, srv.Addr(), eph[vanished], 10*short, "the session whose client vanished at the crash, after the restart")

	// The expiry after the restart is a logged transaction like any other.
	srv.Kill()
	srv.Restart(t)
	requirePresence(t, srv.Addr(), eph[vanished], false, "after a second crash: their session expired after the first")
	requirePresence(t, srv.Addr(), eph[kept], true, "after a second crash: their session is alive")
	expiredBefore.healLink()
	vanished.healLink()
	for _, err := range waitSessionsEach([]*client{expiredBefore, vanished}) {
		if !errors.Is(err, errSessionLost) {
			t.Errorf("a client whose session expired came back: waitSession = %v, want the session reported expired", err)
		}
	}
}

// waitGone waits until none of paths exists, reading through a new
// session, or fails t after timeout.
func waitGone(t *testing.T, addr string, paths []string, timeout time.Duration, whose string) {
	t.Helper()
	r := connect(t, addr)
	defer r.Close()
	deadline := time.Now().Add(timeout)
	for _, p := range paths {
		for {
			ok, _, err := r.Exists(p)
			if err != nil {
				t.Fatalf("exists %s: %v", p, err)
			}
			if !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ephemeral %s of %s still exists after %v: the session never expired", p, whose, timeout)
			}
			time.Sleep(pollInterval)
		}
	}
}

// requirePresence checks through a new session that each of paths exists
// (or not, as want says); why explains the expectation.
func requirePresence(t *testing.T, addr string, paths []string, want bool, why string) {
	t.Helper()
	r := connect(t, addr)
	defer r.Close()
	for _, p := range paths {
		ok, _, err := r.Exists(p)
		if err != nil {
			t.Fatalf("exists %s: %v", p, err)
		}
		if ok != want {
			t.Errorf("ephemeral %s exists = %v, want %v %s", p, ok, want, why)
		}
	}
}
