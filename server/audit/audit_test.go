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
		l := New(s, "/shepherd/console/audit", 20, nil)
		for i := range 64 {
			if err := l.Write(ctx, Entry{User: "alice", Action: "task.stop", Target: fmt.Sprintf("task/t%02d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		names, err := l.names(ctx)
		if err != nil || len(names) > 20+16 || len(names) < 20 {
			t.Fatalf("%d entries kept (%v), want 20 to 36", len(names), err)
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
