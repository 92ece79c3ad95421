package core

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestLastCommitFencing: a writer of an older term cannot write lastCommit
// once a newer term has claimed it — neither with the version it knew nor
// after reading — and no writer can once its instance node is gone.
func TestLastCommitFencing(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		ctx := coordtest.Context(t, 30*time.Second)
		connect := chrootOf(t, tg)
		s1, s2 := dial(t, connect, testSessionTimeout), dial(t, connect, testSessionTimeout)
		log := coordtest.Logger(t)
		const lcPath = "/task/lastCommit"
		if err := s1.EnsurePath(ctx, "/task/instances"); err != nil {
			t.Fatal(err)
		}
		node := func(s *recipe.Session) (string, int64) {
			p, err := s.Create(ctx, "/task/instances/h-", nil, zk.FlagEphemeralSequential, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, st, err := s.Exists(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			return p, st.Czxid
		}
		n1, e1 := node(s1)
		n2, e2 := node(s2)

		old := newCommitWriter(s1, log, lcPath, n1, e1, "h-1")
		if _, existed, err := old.claim(ctx); err != nil || existed {
			t.Fatalf("first claim: existed %v, %v", existed, err)
		}
		if err := old.write(ctx, LastCommit{File: "b.1", Pos: 10}); err != nil {
			t.Fatal(err)
		}
		cur := newCommitWriter(s2, log, lcPath, n2, e2, "h-2")
		lc, existed, err := cur.claim(ctx)
		if err != nil || !existed || lc.Pos != 10 || lc.Owner != "h-1" {
			t.Fatalf("takeover claim = %+v, existed %v, %v; want h-1's position 10", lc, existed, err)
		}
		if err := old.write(ctx, LastCommit{File: "b.1", Pos: 20}); !errors.Is(err, ErrFenced) {
			t.Fatalf("old term's write after the takeover: %v, want ErrFenced", err)
		}
		if _, _, err := newCommitWriter(s1, log, lcPath, n1, e1, "h-1").claim(ctx); !errors.Is(err, ErrFenced) {
			t.Fatalf("old term's fresh claim: %v, want ErrFenced", err)
		}
		if err := cur.write(ctx, LastCommit{File: "b.1", Pos: 30}); err != nil {
			t.Fatalf("current term's write: %v", err)
		}
		// An admin (ctl task start) rewriting lastCommit between two of
		// the owner's writes is not a newer term: the owner goes on.
		data, st, _ := s1.Get(ctx, lcPath)
		if _, err := s1.Set(ctx, lcPath, data, st.Version); err != nil {
			t.Fatal(err)
		}
		if err := cur.write(ctx, LastCommit{File: "b.1", Pos: 40}); err != nil {
			t.Fatalf("write after an admin's rewrite: %v", err)
		}
		if err := s2.Delete(ctx, n2, -1); err != nil {
			t.Fatal(err)
		}
		if err := cur.write(ctx, LastCommit{File: "b.1", Pos: 50}); !errors.Is(err, ErrFenced) {
			t.Fatalf("write with the instance node gone: %v, want ErrFenced", err)
		}
		got, _, err := readLastCommit(ctx, s1, lcPath)
		if err != nil || got.Pos != 40 || got.Owner != "h-2" || got.Epoch != e2 {
			t.Fatalf("lastCommit = %+v, %v; want position 40 by h-2, epoch %d", got, err, e2)
		}
	})
}

// TestLastCommitUnreadable: a damaged lastCommit does not stop a new
// owner: it is replaced (the target's checkpoint is authoritative).
func TestLastCommitUnreadable(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		ctx := coordtest.Context(t, 30*time.Second)
		s := dial(t, chrootOf(t, tg), testSessionTimeout)
		if err := s.EnsurePath(ctx, "/task"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, "/task/lastCommit", []byte("{garbage"), zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		n, err := s.Create(ctx, "/task/i-", nil, zk.FlagEphemeralSequential, nil)
		if err != nil {
			t.Fatal(err)
		}
		w := newCommitWriter(s, slog.New(slog.DiscardHandler), "/task/lastCommit", n, 1, "i")
		if _, _, err := w.claim(context.Background()); err != nil {
			t.Fatalf("claim over a damaged lastCommit: %v", err)
		}
		if lc, _, err := readLastCommit(ctx, s, "/task/lastCommit"); err != nil || lc.Owner != "i" {
			t.Fatalf("lastCommit after the claim: %+v, %v", lc, err)
		}
	})
}
