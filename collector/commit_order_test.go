package collector

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestCancelledCommitIsSettledInOrder: a commit whose context ends
// before its request has an answer — as at every stop of a collector —
// is settled by reading the status back, and the read must come after
// the request, which may still go out once the caller has given up. A
// read sent first saw the old status, called the commit lost, and the
// retry found the commit's own version: "another process writes this
// collector's status", the sources not handed back. Each round here
// cancels a commit at once and settles it; none may end that way.
func TestCancelledCommitIsSettledInOrder(t *testing.T) {
	tg := startShepherd(t)
	s := dial(t, tg.addr)
	ctx := coordtest.Context(t, 2*time.Minute)
	cfg := testAgentConfig("g1", t.TempDir(), "", testLogger()).Collector
	c, err := New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.register(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		c.refused = "round " + string(rune('a'+i%26)) // a change to commit
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if err := c.commit(cancelled); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: commit with a cancelled context: %v", i, err)
		}
		if c.inflight != nil {
			if err := c.settle(ctx); err != nil {
				t.Fatalf("round %d: settle: %v", i, err)
			}
		}
		if c.uncommitted || c.status.Refused != c.refused {
			if err := c.commit(ctx); err != nil {
				t.Fatalf("round %d: the commit after settling: %v", i, err)
			}
		}
	}
}
