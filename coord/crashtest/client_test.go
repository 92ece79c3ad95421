package crashtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/coordhealth"
)

// Client timing.
const (
	// sessionTimeout is what every test client asks for: long enough to
	// ride out a crash, the restart of a race-enabled server and
	// go-zookeeper's one-second pause between reconnection rounds.
	sessionTimeout = 15 * time.Second
	// reconnectTimeout bounds the wait for a client to have its session
	// back after a restart.
	reconnectTimeout = 20 * time.Second
)

// errSessionLost reports a client whose session did not survive a restart.
// Sessions are durable in shepherd coord, so this is a server bug, not an
// unknown outcome.
var errSessionLost = errors.New("session lost across a server restart")

// errUnknownOutcome marks a request whose connection was lost before its
// reply: the server may or may not have applied it.
var errUnknownOutcome = errors.New("outcome unknown: connection lost before the reply")

// client is a go-zookeeper connection whose replies are tapped for zxids
// and whose network link the test can cut.
type client struct {
	*zk.Conn
	tap     *replyTap
	link    *link
	session int64 // the session the client must keep across restarts
}

// link is a client's connection to the server, which the test can cut to
// make the server see the client vanish without closing its session.
type link struct {
	mu   sync.Mutex
	cut  bool
	conn net.Conn // the current connection, if any
}

// errLinkCut is what dialling returns while the test keeps a link cut.
var errLinkCut = errors.New("link cut by the test")

func (l *link) dial(network, address string, timeout time.Duration, tap *replyTap) (net.Conn, error) {
	l.mu.Lock()
	cut := l.cut
	l.mu.Unlock()
	if cut {
		return nil, errLinkCut
	}
	c, err := dialRestarting(network, address, timeout)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		c.Close()
		return nil, errLinkCut
	}
	l.conn = c
	return &tappedConn{Conn: c, tap: tap}, nil
}

// cutLink closes c's connection and refuses new ones until healLink: the
// client stops pinging, so the server will expire the session unless the
// link heals in time.
func (c *client) cutLink() {
	c.link.mu.Lock()
	defer c.link.mu.Unlock()
	c.link.cut = true
	if c.link.conn != nil {
		c.link.conn.Close()
	}
}

// healLink lets c connect again.
func (c *client) healLink() {
	c.link.mu.Lock()
	defer c.link.mu.Unlock()
	c.link.cut = false
}

// connect opens a client session to addr and waits until it is
// established. The connection is closed when the test ends.
func connect(t testing.TB, addr string) *client {
	t.Helper()
	return connectFor(t, addr, sessionTimeout)
}

// connectFor is connect asking for the given session timeout.
func connectFor(t testing.TB, addr string, timeout time.Duration) *client {
	t.Helper()
	tap, l := &replyTap{}, &link{}
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		return l.dial(network, address, timeout, tap)
	}
	conn, _, err := zk.Connect([]string{addr}, timeout, zk.WithHostProvider(&restartingHost{}),
		zk.WithDialer(dial), zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(conn.Close)
	c := &client{Conn: conn, tap: tap, link: l}
	deadline := time.Now().Add(reconnectTimeout)
	for conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			t.Fatalf("no session with %s within %v (state %v)", addr, reconnectTimeout, conn.State())
		}
		time.Sleep(pollInterval)
	}
	c.session = conn.SessionID()
	return c
}

// waitSession waits until c is connected again with the session it had,
// which must survive a server restart. It returns errSessionLost if the
// server expired it (go-zookeeper then silently opens a new one), and an
// error at once if the client has seen a zxid the restarted server does
// not have, since such a server refuses the client for good.
func (c *client) waitSession(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for polls := 1; ; polls++ {
		state, id := c.State(), c.SessionID()
		if state == zk.StateExpired || (id != 0 && id != c.session) {
			return fmt.Errorf("%w: session %#x (client now in state %v with session %#x)", errSessionLost, c.session, state, id)
		}
		if state == zk.StateHasSession {
			return nil
		}
		if polls%futureCheckPolls == 0 {
			if seen, at, ok := c.sawFuture(); ok {
				return fmt.Errorf("session %#x cannot come back: the client saw zxid %#x before the restart but the server is at %#x, so it lost transactions it had acknowledged", c.session, seen, at)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("session %#x not re-established within %v (state %v)", c.session, timeout, state)
		}
		time.Sleep(pollInterval)
	}
}

// futureCheckPolls is how many polls waitSession lets pass between asking
// the server for its zxid.
const futureCheckPolls = 10

// sawFuture reports whether c has seen a zxid beyond the server's last
// one, which go-zookeeper sends when it reconnects and which a server that
// lost acknowledged transactions therefore refuses.
func (c *client) sawFuture() (seen, at int64, ok bool) {
	at, err := serverZxid(c.Server())
	seen = c.tap.lastZxid()
	return seen, at, err == nil && seen > at
}

// waitSessions waits for every client's session in parallel.
func waitSessions(clients []*client) error {
	return errors.Join(waitSessionsEach(clients)...)
}

// waitSessionsEach waits for every client's session in parallel and
// returns each client's outcome.
func waitSessionsEach(clients []*client) []error {
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { errs[i] = c.waitSession(reconnectTimeout) })
	}
	wg.Wait()
	return errs
}

// answered reports whether err is the server's answer to a request that it
// processed (NoNode, BadVersion, …), as opposed to a lost connection, after
// which the request may or may not have been applied.
func answered(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, zk.ErrNoNode),
		errors.Is(err, zk.ErrNodeExists),
		errors.Is(err, zk.ErrBadVersion),
		errors.Is(err, zk.ErrNotEmpty),
		errors.Is(err, zk.ErrNoAuth),
		errors.Is(err, zk.ErrInvalidACL),
		errors.Is(err, zk.ErrBadArguments),
		errors.Is(err, zk.ErrAPIError),
		errors.Is(err, zk.ErrNoChildrenForEphemerals):
		return true
	}
	return false
}

// dialRetry is how often dialRestarting tries again.
const dialRetry = 20 * time.Millisecond

// dialRestarting dials a server that may be restarting: it waits until
// timeout for the server to serve instead of failing at once, so that a
// client is back within milliseconds of the server. Serving means srvr
// reports a mode: ZooKeeper listens, and even answers ruok, while it is
// still loading its database, and a session handshake sent then can hang
// for ten read timeouts.
func dialRestarting(network, address string, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	for {
		ans, err := coordhealth.Ask(context.Background(), address, "srvr")
		if err == nil && strings.Contains(ans, "Mode: ") {
			return net.DialTimeout(network, address, timeout)
		}
		if time.Now().Add(dialRetry).After(deadline) {
			if err == nil {
				err = fmt.Errorf("%s is not serving yet: srvr answered %q", address, ans)
			}
			return nil, err
		}
		time.Sleep(dialRetry)
	}
}

// restartingHost is a go-zookeeper HostProvider for the one server under
// test. go-zookeeper's own provider makes every reconnection to a single
// server start with a one-second pause, which a test that restarts its
// server twenty times pays twenty times. This one lets the first attempt
// after a lost connection dial at once (dialRestarting then waits for the
// server to listen); only when that fails does go-zookeeper pause and fail
// the requests queued meanwhile with ErrNoServer, as it always does.
type restartingHost struct {
	mu     sync.Mutex
	server string
	tries  int // Next calls since the last successful connection
}

func (h *restartingHost) Init(servers []string) error {
	if len(servers) != 1 {
		return fmt.Errorf("restartingHost serves one server, got %v", servers)
	}
	h.server = servers[0]
	return nil
}

func (h *restartingHost) Len() int { return 1 }

func (h *restartingHost) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tries++
	return h.server, h.tries > 1
}

func (h *restartingHost) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tries = 0
}

// quietLogger drops go-zookeeper's reconnection chatter, which every crash
// produces by the dozen.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
