package recipe

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

func kazooPeer(t *testing.T, hosts string) *linePeer {
	t.Helper()
	python, ok := testpeer.KazooPython()
	testpeer.Require(t, "kazoo", ok, python+" cannot import kazoo")
	return startPeer(t, "kazoo", exec.Command(python, filepath.Join("testdata", "kazoo_peer.py"), hosts))
}

// TestKazooInterop shares a lock with kazoo's Lock and Election, the Go
// side using KazooNaming; and with a kazoo Lock given Curator's pattern,
// the Go side using its default naming on a persistent directory.
func TestKazooInterop(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		py := kazooPeer(t, tg.Addr)
		s := dial(t, tg.Addr, Options{})
		ctx := coordtest.Context(t, 120*time.Second)

		t.Run("Lock", func(t *testing.T) {
			lockHandoff(t, ctx, s, py, "kazoo", NewMutex(s, testPath(t), WithNaming(KazooNaming)), kazooLockNode)
		})

		t.Run("contention with Curator naming", func(t *testing.T) {
			p := testPath(t)
			if err := s.EnsurePath(ctx, p); err != nil {
				t.Fatal(err)
			}
			lockContention(t, ctx, s, py, "kazoo", NewMutex(s, p))
		})

		t.Run("Election", func(t *testing.T) {
			p := testPath(t)
			m := NewMutex(s, p, WithNaming(KazooNaming))
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			py.send("elect %s", p)
			for _, n := range waitChildren(t, s, p, 2) {
				if !kazooLockNode.MatchString(n) {
					t.Errorf("node %q does not have kazoo's shape %v", n, kazooLockNode)
				}
			}
			py.quiet("Go leads")
			if err := m.Unlock(); err != nil {
				t.Fatal(err)
			}
			py.expect("elected", 10*time.Second)
			done := lockAsync(ctx, m)
			waitChildren(t, s, p, 2)
			notYet(t, done, "Go while kazoo leads")
			py.send("resign")
			py.expect("resigned", 10*time.Second)
			if err := recv(t, done, "Go after kazoo resigned"); err != nil {
				t.Fatal(err)
			}
			if err := m.Unlock(); err != nil {
				t.Fatal(err)
			}
		})
	})
}
