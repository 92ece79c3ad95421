package recipe

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// State is the state of a Session, as Curator names them. Listeners see
// every change, in order.
type State int32

const (
	// StateConnected: a new session is established — the first one after
	// Dial, or a fresh one after StateLost. Nothing of an earlier session
	// (ephemeral nodes, watches) survives into it.
	StateConnected State = iota + 1
	// StateSuspended: the connection is lost; the session may still be
	// alive on the server. Stop work that cannot be undone until
	// StateReconnected, and be ready for StateLost.
	StateSuspended
	// StateReconnected: the connection is back and the session survived:
	// ephemeral nodes and watches are intact.
	StateReconnected
	// StateLost: the session is gone — the server expired it, or it could
	// not be reached for so long that the server may have. Every ephemeral
	// node of the session is (or is about to be) deleted by the server and
	// every lock held through it is lost. The Session keeps trying to
	// connect and reports StateConnected with a new session.
	StateLost
	// StateClosed: Close was called. Nothing follows.
	StateClosed
)

var stateNames = map[State]string{
	StateConnected:   "CONNECTED",
	StateSuspended:   "SUSPENDED",
	StateReconnected: "RECONNECTED",
	StateLost:        "LOST",
	StateClosed:      "CLOSED",
}

func (st State) String() string {
	if n, ok := stateNames[st]; ok {
		return n
	}
	return fmt.Sprintf("State(%d)", int32(st))
}

// Connected reports whether operations can reach the server in this
// state: StateConnected or StateReconnected.
func (st State) Connected() bool { return st == StateConnected || st == StateReconnected }

// Options configures a Session. The zero value works: a 10s session
// timeout, no authentication, open ACLs, DefaultRetryPolicy, slog.Default().
// With Auth, the nodes the Session creates are the credential's alone
// (plus READ for ReadACL): see docs/security.md.
type Options struct {
	// SessionTimeout is the session timeout asked of the server, which
	// bounds it to its own [min, max] (ZooKeeper: 2 to 20 ticks). A lock
	// holder that dies loses its locks after this long.
	SessionTimeout time.Duration
	// Auth is a digest credential, "user:password" or
	// "digest:user:password" (ParseCredential), added to every
	// connection; empty for none.
	Auth string
	// ACL is the ACL of nodes the recipes create (parents included), and
	// of Create calls given a nil ACL. Nil means the policy: with Auth,
	// the credential's cdrwa plus READ for each ReadACL entry; without,
	// world:anyone with all permissions.
	ACL []zk.ACL
	// ReadACL lists read-only identities (viewers) added to the policy
	// ACL; their permissions are forced to READ. Secrets (SecretACL)
	// never get them.
	ReadACL []zk.ACL
	// TrustedWriters lists digest identities (ParseTrustedWriter) whose
	// nodes CheckTrusted accepts as if the Session's credential had
	// written them: other teams' credentials in a several-team set-up.
	// They get cdrwa in the policy ACL, so that each may write below the
	// nodes the others create; secrets (SecretACL) stay the credential's.
	TrustedWriters []zk.ACL
	// InsecureOpenACL turns CheckTrusted's refusals into logged warnings:
	// the operator's explicit opt-out for a cluster that cannot be secured.
	InsecureOpenACL bool
	// Retry is the backoff of Retry and of the recipes' own retries.
	Retry RetryPolicy
	// Logger receives state changes and client library messages.
	Logger *slog.Logger
}

// DefaultSessionTimeout is the session timeout of a zero Options.
const DefaultSessionTimeout = 10 * time.Second

// lostMargin is how much before the earliest possible server-side expiry
// a Session that cannot reach its server declares the session lost: room
// for the two clocks' rates to differ (see wireMonitor).
func lostMargin(timeout time.Duration) time.Duration { return timeout / 20 }

// Session is one ZooKeeper session, kept connected, with Curator's
// connection states and a retry policy. It offers the znode operations of
// go-zookeeper with a chroot applied, and is what the recipes of this
// package run on. A Session is safe for concurrent use.
//
// go-zookeeper opens a new session by itself when the server expires the
// old one; a Session reports that as StateLost followed by StateConnected,
// and the recipes treat it as losing everything held through the old one.
type Session struct {
	servers []string
	root    chroot
	opts    Options
	log     *slog.Logger

	cred      *Credential // nil: no credential
	credID    string      // cred's digest ACL id
	secretACL []zk.ACL

	done      chan struct{} // closed by Close
	closeOnce sync.Once
	bgMu      sync.Mutex     // guards bgClosed, and bg.Add against bg.Wait
	bgClosed  bool           // Close is waiting: no new background tasks
	bg        sync.WaitGroup // background tasks; Close waits for them

	// waiterWakeups counts watch events delivered to lock waiters;
	// nodeEvents counts every node watch event the session received;
	// parked is the number of waiters blocked on a watch right now.
	waiterWakeups atomic.Int64
	nodeEvents    atomic.Int64
	parked        atomic.Int64

	mu        sync.Mutex
	cur       *handle
	state     State // 0 until the first session
	sessionID int64 // the live session; 0 when none
	gen       uint64
	genDone   chan struct{} // closed when generation gen is lost or closed
	changed   chan struct{} // closed and replaced at every state change
	lostTimer *time.Timer
	listeners map[uint64]listener
	nextID    uint64
	changes   uint64        // state changes so far
	queue     []change      // changes the dispatcher has yet to deliver
	kick      chan struct{} // wakes the dispatcher
}

// change is the n-th state change of a Session.
type change struct {
	n     uint64
	state State
}

// listener gets the state changes after the since-th.
type listener struct {
	fn    func(State)
	since uint64
}

// handle is one go-zookeeper connection. A Session replaces its handle
// when it declares a session lost on its own (see lostTimeout): the old
// connection might otherwise reconnect into the old session.
type handle struct {
	conn   *zk.Conn
	mon    *wireMonitor
	hosts  *eagerHosts
	ready  chan struct{} // closed when conn may be used (auth added)
	err    error         // why conn cannot be used; read after ready
	closed chan struct{} // closed when the Session drops the handle
}

// Dial connects to the servers of connect, host:port[,host:port…][/chroot],
// and returns once a session is established. With a chroot every path the
// Session takes and returns is relative to it, and the chroot node is
// created if missing. ctx bounds the connection attempt only.
func Dial(ctx context.Context, connect string, opts Options) (*Session, error) {
	servers, root, err := parseConnect(connect)
	if err != nil {
		return nil, err
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	var cred *Credential
	if opts.Auth != "" {
		c, err := ParseCredential(opts.Auth)
		if err != nil {
			return nil, fmt.Errorf("recipe: auth: %w", err)
		}
		cred, opts.Auth = &c, c.Auth()
	}
	nodeACL, secretACL := policyACLs(cred, opts.TrustedWriters, opts.ReadACL)
	if opts.ACL == nil {
		opts.ACL = nodeACL
	}
	opts.Retry = opts.Retry.orDefault()
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Session{
		servers:   servers,
		root:      chroot(root),
		opts:      opts,
		log:       log.With("zk", connect),
		done:      make(chan struct{}),
		genDone:   make(chan struct{}),
		changed:   make(chan struct{}),
		listeners: map[uint64]listener{},
		kick:      make(chan struct{}, 1),
		cred:      cred,
		secretACL: secretACL,
	}
	if cred != nil {
		s.credID = cred.ID()
	}
	close(s.genDone) // no generation yet
	go s.dispatch()
	s.mu.Lock()
	err = s.openLocked()
	s.mu.Unlock()
	if err == nil {
		_, _, err = s.awaitSession(ctx)
	}
	if err == nil && root != "" {
		// A connection lost here (a loaded machine, a server restarting)
		// is retried like any call's, within ctx: a first connection that
		// blinks must not fail the whole dial.
		err = s.Retry(ctx, func() error { return s.ensureServerPath(ctx, root, zk.FlagPersistent) })
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("recipe: connect to %s: %w", connect, err)
	}
	return s, nil
}

// openLocked starts a new go-zookeeper connection and makes it current.
// zk.Connect does not block: the connection is established in the
// background and reported through onEvent.
func (s *Session) openLocked() error {
	connectTimeout := s.opts.SessionTimeout / time.Duration(len(s.servers))
	h := &handle{mon: &wireMonitor{connectTimeout: connectTimeout}, hosts: newEagerHosts(), ready: make(chan struct{}), closed: make(chan struct{})}
	conn, _, err := zk.Connect(s.servers, s.opts.SessionTimeout,
		zk.WithDialer(h.mon.dialer()),
		zk.WithHostProvider(h.hosts),
		zk.WithEventCallback(func(ev zk.Event) { s.onEvent(h, ev) }),
		zk.WithLogger(zkLogger{s.log}),
		zk.WithLogInfo(false))
	if err != nil {
		return fmt.Errorf("recipe: open connection to %v: %w", s.servers, err)
	}
	h.conn = conn
	s.cur = h
	if s.opts.Auth == "" {
		close(h.ready)
		return nil
	}
	s.goBackground(func() { s.authenticate(h) })
	return nil
}

// authenticate adds the digest credential to a new connection before
// anything else may use it. go-zookeeper re-sends it on every reconnect.
func (s *Session) authenticate(h *handle) {
	defer close(h.ready)
	err := retry(context.Background(), s, RetryPolicy{BaseDelay: 50 * time.Millisecond, MaxDelay: time.Second}, func() error {
		select {
		case <-h.closed:
			return nil
		default:
		}
		return h.conn.AddAuth("digest", []byte(s.opts.Auth))
	})
	if err != nil {
		h.err = fmt.Errorf("recipe: add digest auth: %w", err)
		s.log.Error("authentication failed", "err", err)
	}
}

// onEvent is go-zookeeper's event callback for handle h. It must not
// block: it runs on the client's connection goroutine.
func (s *Session) onEvent(h *handle, ev zk.Event) {
	if ev.Type != zk.EventSession {
		if ev.Type != zk.EventNotWatching {
			s.nodeEvents.Add(1)
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h != s.cur || s.state == StateClosed {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		_, id, _ := h.mon.snapshot()
		switch {
		case id == s.sessionID && s.state == StateSuspended:
			s.stopLostTimerLocked()
			s.setStateLocked(StateReconnected)
		case id == s.sessionID:
		default:
			if s.sessionID != 0 {
				s.loseLocked("server gave a new session")
			}
			s.sessionID = id
			s.gen++
			s.genDone = make(chan struct{})
			s.setStateLocked(StateConnected)
		}
	case zk.StateDisconnected:
		if s.state.Connected() {
			s.setStateLocked(StateSuspended)
			s.armLostTimerLocked(h)
		}
	case zk.StateExpired:
		if s.sessionID != 0 {
			s.loseLocked("expired by the server")
		}
		h.hosts.grant() // the server is up: ask it for a new session now
	}
}

// armLostTimerLocked schedules the client-side loss of the session at the
// earliest time the server may expire it (see wireMonitor).
func (s *Session) armLostTimerLocked(h *handle) {
	confirmed, id, timeout := h.mon.snapshot()
	deadline := confirmed.Add(timeout - lostMargin(timeout))
	s.stopLostTimerLocked()
	s.lostTimer = time.AfterFunc(max(time.Until(deadline), 0), func() { s.lostTimeout(h, id) })
}

func (s *Session) stopLostTimerLocked() {
	if s.lostTimer != nil {
		s.lostTimer.Stop()
		s.lostTimer = nil
	}
}

// lostTimeout declares a suspended session lost because the server may
// have expired it by now. The connection is replaced rather than left to
// reconnect: were the old session still alive (a server restarted within
// the timeout keeps sessions), its ephemeral nodes would outlive the
// locks the recipes already gave up. They now expire on the server, on
// its own clock.
func (s *Session) lostTimeout(h *handle, id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h != s.cur || s.state != StateSuspended || s.sessionID != id {
		return
	}
	s.loseLocked("no reply from the server within the session timeout")
	if err := s.openLocked(); err != nil {
		// Only a server list that no longer resolves gets here; keep the
		// old connection, which will find the server gone and expire.
		s.log.Error("cannot replace the connection of a lost session", "err", err)
		return
	}
	s.closeHandle(h)
}

// loseLocked ends the current generation.
func (s *Session) loseLocked(why string) {
	s.stopLostTimerLocked()
	s.log.Warn("session lost", "session", sessionHex(s.sessionID), "reason", why)
	s.sessionID = 0
	close(s.genDone)
	s.setStateLocked(StateLost)
}

func (s *Session) setStateLocked(st State) {
	if st == s.state {
		return
	}
	s.state = st
	close(s.changed)
	s.changed = make(chan struct{})
	s.changes++
	s.queue = append(s.queue, change{s.changes, st})
	select {
	case s.kick <- struct{}{}:
	default:
	}
	switch st {
	case StateConnected, StateReconnected:
		s.log.Info("session "+strings.ToLower(st.String()), "session", sessionHex(s.sessionID))
	case StateSuspended:
		s.log.Warn("session suspended: connection lost", "session", sessionHex(s.sessionID))
	}
}

// closeHandle drops h in the background: go-zookeeper's Close waits up to
// a few seconds for the server to acknowledge.
func (s *Session) closeHandle(h *handle) {
	close(h.closed)
	h.mon.dropped.Store(true)
	s.goBackground(h.conn.Close)
}

// goBackground runs fn in a goroutine that Close waits for. Once Close
// is waiting, fn is dropped: what background tasks do (delete abandoned
// nodes, close replaced connections) Close does wholesale.
func (s *Session) goBackground(fn func()) {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bgClosed {
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		fn()
	}()
}

// dispatch delivers state changes to listeners, in order, one at a time.
// Close does not wait for it: a listener may call Close.
func (s *Session) dispatch() {
	for range s.kick {
		s.mu.Lock()
		q := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, c := range q {
			for _, fn := range s.listenersFor(c.n) {
				fn(c.state)
			}
			if c.state == StateClosed {
				return
			}
		}
	}
}

// listenersFor returns, in registration order, the listeners registered
// before change n.
func (s *Session) listenersFor(n uint64) []func(State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]uint64, 0, len(s.listeners))
	for id, l := range s.listeners {
		if l.since < n {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	fns := make([]func(State), len(ids))
	for i, id := range ids {
		fns[i] = s.listeners[id].fn
	}
	return fns
}

// Listen registers fn to be called with every state change from now on,
// in order, on one goroutine shared by all listeners of the Session: fn
// must return promptly. cancel unregisters it. After StateClosed nothing
// more is delivered.
func (s *Session) Listen(fn func(State)) (cancel func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	id := s.nextID
	s.listeners[id] = listener{fn: fn, since: s.changes}
	return func() {
		s.mu.Lock()
		delete(s.listeners, id)
		s.mu.Unlock()
	}
}

// State returns the current state.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// ID returns the id of the live session, or 0 while there is none
// (between StateLost and the next StateConnected, and after Close).
func (s *Session) ID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID
}

// Timeout returns the session timeout the server granted, or 0 before a
// session is established on the current connection.
func (s *Session) Timeout() time.Duration {
	s.mu.Lock()
	h := s.cur
	s.mu.Unlock()
	_, _, t := h.mon.snapshot()
	return t
}

// Chroot returns the chroot of the connect string, or "" for none.
func (s *Session) Chroot() string { return string(s.root) }

// Close ends the session: the server deletes its ephemeral nodes at once,
// listeners get StateClosed, and every operation fails with ErrClosed.
// Close must not be called from a listener.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		h := s.cur
		s.stopLostTimerLocked()
		select {
		case <-s.genDone:
		default:
			close(s.genDone)
		}
		s.sessionID = 0
		s.setStateLocked(StateClosed)
		close(s.done)
		s.mu.Unlock()
		if h != nil {
			close(h.closed)
			h.conn.Close()
		}
		s.bgMu.Lock()
		s.bgClosed = true
		s.bgMu.Unlock()
		s.bg.Wait()
	})
}

func (s *Session) isClosed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// awaitSession waits until the session is connected and returns its
// generation and the channel closed when that generation ends.
func (s *Session) awaitSession(ctx context.Context) (uint64, <-chan struct{}, error) {
	for {
		s.mu.Lock()
		st, gen, genDone, changed, h := s.state, s.gen, s.genDone, s.changed, s.cur
		s.mu.Unlock()
		if st == StateClosed {
			return 0, nil, ErrClosed
		}
		if st.Connected() {
			select {
			case <-h.ready:
				if h.err != nil {
					return 0, nil, h.err
				}
				return gen, genDone, nil
			case <-changed:
				continue
			case <-ctx.Done():
				return 0, nil, ctx.Err()
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
}

// generation returns the current generation and its end channel, without
// waiting.
func (s *Session) generation() (uint64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen, s.genDone
}

func sessionHex(id int64) string { return fmt.Sprintf("0x%x", id) }

// zkLogger sends go-zookeeper's messages to slog at debug level: the
// Session logs the state changes that matter itself.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...), "component", "go-zookeeper")
}
