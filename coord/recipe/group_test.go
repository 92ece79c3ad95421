package recipe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// memberNames returns the names of ms, "name=data" each.
func memberNames(ms []Member) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, m.Name+"="+string(m.Data))
	}
	return strings.Join(parts, ",")
}

// waitMembers waits until the watcher lists want ("name=data,…").
func waitMembers(t testing.TB, g *GroupWatcher, want string) {
	t.Helper()
	coordtest.WaitFor(t, 10*time.Second, "members "+want, func() error {
		if got := memberNames(g.Members()); got != want {
			return fmt.Errorf("members %q", got)
		}
		return nil
	})
}

func TestGroupMembership(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		group := testPath(t) + "/collectors"
		watcher, err := WatchGroup(ctx, dial(t, tg.Addr, Options{}), group)
		if err != nil {
			t.Fatal(err)
		}
		defer watcher.Close()
		if ms := watcher.Members(); len(ms) != 0 {
			t.Fatalf("members of a group that does not exist: %v", ms)
		}
		sa, sb := dial(t, tg.Addr, Options{}), dial(t, tg.Addr, Options{})
		a, err := Join(ctx, sa, group, "host-a", []byte("10.0.0.1:9000"))
		if err != nil {
			t.Fatal(err)
		}
		if a.Path() != group+"/host-a" {
			t.Errorf("Path() = %q", a.Path())
		}
		if _, err := Join(ctx, sb, group, "host-b", []byte("10.0.0.2:9000")); err != nil {
			t.Fatal(err)
		}
		want := "host-a=10.0.0.1:9000,host-b=10.0.0.2:9000"
		waitMembers(t, watcher, want)
		if ms, err := Members(ctx, sa, group); err != nil || memberNames(ms) != want {
			t.Errorf("Members = %q, %v; want %q", memberNames(ms), err, want)
		}
		if err := a.Leave(ctx); err != nil {
			t.Fatal(err)
		}
		waitMembers(t, watcher, "host-b=10.0.0.2:9000")
		sb.Close() // a crash, as far as the group is concerned
		waitMembers(t, watcher, "")
		if ms, err := Members(ctx, sa, group+"-none"); err != nil || len(ms) != 0 {
			t.Errorf("Members of a missing group = %v, %v; want none", ms, err)
		}
	})
}

// TestGroupRejoins: a member registers again when its session expires or
// someone deletes its node, and waits for an old session's node to go.
func TestGroupRejoins(t *testing.T) {
	t.Parallel() // waits out session expiries
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		group := testPath(t)
		admin := dial(t, tg.Addr, Options{})
		s := dial(t, tg.Addr, Options{})
		m, err := Join(ctx, s, group, "worker", []byte("w"))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Leave(context.Background())
		owner := func() int64 {
			_, st, err := admin.Get(ctx, m.Path())
			if err != nil {
				return 0
			}
			return st.EphemeralOwner
		}
		waitOwner := func(what string, want func(int64) bool) {
			t.Helper()
			coordtest.WaitFor(t, 10*time.Second, what, func() error {
				if o := owner(); !want(o) {
					return fmt.Errorf("owner %#x", o)
				}
				return nil
			})
		}
		first := owner()
		expireSession(t, s, tg.Addr)
		waitOwner("the member to register on its new session", func(o int64) bool { return o != 0 && o != first })
		if err := admin.Delete(ctx, m.Path(), -1); err != nil {
			t.Fatal(err)
		}
		waitOwner("the member to register after its node was deleted", func(o int64) bool { return o == s.ID() })

		// A restarted process: its old session's node is still there.
		old := dial(t, tg.Addr, Options{})
		if _, err := old.Create(ctx, group+"/restarted", nil, zk.FlagEphemeral, nil); err != nil {
			t.Fatal(err)
		}
		joined := make(chan error, 1)
		go func() {
			_, err := Join(ctx, s, group, "restarted", nil)
			joined <- err
		}()
		notYet(t, joined, "Join while an old session's node is there")
		old.Close()
		if err := recv(t, joined, "Join after the old node went"); err != nil {
			t.Fatal(err)
		}
		names, _, err := admin.Children(ctx, group)
		if err != nil || !slices.Equal(slices.Sorted(slices.Values(names)), []string{"restarted", "worker"}) {
			t.Errorf("children %v, %v", names, err)
		}
	})
}

func TestGroupErrors(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 10*time.Second)
		s := dial(t, tg.Addr, Options{})
		group := testPath(t)
		if err := s.EnsurePath(ctx, group+"/stuck"); err != nil {
			t.Fatal(err)
		}
		if _, err := Join(ctx, s, group, "stuck", nil); !errors.Is(err, ErrNodeInTheWay) {
			t.Errorf("Join over a persistent node: %v, want ErrNodeInTheWay", err)
		}
		for _, name := range []string{"", "a/b", "."} {
			if _, err := Join(ctx, s, group, name, nil); !errors.Is(err, zk.ErrInvalidPath) {
				t.Errorf("Join as %q: %v, want zk.ErrInvalidPath", name, err)
			}
		}
	})
}

// TestGroupMemberKilled: a member process killed with SIGKILL leaves the
// live member list within the session timeout.
func TestGroupMemberKilled(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		group := testPath(t)
		watcher, err := WatchGroup(ctx, dial(t, tg.Addr, Options{}), group)
		if err != nil {
			t.Fatal(err)
		}
		defer watcher.Close()
		cmd, l := startProcess(t, "member", tg.Addr, group, "doomed")
		if l != "joined" {
			t.Fatalf("member process said %q, want joined", l)
		}
		waitMembers(t, watcher, "doomed=")
		killed := time.Now()
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitMembers(t, watcher, "")
		took := time.Since(killed)
		t.Logf("member gone %v after SIGKILL (session timeout %v)", took.Round(time.Millisecond), faultTimeout)
	})
}
