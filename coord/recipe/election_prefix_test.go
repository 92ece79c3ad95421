package recipe

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestElectionNodePrefix: candidates named <prefix><seq> elect by
// sequence, whatever the host names say, and the leader's data is its id.
func TestElectionNodePrefix(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		// zz- queues first: by name it would come last.
		first := NewElection(dial(t, tg.Addr, Options{}), p, "id-zz", WithElectionNodePrefix("zz-"))
		second := NewElection(dial(t, tg.Addr, Options{}), p, "id-aa", WithElectionNodePrefix("aa-"))
		if err := first.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		secondDone := campaignAsync(ctx, second)
		observer := dial(t, tg.Addr, Options{})
		names := waitChildren(t, observer, p, 2) // in queue order
		shape := regexp.MustCompile(`^(aa|zz)-\d{10}$`)
		for _, n := range names {
			if !shape.MatchString(n) {
				t.Errorf("node %q: want <prefix><10-digit sequence>", n)
			}
		}
		if got := first.Node(); got != p+"/"+names[0] {
			t.Errorf("leader's Node() = %q, want the first in line %s/%s (queue %v)", got, p, names[0], names)
		}
		if id, err := second.Leader(ctx); err != nil || id != "id-zz" {
			t.Fatalf("Leader() = %q, %v; want id-zz", id, err)
		}
		tok := first.Token()
		if err := first.Resign(); err != nil {
			t.Fatal(err)
		}
		if err := <-secondDone; err != nil {
			t.Fatalf("second Campaign: %v", err)
		}
		if !second.IsLeader() || second.Token() <= tok {
			t.Fatalf("second: IsLeader %v, Token %d; want leader with a token above %d", second.IsLeader(), second.Token(), tok)
		}
	})
}

// TestElectionNodePrefixAfterLostReply: a candidate whose create's reply
// is lost finds its node again by its session, not by name, and leaves
// alone a node of another session with the same prefix.
func TestElectionNodePrefixAfterLostReply(t *testing.T) {
	t.Parallel() // waits out a reconnection
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		// Another process on the same host leads with the same prefix.
		other := NewElection(dial(t, tg.Addr, Options{}), p, "other", WithElectionNodePrefix("host1-"))
		if err := other.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		proxy := newFaultProxy(t, tg.Addr)
		e := NewElection(dial(t, proxy.Addr(), Options{SessionTimeout: 4 * time.Second}), p, "mine", WithElectionNodePrefix("host1-"))
		observer := dial(t, tg.Addr, Options{})

		proxy.StallReplies()
		done := campaignAsync(ctx, e)
		waitChildren(t, observer, p, 2) // the create reached the server
		proxy.Cut()
		proxy.Release()

		// Were the cut-off create not recovered, a retry would queue a
		// third node; were it recovered by name, it would adopt other's.
		coordtest.WaitFor(t, 5*time.Second, "the candidate to settle behind the leader", func() error {
			kids, _, err := observer.Children(ctx, p)
			if err != nil {
				return err
			}
			if len(kids) != 2 {
				return fmt.Errorf("children %v, want 2", kids)
			}
			return nil
		})
		if err := other.Resign(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Campaign after a lost reply: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Campaign did not win after the leader resigned")
		}
		data, _, err := observer.Get(ctx, e.Node())
		if err != nil || string(data) != "mine" {
			t.Fatalf("leader node %s data = %q, %v; want mine", e.Node(), data, err)
		}
		if kids := waitChildren(t, observer, p, 1); p+"/"+kids[0] != e.Node() {
			t.Fatalf("children %v; want only the leader %s", kids, e.Node())
		}
	})
}

// TestElectionTryCampaign is the cold-standby scan: the first candidate
// wins; a later one withdraws at once and leaves no node; once the
// leader resigns the next try wins with a larger token. Serve runs the
// leader's function until it returns.
func TestElectionTryCampaign(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		a := NewElection(dial(t, tg.Addr, Options{}), p, "a", WithElectionNodePrefix("a-"))
		b := NewElection(dial(t, tg.Addr, Options{}), p, "b", WithElectionNodePrefix("b-"))
		observer := dial(t, tg.Addr, Options{})

		if ok, err := a.TryCampaign(ctx); err != nil || !ok {
			t.Fatalf("first TryCampaign = %v, %v; want true", ok, err)
		}
		if ok, err := a.TryCampaign(ctx); err != nil || !ok {
			t.Fatalf("TryCampaign by the leader = %v, %v; want true", ok, err)
		}
		if ok, err := b.TryCampaign(ctx); err != nil || ok {
			t.Fatalf("TryCampaign behind a leader = %v, %v; want false", ok, err)
		}
		if kids := waitChildren(t, observer, p, 1); p+"/"+kids[0] != a.Node() {
			t.Fatalf("children %v: want only the leader's %s", kids, a.Node())
		}
		if b.IsLeader() || b.Token() != 0 {
			t.Fatalf("loser: IsLeader %v, Token %d", b.IsLeader(), b.Token())
		}

		calls := 0
		err := a.Serve(ctx, func(ctx context.Context, e *Election) error {
			calls++
			if e != a || !e.IsLeader() {
				return fmt.Errorf("lead called with %p leading=%v, want the leader %p", e, e.IsLeader(), a)
			}
			return errTestDone
		})
		if err != errTestDone || calls != 1 {
			t.Fatalf("Serve = %v after %d calls; want lead's error after 1", err, calls)
		}
		tok := a.Token()
		if err := a.Resign(); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.TryCampaign(ctx); err != nil || !ok {
			t.Fatalf("TryCampaign after the leader left = %v, %v; want true", ok, err)
		}
		if b.Token() <= tok {
			t.Fatalf("token %d after %d: want it to grow", b.Token(), tok)
		}
	})
}

var errTestDone = fmt.Errorf("test: lead done")
