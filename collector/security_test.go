package collector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// dialAnon opens a session without a credential: the attacker's.
func dialAnon(t *testing.T, connect string) *recipe.Session {
	t.Helper()
	return dialAuth(t, connect, "")
}

// TestAttackSources: an anonymous session lists a private file and an
// HTTP URL in a world-writable /logs/sources, and writes a collector's
// assignment naming them, before the collector's first start. The
// collector reads neither (no byte of the file copied, no request made),
// and says why in its status; on a tree the collectors made, the
// anonymous session can write neither node.
func TestAttackSources(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		secret := filepath.Join(t.TempDir(), "shadow")
		if err := os.WriteFile(secret, []byte("root:SECRET-HASH\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var hits atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			fmt.Fprintln(w, "internal-only")
		}))
		defer srv.Close()
		uris := []string{"file://" + secret, srv.URL + "/metadata"}

		anon := dialAnon(t, tg.addr)
		if _, err := NewAdmin(anon).AddSources(ctx, uris...); err != nil {
			t.Fatal(err)
		}
		var leases []Lease
		for i, u := range uris {
			leases = append(leases, Lease{URI: u, ID: fmt.Sprintf("evil-%d", i)})
		}
		if err := anon.EnsurePath(ctx, CollectorPath("c1")); err != nil {
			t.Fatal(err)
		}
		if _, err := anon.Set(ctx, CollectorPath("c1"), encode(Assignment{Version: 1, Sources: leases}), -1); err != nil {
			t.Fatal(err)
		}

		ag := newAgents(t, tg.addr, Local)
		ag.start("c1", true)
		s := dial(t, tg.addr)
		status := func() (Status, int32, error) {
			data, stat, err := s.Get(ctx, StatusPath("c1"))
			if err != nil {
				return Status{}, 0, err
			}
			var st Status
			return st, stat.Version, decode("status", data, &st)
		}
		var refusedAt int32
		checkFor(t, 30*time.Second, 20*time.Millisecond, func() error {
			st, v, err := status()
			if err != nil {
				return err
			}
			if !strings.Contains(st.Refused, "world:anyone") || !strings.Contains(st.Refused, "secure") {
				return fmt.Errorf("status says refused %q; want the reason and the fix", st.Refused)
			}
			refusedAt = v
			return nil
		})
		ov, err := NewAdmin(s).Overview(ctx, time.Minute)
		if infos := ov.Collectors; err != nil || len(infos) != 1 || !strings.Contains(infos[0].Refused, "world:anyone") {
			t.Errorf("Overview = %+v, %v; want c1 with its refusal", infos, err)
		}
		// Rounds go on (heartbeats) and read nothing.
		checkFor(t, 30*time.Second, 20*time.Millisecond, func() error {
			if _, v, err := status(); err != nil || v < refusedAt+5 {
				return fmt.Errorf("status version %d (%v), want 5 more heartbeats after %d", v, err, refusedAt)
			}
			return nil
		})
		if n := hits.Load(); n != 0 {
			t.Errorf("the collector made %d requests to the anonymous HTTP source", n)
		}
		err = filepath.Walk(ag.out, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if strings.Contains(string(data), "SECRET") {
				return fmt.Errorf("%s holds the private file's content", p)
			}
			return err
		})
		if err != nil {
			t.Error(err)
		}

		// A tree the collectors made is closed to anonymous sessions.
		secured := tg.addr + "/secured"
		ag2 := newAgents(t, secured, Local)
		ag2.start("c2", true)
		s2 := dial(t, secured)
		checkFor(t, 30*time.Second, 20*time.Millisecond, func() error {
			_, _, err := s2.Get(ctx, StatusPath("c2"))
			return err
		})
		if _, err := NewAdmin(s2).AddSources(ctx, "file:///var/log/app.log"); err != nil {
			t.Fatal(err)
		}
		anon2 := dialAnon(t, secured)
		if _, err := NewAdmin(anon2).AddSources(ctx, uris...); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous source add on a secured tree: %v, want ErrNoAuth", err)
		}
		if _, err := anon2.Set(ctx, CollectorPath("c2"), encode(Assignment{Version: 1, Sources: leases}), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous assignment write on a secured tree: %v, want ErrNoAuth", err)
		}
	})
}
