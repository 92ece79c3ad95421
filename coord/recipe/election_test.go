package recipe

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/zpath"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// campaignAsync starts e.Campaign and returns the channel of its result.
func campaignAsync(ctx context.Context, e *Election) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- e.Campaign(ctx) }()
	return ch
}

// expectLeader reads leader identities from ch until want arrives.
// Identities coalesce, so intermediate ones may be skipped; want may not.
func expectLeader(t testing.TB, ch <-chan string, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	var seen []string
	for {
		select {
		case id, ok := <-ch:
			if !ok {
				t.Fatalf("Observe closed waiting for leader %q (saw %q)", want, seen)
			}
			if id == want {
				return
			}
			seen = append(seen, id)
		case <-timeout:
			t.Fatalf("Observe: no leader %q within 10s (saw %q)", want, seen)
		}
	}
}

func TestElectionLatch(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		sa, sb := dial(t, tg.Addr, Options{}), dial(t, tg.Addr, Options{})
		a, b := NewElection(sa, p, "host-a"), NewElection(sb, p, "host-b")
		obs := NewElection(dial(t, tg.Addr, Options{}), p, "")

		if _, err := obs.Leader(ctx); !errors.Is(err, ErrNoLeader) {
			t.Fatalf("Leader of an empty election: %v, want ErrNoLeader", err)
		}
		leaders := obs.Observe(ctx)
		expectLeader(t, leaders, "")
		if a.IsLeader() || a.Token() != 0 || a.Node() != "" {
			t.Fatalf("before Campaign: IsLeader %v, Token %d, Node %q", a.IsLeader(), a.Token(), a.Node())
		}
		select {
		case <-a.Lost():
		default:
			t.Error("Lost() of a candidate that never won is not closed")
		}

		if err := a.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		tokA := a.Token()
		if !a.IsLeader() || tokA == 0 {
			t.Fatalf("after Campaign: IsLeader %v, Token %d", a.IsLeader(), tokA)
		}
		if err := a.Campaign(ctx); err != nil || a.Token() != tokA {
			t.Fatalf("Campaign by the leader: %v, token %d → %d; want nil and the same term", err, tokA, a.Token())
		}
		expectLeader(t, leaders, "host-a")
		for _, e := range []*Election{a, b, obs} {
			if id, err := e.Leader(ctx); err != nil || id != "host-a" {
				t.Errorf("Leader() seen by %q = %q, %v; want host-a", e.ID(), id, err)
			}
		}

		bDone := campaignAsync(ctx, b)
		for _, n := range waitChildren(t, sa, p, 2) {
			if !kazooLockNode.MatchString(n) {
				t.Errorf("candidate node %q is not named as kazoo's Election names them (%v)", n, kazooLockNode)
			}
		}
		notYet(t, bDone, "b.Campaign while a leads")
		if b.IsLeader() {
			t.Error("a waiting candidate says it leads")
		}

		if err := a.Resign(); err != nil {
			t.Fatal(err)
		}
		if a.IsLeader() || a.Token() != 0 {
			t.Errorf("after Resign: IsLeader %v, Token %d", a.IsLeader(), a.Token())
		}
		if err := recv(t, bDone, "b.Campaign"); err != nil {
			t.Fatalf("b.Campaign after a resigned: %v", err)
		}
		if tokB := b.Token(); tokB <= tokA {
			t.Errorf("token of the next leader %d, want more than the last one's %d", tokB, tokA)
		}
		expectLeader(t, leaders, "host-b")

		// Resign interrupts a campaign, which withdraws.
		aDone := campaignAsync(ctx, a)
		waitChildren(t, sa, p, 2)
		if err := a.Resign(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, aDone, "a.Campaign"); !errors.Is(err, ErrResigned) {
			t.Fatalf("a Campaign interrupted by Resign: %v, want ErrResigned", err)
		}
		waitChildren(t, sa, p, 1)

		// A campaign that runs out of time withdraws too.
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if err := a.Campaign(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Campaign with a short deadline: %v, want DeadlineExceeded", err)
		}
		waitChildren(t, sa, p, 1)

		if err := b.Resign(); err != nil {
			t.Fatal(err)
		}
		if err := b.Resign(); err != nil {
			t.Errorf("a second Resign: %v, want nil", err)
		}
		expectLeader(t, leaders, "")
		if _, err := obs.Leader(ctx); !errors.Is(err, ErrNoLeader) {
			t.Errorf("Leader after everyone resigned: %v, want ErrNoLeader", err)
		}
	})
}

// TestElectionHerdFree: a leader's departure wakes exactly one waiting
// candidate, and Observe wakes only on a change of leader.
func TestElectionHerdFree(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		const n = 5
		var sessions []*Session
		var es []*Election
		for i := range n {
			s := dial(t, tg.Addr, Options{})
			sessions = append(sessions, s)
			es = append(es, NewElection(s, p, fmt.Sprint("c", i)))
		}
		if err := es[0].Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		so := dial(t, tg.Addr, Options{})
		leaders := NewElection(so, p, "").Observe(ctx)
		expectLeader(t, leaders, "c0")
		done := make([]<-chan error, n)
		for i := 1; i < n; i++ {
			done[i] = campaignAsync(ctx, es[i])
			waitChildren(t, so, p, i+1)
		}
		waitParked(t, sessions, n-1)
		if ev := so.nodeEvents.Load(); ev != 0 {
			t.Errorf("the observer got %d events while candidates queued behind the leader, want 0", ev)
		}
		for i := range n - 1 {
			before := int64(0)
			for _, s := range sessions {
				before += s.waiterWakeups.Load()
			}
			if err := es[i].Resign(); err != nil {
				t.Fatal(err)
			}
			if err := recv(t, done[i+1], fmt.Sprint("candidate ", i+1)); err != nil {
				t.Fatal(err)
			}
			expectLeader(t, leaders, fmt.Sprint("c", i+1))
			after := int64(0)
			for _, s := range sessions {
				after += s.waiterWakeups.Load()
			}
			if after-before != 1 {
				t.Fatalf("resignation %d woke %d candidates, want exactly 1", i, after-before)
			}
		}
		if err := es[n-1].Resign(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestElectionSuspended: a leader whose connection is lost stops saying
// it leads at once, and says so again — same term, same token — once the
// session is back and its node verified.
func TestElectionSuspended(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		proxy := newFaultProxy(t, tg.Addr)
		s := dial(t, proxy.Addr(), Options{SessionTimeout: 4 * time.Second})
		e := NewElection(s, p, "leader")
		if err := e.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		tok := e.Token()
		proxy.Stall() // the reconnection hangs until Release
		proxy.Cut()
		coordtest.WaitFor(t, 5*time.Second, "IsLeader false while suspended", func() error {
			if e.IsLeader() {
				return errors.New("still says it leads")
			}
			return nil
		})
		if e.Token() != tok {
			t.Errorf("Token changed during a suspension: %d → %d", tok, e.Token())
		}
		select {
		case <-e.Lost():
			t.Fatal("Lost() closed by a suspension the session may survive")
		default:
		}
		again := campaignAsync(ctx, e)
		notYet(t, again, "Campaign of a suspended leader")
		proxy.Release()
		if err := recv(t, again, "Campaign of the leader after reconnecting"); err != nil {
			t.Fatal(err)
		}
		if !e.IsLeader() || e.Token() != tok {
			t.Fatalf("after reconnecting: IsLeader %v, token %d (was %d); want the same term", e.IsLeader(), e.Token(), tok)
		}
		if err := e.Resign(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestElectionLostOnExpiry: an expired leader's term is lost, the next
// candidate takes over with a larger token, and the old leader can
// campaign again on its new session.
func TestElectionLostOnExpiry(t *testing.T) {
	t.Parallel() // waits out session expiries
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		p := testPath(t)
		sa, sb := dial(t, tg.Addr, Options{}), dial(t, tg.Addr, Options{})
		a, b := NewElection(sa, p, "a"), NewElection(sb, p, "b")
		if err := a.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		tokA := a.Token()
		bDone := campaignAsync(ctx, b)
		waitChildren(t, sb, p, 2)
		expireSession(t, sa, tg.Addr)
		select {
		case <-a.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("Lost() not closed after the leader's session expired")
		}
		if a.IsLeader() || a.Token() != 0 {
			t.Errorf("expired leader: IsLeader %v, Token %d", a.IsLeader(), a.Token())
		}
		if err := recv(t, bDone, "b.Campaign"); err != nil {
			t.Fatal(err)
		}
		if b.Token() <= tokA {
			t.Errorf("new leader's token %d, want more than %d", b.Token(), tokA)
		}
		aDone := campaignAsync(ctx, a)
		waitChildren(t, sb, p, 2)
		if err := b.Resign(); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, aDone, "a.Campaign on its new session"); err != nil {
			t.Fatal(err)
		}
		if err := a.Resign(); err != nil {
			t.Fatal(err)
		}
	})
}

// leadCall is one call of a selector's lead function.
type leadCall struct {
	id    string
	token int64
	ctx   context.Context
	ret   chan error // what lead returns, sent by the test
}

// selectorAsync runs RunSelector for id; every call of lead is sent on
// calls and returns what the test sends on its ret, or when its context
// is cancelled.
func selectorAsync(ctx context.Context, s *Session, p, id string, calls chan<- leadCall) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- RunSelector(ctx, s, p, id, func(lctx context.Context, e *Election) error {
			c := leadCall{id: id, token: e.Token(), ctx: lctx, ret: make(chan error, 1)}
			calls <- c
			select {
			case err := <-c.ret:
				return err
			case <-lctx.Done():
				return nil
			}
		})
	}()
	return done
}

// firstCandidate returns the path of the first of two candidates' nodes at p.
func firstCandidate(t testing.TB, s *Session, p string) string {
	t.Helper()
	return zpath.Join(p, waitChildren(t, s, p, 2)[0])
}

func nextLead(t testing.TB, calls <-chan leadCall, what string) leadCall {
	t.Helper()
	select {
	case c := <-calls:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: lead not called within 10s", what)
		return leadCall{}
	}
}

func noLead(t testing.TB, calls <-chan leadCall, what string) {
	t.Helper()
	select {
	case c := <-calls:
		t.Fatalf("%s: lead called for %s", what, c.id)
	case <-time.After(150 * time.Millisecond):
	}
}

// cancelled waits for c's context to be cancelled and returns the cause.
func (c leadCall) cancelled(t testing.TB, d time.Duration) error {
	t.Helper()
	select {
	case <-c.ctx.Done():
		return context.Cause(c.ctx)
	case <-time.After(d):
		t.Fatalf("lead context of %s not cancelled within %v", c.id, d)
		return nil
	}
}

func TestSelector(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 60*time.Second)
		p := testPath(t)
		proxyA := newFaultProxy(t, tg.Addr)
		sa := dial(t, proxyA.Addr(), Options{SessionTimeout: 4 * time.Second})
		sb := dial(t, tg.Addr, Options{})
		calls := make(chan leadCall, 4)
		ctxA, stopA := context.WithCancel(ctx)
		defer stopA()
		doneA := selectorAsync(ctxA, sa, p, "a", calls)
		first := nextLead(t, calls, "the only candidate")
		if first.id != "a" {
			t.Fatalf("lead called for %q, want a", first.id)
		}
		ctxB, stopB := context.WithCancel(ctx)
		defer stopB()
		doneB := selectorAsync(ctxB, sb, p, "b", calls)
		waitChildren(t, sb, p, 2)
		noLead(t, calls, "b queued behind a leading a")

		// Returning from lead relinquishes; a queues again behind b.
		first.ret <- nil
		c := nextLead(t, calls, "after a returned")
		if c.id != "b" || c.token <= first.token {
			t.Fatalf("lead called for %s with token %d, want b with more than %d", c.id, c.token, first.token)
		}
		waitChildren(t, sb, p, 2)

		// b's node is deleted (by an operator, say): its lead is cancelled
		// for good, and a leads.
		if err := sa.Delete(ctx, firstCandidate(t, sb, p), -1); err != nil {
			t.Fatal(err)
		}
		if cause := c.cancelled(t, 10*time.Second); !errors.Is(cause, ErrLeadershipLost) {
			t.Errorf("cause of the deposed leader's cancellation: %v, want ErrLeadershipLost", cause)
		}
		c = nextLead(t, calls, "after b's node was deleted")
		if c.id != "a" {
			t.Fatalf("lead called for %s, want a", c.id)
		}
		waitChildren(t, sa, p, 2) // b queued again

		// a's session expires: the server drops its connection first, so
		// lead learns of a suspension, and the term is lost; b leads.
		expireSession(t, sa, tg.Addr)
		if cause := c.cancelled(t, 10*time.Second); !errors.Is(cause, ErrLeaderSuspended) && !errors.Is(cause, ErrLeadershipLost) {
			t.Errorf("cause of the expired leader's cancellation: %v, want ErrLeaderSuspended or ErrLeadershipLost", cause)
		}
		c = nextLead(t, calls, "after a expired")
		if c.id != "b" {
			t.Fatalf("lead called for %s, want b", c.id)
		}
		waitChildren(t, sa, p, 2) // a queued again on its new session
		c.ret <- nil
		c = nextLead(t, calls, "after b returned")
		if c.id != "a" {
			t.Fatalf("lead called for %s, want a", c.id)
		}
		waitChildren(t, sa, p, 2)

		// a's connection drops: lead is cancelled as suspended, then
		// called again in the same term once the session is back.
		proxyA.Stall()
		proxyA.Cut()
		if cause := c.cancelled(t, 10*time.Second); !errors.Is(cause, ErrLeaderSuspended) {
			t.Errorf("cause of the suspended leader's cancellation: %v, want ErrLeaderSuspended", cause)
		}
		noLead(t, calls, "a suspended")
		proxyA.Release()
		again := nextLead(t, calls, "a after reconnecting")
		if again.id != "a" || again.token != c.token {
			t.Fatalf("after the reconnect lead called for %s token %d, want a in the same term (%d)", again.id, again.token, c.token)
		}

		// A failing lead relinquishes too.
		again.ret <- errors.New("job failed")
		if c := nextLead(t, calls, "after a's lead failed"); c.id != "b" {
			t.Fatalf("lead called for %s, want b", c.id)
		}

		// Stopping a selector withdraws its candidate.
		stopA()
		if err := recv(t, doneA, "RunSelector a"); !errors.Is(err, context.Canceled) {
			t.Errorf("RunSelector after its context ended: %v, want context.Canceled", err)
		}
		waitChildren(t, sb, p, 1)
		stopB()
		if err := recv(t, doneB, "RunSelector b"); !errors.Is(err, context.Canceled) {
			t.Errorf("RunSelector after its context ended: %v, want context.Canceled", err)
		}
		waitChildren(t, sb, p, 0)
	})
}
