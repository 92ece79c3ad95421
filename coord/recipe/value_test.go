package recipe

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// waitValue waits until v holds want (absent when exists is false).
func waitValue(t testing.TB, v *Value, want string, exists bool) {
	t.Helper()
	coordtest.WaitFor(t, 10*time.Second, fmt.Sprintf("value %q (exists %v)", want, exists), func() error {
		data, _, ok := v.Get()
		if ok != exists || string(data) != want {
			return fmt.Errorf("value %q, exists %v", data, ok)
		}
		return nil
	})
}

// nextChange waits for a signal on v.Changes.
func nextChange(t testing.TB, v *Value, what string) {
	t.Helper()
	select {
	case _, ok := <-v.Changes():
		if !ok {
			t.Fatalf("%s: Changes closed", what)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no change signalled within 10s", what)
	}
}

// TestValueFollowsNode: the config subscriber of the source documents
// follows its node through creation, updates, deletion and re-creation.
func TestValueFollowsNode(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t) + "/database_config"
		admin := dial(t, tg.Addr, Options{})
		v, err := WatchValue(ctx, dial(t, tg.Addr, Options{}), p)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		if data, _, ok := v.Get(); ok || data != nil {
			t.Fatalf("Get of a missing node = %q, exists %v", data, ok)
		}
		nextChange(t, v, "the first read")

		if err := admin.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Set(ctx, p, []byte("db1:3306"), -1); err != nil {
			t.Fatal(err)
		}
		waitValue(t, v, "db1:3306", true)
		nextChange(t, v, "created and set")
		for i := range 3 {
			want := fmt.Sprintf("db%d:3306", i+2)
			if _, err := admin.Set(ctx, p, []byte(want), -1); err != nil {
				t.Fatal(err)
			}
			waitValue(t, v, want, true)
		}
		_, st, _ := v.Get()
		if st.Version != 4 {
			t.Errorf("stat version %d after four sets, want 4", st.Version)
		}
		if err := admin.Delete(ctx, p, -1); err != nil {
			t.Fatal(err)
		}
		waitValue(t, v, "", false)
		if _, err := admin.Create(ctx, p, []byte("db9:3306"), zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		waitValue(t, v, "db9:3306", true)

		v.Close()
		select {
		case <-v.Changes(): // a pending signal may remain; then it closes
		default:
		}
		select {
		case _, ok := <-v.Changes():
			if ok {
				t.Error("Changes delivered after Close")
			}
		case <-time.After(5 * time.Second):
			t.Error("Changes not closed by Close")
		}
	})
}

// TestValueAcrossSessionLoss: a new session has no watches; the Value
// sets them again and catches up with changes made meanwhile.
func TestValueAcrossSessionLoss(t *testing.T) {
	t.Parallel() // waits out session expiries
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		admin := dial(t, tg.Addr, Options{})
		if _, err := admin.Create(ctx, p, []byte("v1"), zk.FlagPersistent, nil); err != nil {
			if err := admin.EnsurePath(ctx, p); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.Set(ctx, p, []byte("v1"), -1); err != nil {
				t.Fatal(err)
			}
		}
		proxy := newFaultProxy(t, tg.Addr)
		s := dial(t, proxy.Addr(), Options{SessionTimeout: faultTimeout})
		rec := recordStates(s)
		v, err := WatchValue(ctx, s, p)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		waitValue(t, v, "v1", true)

		// Partitioned until the session is lost and the server has
		// expired it; the node changes meanwhile.
		marker := p + "-alive"
		if _, err := s.Create(ctx, marker, nil, zk.FlagEphemeral, nil); err != nil {
			t.Fatal(err)
		}
		proxy.Stall()
		rec.expect(t, 5*faultTimeout, StateSuspended, StateLost)
		coordtest.WaitFor(t, 5*faultTimeout, "the server to expire the partitioned session", func() error {
			if ok, _, err := admin.Exists(ctx, marker); err != nil || ok {
				return fmt.Errorf("its ephemeral node exists: %v, %v", ok, err)
			}
			return nil
		})
		if _, err := admin.Set(ctx, p, []byte("v2"), -1); err != nil {
			t.Fatal(err)
		}
		proxy.Release()
		rec.expect(t, 10*time.Second, StateConnected)
		waitValue(t, v, "v2", true)
		// And the watch of the new session works.
		if _, err := admin.Set(ctx, p, []byte("v3"), -1); err != nil {
			t.Fatal(err)
		}
		waitValue(t, v, "v3", true)

		// An expiry by the server, too.
		expireSession(t, s, tg.Addr)
		rec.expect(t, 10*time.Second, StateSuspended, StateLost, StateConnected)
		if _, err := admin.Set(ctx, p, []byte("v4"), -1); err != nil {
			t.Fatal(err)
		}
		waitValue(t, v, "v4", true)
	})
}

// TestValueAcrossReconnect: changes made while the connection is down are
// seen once it is back.
func TestValueAcrossReconnect(t *testing.T) {
	t.Parallel() // waits out a reconnection
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		admin := dial(t, tg.Addr, Options{})
		if err := admin.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		proxy := newFaultProxy(t, tg.Addr)
		s := dial(t, proxy.Addr(), Options{SessionTimeout: 4 * time.Second})
		rec := recordStates(s)
		v, err := WatchValue(ctx, s, p)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		proxy.Stall()
		proxy.Cut()
		rec.expect(t, 5*time.Second, StateSuspended)
		if _, err := admin.Set(ctx, p, []byte("while away"), -1); err != nil {
			t.Fatal(err)
		}
		if data, _, _ := v.Get(); string(data) == "while away" {
			t.Fatal("a suspended Value saw a change it cannot have read")
		}
		proxy.Release()
		rec.expect(t, 5*time.Second, StateReconnected)
		waitValue(t, v, "while away", true)
	})
}

func TestWatchValueErrors(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		s := dial(t, tg.Addr, Options{})
		if _, err := WatchValue(context.Background(), s, "relative/path"); err == nil {
			t.Error("WatchValue accepted a relative path")
		}
		acl := zk.DigestACL(zk.PermAll, "alice", "secret")
		owner := dial(t, tg.Addr, Options{Auth: "alice:secret"})
		ctx := coordtest.Context(t, 10*time.Second)
		p := testPath(t)
		// The anonymous session makes the parents: with its credential,
		// owner would make them alice's alone, closing them to other tests.
		if err := s.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := owner.Create(ctx, p+"/secret", nil, zk.FlagPersistent, acl); err != nil {
			t.Fatal(err)
		}
		if _, err := WatchValue(ctx, s, p+"/secret"); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("WatchValue of an unreadable node: %v, want zk.ErrNoAuth", err)
		}
	})
}
