package monitor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestRemoveSilenceDeletesOnlyASilence: an id that is not one node name
// under the silences ("../state", as a console's DELETE may carry it
// decoded) is refused and the state stays; an unknown id is ErrNoSilence.
func TestRemoveSilenceDeletesOnlyASilence(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
		if err := s.EnsurePath(ctx, Root); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, StatePath, []byte(`{"version":1}`), zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		if err := AddSilence(ctx, s, Silence{ID: "maint", Matchers: map[string]string{"task": "orders"}, EndsAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"../state", "..", "", "a/b"} {
			if err := RemoveSilence(ctx, s, id); !errors.Is(err, ErrInvalidSilence) {
				t.Errorf("remove %q: %v, want ErrInvalidSilence", id, err)
			}
		}
		if _, _, err := s.Get(ctx, StatePath); err != nil {
			t.Fatalf("the state after the refused removals: %v", err)
		}
		if err := RemoveSilence(ctx, s, "nope"); !errors.Is(err, ErrNoSilence) {
			t.Errorf("remove an unknown silence: %v, want ErrNoSilence", err)
		}
		if err := RemoveSilence(ctx, s, "maint"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestNewSilenceIDs: ids made in the same second differ and are valid
// node names.
func TestNewSilenceIDs(t *testing.T) {
	now := time.Now()
	a, b := NewSilenceID(now), NewSilenceID(now)
	if a == b || checkSilenceID(a) != nil || checkSilenceID(b) != nil {
		t.Fatalf("ids %q and %q: want two different valid ids", a, b)
	}
}

// TestSilencedBy: the silence that covers a finding, none once it ended.
func TestSilencedBy(t *testing.T) {
	now := time.Now()
	f := Finding{Rule: RuleTaskFailed, Severity: Critical, Labels: map[string]string{"task": "orders"}}
	sils := []Silence{
		{ID: "other", Matchers: map[string]string{"task": "billing"}, EndsAt: now.Add(time.Hour)},
		{ID: "maint", Matchers: map[string]string{"rule": RuleTaskFailed, "task": "orders"}, EndsAt: now.Add(time.Hour)},
	}
	if sl, ok := SilencedBy(sils, f, now); !ok || sl.ID != "maint" {
		t.Fatalf("silenced by %+v, %v; want maint", sl, ok)
	}
	if sl, ok := SilencedBy(sils, f, now.Add(2*time.Hour)); ok {
		t.Fatalf("silenced after the silence ended, by %+v", sl)
	}
}

// TestFormatLabels: sorted by name, one string for ctl and the console.
func TestFormatLabels(t *testing.T) {
	if got := FormatLabels(map[string]string{"task": "orders", "rule": "TaskFailed"}); got != "rule=TaskFailed,task=orders" {
		t.Fatalf("got %q", got)
	}
	if got := FormatLabels(nil); got != "" {
		t.Fatalf("no labels: got %q", got)
	}
}
