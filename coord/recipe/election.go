package recipe

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Errors of the election recipe.
var (
	// ErrNoLeader reports an election without candidates.
	ErrNoLeader = errors.New("recipe: election has no leader")
	// ErrResigned is returned by a Campaign that Resign interrupted.
	ErrResigned = errors.New("recipe: resigned from the election")
	// ErrLeadershipLost is the cause (context.Cause) of the cancellation of
	// a selector's leadership context when leadership is lost for good:
	// the session was lost, or the leader's node was deleted.
	ErrLeadershipLost = errors.New("recipe: leadership lost")
	// ErrLeaderSuspended is the cause of the cancellation of a selector's
	// leadership context when the leader's connection is lost: its session
	// may be alive and it may still be the leader, but it cannot know, and
	// someone else may be leader once the session timeout has passed.
	ErrLeaderSuspended = errors.New("recipe: leader's connection suspended")
)

// ElectionOption configures an Election.
type ElectionOption func(*electionConfig)

type electionConfig struct {
	naming Naming
	prefix string // WithElectionNodePrefix
}

// WithElectionNaming sets the candidate node names. The default,
// KazooNaming, is what kazoo's Election uses, so that Go and Python
// candidates share an election; CuratorNaming is what Curator's
// LeaderSelector uses.
func WithElectionNaming(n Naming) ElectionOption {
	return func(c *electionConfig) { c.naming = n }
}

// Election is the leader election of the ZooKeeper recipes: a leader latch
// over ephemeral sequential nodes. Candidates queue under path as the
// contenders of a Mutex do, each with its identity as its node's data;
// the first in line leads, and each other candidate watches only the one
// before it, so a leader's departure wakes one candidate (no herd).
// Anyone can read the leader's identity (Leader) and follow it (Observe).
//
// # What a leader can rely on
//
// A leader learns that it may no longer lead from its session: IsLeader
// turns false as soon as the connection is lost (Suspended) and turns true
// again only once the session is back and the leader's node verified;
// Lost is closed when leadership is gone for good — the session lost, the
// node deleted. The Session declares a session lost before the server
// can expire it (see Session), so a leader cut off from the server stops
// believing it leads before any other candidate can be elected: when a
// leader dies or is partitioned away, beliefs of two candidates do not
// overlap, as long as the two machines' clocks run at the same rate.
// When the term is ended from the server's side instead — the node
// deleted by an operator, the session closed by another client — the
// next candidate may be elected a network delay before the old leader
// hears of it.
//
// That is not enough for writes that must never come from two leaders: a
// leader may be paused (GC, a stopped VM) between checking IsLeader and
// writing, or its clock may run slow. Such writes need a fence the server
// checks. Token returns the fencing token of the term, the creation zxid
// of the leader's node, which grows from each leader to the next; a write
// made in a Multi with a zk.CheckVersionRequest on Node() fails once the
// term has ended; and a store outside ZooKeeper can refuse writes carrying
// a token smaller than the largest it has seen.
//
// An Election value is one candidate. It is safe for concurrent use.
type Election struct {
	s    *Session
	path string
	id   string
	m    *Mutex

	mu   sync.Mutex
	busy chan struct{}           // closed when the running Campaign or Resign ends
	stop context.CancelCauseFunc // interrupts the running Campaign
	term *term                   // the current term, if this candidate won
}

// NewElection returns the candidate id in the election at path, a
// directory created on first use — persistent with KazooNaming, the
// default (kazoo's Election fails if its path disappears), container
// nodes with CuratorNaming. Nothing happens
// until Campaign. An Election used only to read the leader (Leader,
// Observe) needs no id.
func NewElection(s *Session, path, id string, opts ...ElectionOption) *Election {
	cfg := electionConfig{naming: KazooNaming}
	for _, o := range opts {
		o(&cfg)
	}
	return &Election{
		s:    s,
		path: path,
		id:   id,
		m:    NewMutex(s, path, WithNaming(cfg.naming), WithNodeData([]byte(id)), WithNodePrefix(cfg.prefix)),
	}
}

// enter waits until no Campaign or Resign runs and makes the caller the
// one that runs, with stop as the way to interrupt it. A Resign passes
// interrupt and stops a running Campaign rather than wait for it to win.
func (e *Election) enter(ctx context.Context, stop context.CancelCauseFunc, interrupt bool) (leave func(), err error) {
	for {
		e.mu.Lock()
		if e.busy == nil {
			done := make(chan struct{})
			e.busy, e.stop = done, stop
			e.mu.Unlock()
			return func() {
				e.mu.Lock()
				e.busy, e.stop = nil, nil
				e.mu.Unlock()
				close(done)
			}, nil
		}
		busy := e.busy
		if interrupt && e.stop != nil {
			e.stop(ErrResigned)
		}
		e.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Campaign enters the election and blocks until this candidate leads, as
// long as ctx allows. It returns nil at once if it leads already. A
// Campaign that gives up (ctx done, or Resign called meanwhile:
// ErrResigned) withdraws, so it does not hold up the candidates behind
// it. A candidate whose session is lost while it waits enters again on
// the new session, at the back.
func (e *Election) Campaign(ctx context.Context) error {
	cctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	leave, err := e.enter(ctx, stop, false)
	if err != nil {
		return fmt.Errorf("recipe: campaign %s: %w", e.path, err)
	}
	defer leave()
	for {
		t := e.current()
		if t == nil {
			if err := e.m.Lock(cctx); err != nil {
				return e.campaignError(cctx, err)
			}
			var err error
			if t, err = e.startTerm(cctx); err != nil {
				_ = e.m.Unlock()
				if errors.Is(err, errTermLost) {
					continue
				}
				return e.campaignError(cctx, err)
			}
			e.mu.Lock()
			e.term = t
			e.mu.Unlock()
			e.s.log.Info("elected leader", "path", e.path, "id", e.id, "node", t.node, "token", t.token)
		}
		err := t.awaitLeading(cctx)
		if err == nil {
			return nil
		}
		if rerr := e.endTerm(); rerr != nil {
			e.s.log.Warn("withdrawing from the election", "path", e.path, "err", rerr)
		}
		if !errors.Is(err, errTermLost) {
			return e.campaignError(cctx, err)
		}
	}
}

// campaignError is the error of a Campaign that gives up with err.
func (e *Election) campaignError(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrResigned) {
		err = ErrResigned
	}
	return fmt.Errorf("recipe: campaign %s: %w", e.path, err)
}

// Resign gives up leadership, or the candidacy if a Campaign is under way
// (which then returns ErrResigned): the candidate's node is deleted and
// the next candidate leads. It returns nil if there is nothing to give
// up, or if leadership had been lost already. While the session is
// suspended the delete waits, at most until the session is lost.
func (e *Election) Resign() error {
	leave, _ := e.enter(context.Background(), nil, true)
	defer leave()
	return e.endTerm()
}

// endTerm ends the current term, if any, and deletes its node. The caller
// runs (see enter).
func (e *Election) endTerm() error {
	e.mu.Lock()
	t := e.term
	e.term = nil
	e.mu.Unlock()
	if t == nil {
		return nil
	}
	t.end()
	err := e.m.Unlock()
	if err != nil && !errors.Is(err, ErrLockLost) {
		return fmt.Errorf("recipe: resign %s: %w", e.path, err)
	}
	e.s.log.Info("leadership ended", "path", e.path, "id", e.id, "node", t.node)
	return nil
}

// current returns the current term, or nil.
func (e *Election) current() *term {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.term
}

// IsLeader reports whether this candidate leads as far as it can tell
// now: it won, its leadership has not been lost, and its connection is up
// and has been verified since it was last suspended.
func (e *Election) IsLeader() bool {
	t := e.current()
	return t != nil && t.leading()
}

// Lost returns a channel closed when the current term is lost for good
// (session lost, node deleted) — or already closed if this candidate has
// not won or has resigned. A suspended leader's term is not lost; see
// IsLeader.
func (e *Election) Lost() <-chan struct{} {
	t := e.current()
	if t == nil {
		return closedChan
	}
	return t.lost
}

// Token returns the fencing token of the current term: the creation zxid
// of the leader's node, larger for every later leader of this election
// (and for this candidate's own later terms). It is 0 if this candidate
// has not won, has resigned or lost its term. A token stays valid while
// the leader is suspended: fencing is done by whoever receives the
// writes, not by the leader's opinion of itself.
func (e *Election) Token() int64 {
	t := e.current()
	if t == nil || t.isLost() {
		return 0
	}
	return t.token
}

// Node returns the path of the leader's node during a term, or "". A
// Multi including zk.CheckVersionRequest{Path: Node(), Version: 0}
// succeeds only while the term lasts on the server.
func (e *Election) Node() string {
	t := e.current()
	if t == nil {
		return ""
	}
	return t.node
}

// ID returns the candidate's identity, the data of its node.
func (e *Election) ID() string { return e.id }

// Path returns the election's directory.
func (e *Election) Path() string { return e.path }

// errTermLost means leadership was lost before its term could start.
var errTermLost = errors.New("recipe: leadership lost while taking office")

// term is one spell of leadership, from winning to Resign or loss. It
// follows the session: a suspension makes it "not leading" until the
// session is back and the node is seen to be still there.
type term struct {
	s     *Session
	node  string
	token int64
	lost  <-chan struct{}

	unlisten func()
	ctx      context.Context // ends with the term: stops verifications
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu        sync.Mutex
	ended     bool          // end was called: start no verification
	suspended bool          // connection lost since the last verification
	epoch     int           // suspensions so far; a verification counts for its epoch only
	changed   chan struct{} // closed and replaced when suspended changes
}

// startTerm starts the term of the node the Mutex holds: it reads the
// node's creation zxid, the fencing token, and starts following the
// session.
func (e *Election) startTerm(ctx context.Context) (*term, error) {
	ctx2, cancel := context.WithCancel(context.Background())
	t := &term{s: e.s, node: e.m.Node(), lost: e.m.Lost(), ctx: ctx2, cancel: cancel, changed: make(chan struct{})}
	t.unlisten = e.s.Listen(t.onState)
	// Read after Listen, so that no later change is missed.
	connected := e.s.State().Connected()
	t.mu.Lock()
	t.suspended = !connected
	t.mu.Unlock()
	ok, st, err := e.s.Retrying().Exists(ctx, t.node)
	if err == nil && (!ok || t.isLost()) {
		err = errTermLost
	}
	if err != nil {
		t.end()
		return nil, err
	}
	t.token = st.Czxid
	return t, nil
}

// awaitLeading waits until the term leads (see status). It returns
// errTermLost if the term is lost first.
func (t *term) awaitLeading(ctx context.Context) error {
	for {
		leading, changed := t.status()
		if leading {
			return nil
		}
		select {
		case <-changed:
		case <-t.lost:
			return errTermLost
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// onState is the term's Session listener.
func (t *term) onState(st State) {
	switch st {
	case StateSuspended:
		t.setSuspended(true, -1)
	case StateReconnected:
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.ended {
			return
		}
		epoch := t.epoch
		t.wg.Add(1) // under mu, so that end's Wait sees it
		go func() {
			defer t.wg.Done()
			t.verify(epoch)
		}()
	}
}

// verify checks, after a reconnect, that the node is still there and
// still the session's, and if so ends the suspension of epoch.
func (t *term) verify(epoch int) {
	ok, st, err := t.s.Retrying().Exists(t.ctx, t.node)
	if err != nil || !ok || st.EphemeralOwner != t.s.ID() {
		// The node's watch (see holding) reports a deletion as a loss;
		// another suspension starts another verification.
		return
	}
	t.setSuspended(false, epoch)
}

// setSuspended records a suspension (epoch -1 starts a new epoch) or the
// end of the suspension of epoch.
func (t *term) setSuspended(suspended bool, epoch int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if suspended {
		t.epoch++
	} else if epoch != t.epoch {
		return
	}
	if t.suspended == suspended {
		return
	}
	t.suspended = suspended
	close(t.changed)
	t.changed = make(chan struct{})
}

// status reports whether the term leads now, and a channel closed at the
// next change of that (other than its loss: watch lost for that).
func (t *term) status() (leading bool, changed <-chan struct{}) {
	// The Session's state is read too: the listener hears of a suspension
	// a moment after it happens. It is read first, outside t.mu, which is
	// never held while calling out.
	connected := t.s.State().Connected()
	t.mu.Lock()
	defer t.mu.Unlock()
	return connected && !t.suspended && !t.isLost(), t.changed
}

func (t *term) leading() bool {
	l, _ := t.status()
	return l
}

func (t *term) isLost() bool {
	select {
	case <-t.lost:
		return true
	default:
		return false
	}
}

// end stops following the session.
func (t *term) end() {
	t.unlisten()
	t.mu.Lock()
	t.ended = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
}
