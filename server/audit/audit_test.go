package audit

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

var targets []*coordtest.Target

func TestMain(m *testing.M) {
	os.Exit(coordtest.Run(m, "audit", 100*time.Millisecond, &targets))
}

// TestRetentionOrderAndBounds: the log keeps about its retention (the
// oldest go, trimmed every 16th write), lists newest first with paging,
// and keeps an oversized entry without its before/after.
func TestRetentionOrderAndBounds(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := recipe.Dial(ctx, tg.Chroot(t, "audit"), recipe.Options{Auth: coordtest.Auth})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		l := New(s, "/shepherd/console/audit", Options{Keep: 20, PerActor: 20})
		for i := range 64 {
			if err := l.Write(ctx, Entry{User: "alice", Action: "task.stop", Target: fmt.Sprintf("task/t%02d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		nodes, err := l.nodes(ctx)
		if err != nil || len(nodes) > 20+16 || len(nodes) < 20 {
			t.Fatalf("%d entries kept (%v), want 20 to 36", len(nodes), err)
		}
		page, err := l.List(ctx, 5, "")
		if err != nil || len(page) != 5 || page[0].Target != "task/t63" || page[4].Target != "task/t59" {
			t.Fatalf("newest page: %+v, %v", page, err)
		}
		next, err := l.List(ctx, 2, page[4].Seq)
		if err != nil || len(next) != 2 || next[0].Target != "task/t58" {
			t.Fatalf("page before %s: %+v, %v", page[4].Seq, next, err)
		}
		big := Entry{User: "alice", Action: "task.update", Target: "task/big", Before: strings.Repeat("x", MaxEntry)}
		if err := l.Write(ctx, big); err != nil {
			t.Fatal(err)
		}
		got, _ := l.List(ctx, 1, "")
		if len(got) != 1 || got[0].Before != nil || !strings.Contains(got[0].Target, "too large") {
			t.Fatalf("oversized entry stored as %+v", got)
		}
	})
}

// TestAttackFloodKeepsOthersEntries: an actor that writes entry after
// entry (an operator's failing actions, a guesser's failed logins)
// pushes out only its own older entries: another actor's earlier ones
// stay, and the flood keeps about its quota.
func TestAttackFloodKeepsOthersEntries(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s, err := recipe.Dial(ctx, tg.Chroot(t, "auditflood"), recipe.Options{Auth: coordtest.Auth})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		l := New(s, "/shepherd/console/audit", Options{Keep: 40, PerActor: 8})
		for i := range 3 {
			if err := l.Write(ctx, Entry{User: "alice", Action: "task.stop", Target: fmt.Sprintf("task/a%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 200 {
			if err := l.Write(ctx, Entry{User: "mallory", Action: "task.stop", Target: fmt.Sprintf("task/m%d", i), Error: "no such task"}); err != nil {
				t.Fatal(err)
			}
		}
		all, err := l.List(ctx, 1000, "")
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, e := range all {
			count[e.User]++
		}
		// Trimming runs every 16th write, so up to 15 more than the quota.
		if count["alice"] != 3 || count["mallory"] < 8 || count["mallory"] > 8+15 {
			t.Fatalf("after the flood: %v entries by actor; want alice's 3 and 8 to 23 of mallory's", count)
		}
		if all[0].Target != "task/m199" {
			t.Fatalf("newest entry %+v, want the flood's last", all[0])
		}
	})
}

// TestRetentionRules: which entries go, by age, by actor and by count,
// from names alone (entries of before actor tags count but have no
// quota).
func TestRetentionRules(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	name := func(age time.Duration, actor string, seq int) string {
		return nodePrefix(Entry{Time: now.Add(-age), User: actor}) + fmt.Sprintf("%010d", seq)
	}
	names := []string{
		name(48*time.Hour, "alice", 1), // too old
		"e-0000000002",                 // legacy: no time, no actor
		name(time.Hour, "alice", 3),
		name(time.Minute, "bob", 4), // bob's 3rd newest: beyond quota 2
		name(time.Minute, "bob", 5),
		name(time.Minute, "bob", 6),
		"e-0000000007",
	}
	var nodes []node
	for _, n := range names {
		nodes = append(nodes, parseName(n))
	}
	opts := Options{Keep: 4, PerActor: 2, MaxAge: 24 * time.Hour, Now: func() time.Time { return now }}
	got := expired(nodes, opts)
	// Newest first: 7 (legacy), 6, 5 (bob's 2), 4 (bob over quota), 3
	// (alice: the 4th kept), 2 (beyond Keep), 1 (too old and beyond Keep).
	want := []string{names[3], names[1], names[0]}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("expired = %v, want %v", got, want)
	}
}

// TestFollowersTrimByThePublishedRetention: a follower (shepherd ctl)
// trims by its own options only until the owner (the console) has
// published its retention; then by the console's, whatever its own say,
// and a listing shows each entry's changes.
func TestFollowersTrimByThePublishedRetention(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s, err := recipe.Dial(ctx, tg.Chroot(t, "auditfollow"), recipe.Options{Auth: coordtest.Auth})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		const dir = "/shepherd/console/audit"
		follower := New(s, dir, Options{Keep: 4, PerActor: 4, Follow: true})
		write := func(l *Log, n int, user string) {
			t.Helper()
			for i := range n {
				e := Entry{User: user, Action: "job.pause", Target: fmt.Sprintf("job/j%d", i), Before: map[string]bool{"paused": false}, After: map[string]bool{"paused": true}}
				if err := l.Write(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
		}
		count := func() int {
			t.Helper()
			nodes, err := follower.nodes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return len(nodes)
		}
		write(follower, 33, "digest:admin")
		if n := count(); n > 4+16 {
			t.Fatalf("nothing published: %d entries kept, want the follower's own 4 (to 20)", n)
		}
		write(New(s, dir, Options{Keep: 30, PerActor: 30}), 16, "admin")
		data, _, err := s.Get(ctx, dir)
		if err != nil || string(data) != `{"keep":30,"maxAgeSeconds":7776000,"perActor":30}` {
			t.Fatalf("published retention %s, %v", data, err)
		}
		write(follower, 64, "digest:admin")
		if n := count(); n < 30 || n > 30+16 {
			t.Fatalf("published: %d entries kept, want the owner's 30 (to 46)", n)
		}
		got, err := follower.List(ctx, 1, "")
		if err != nil || len(got) != 1 || len(got[0].Changes) != 1 || got[0].Changes[0].Text != "paused: false → true" {
			t.Fatalf("listed %+v, %v; want the change of paused", got, err)
		}
	})
}
