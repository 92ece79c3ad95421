package realclients

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

const (
	// reconnectSessionTimeout outlasts a ZooKeeper restart (a JVM start,
	// several seconds on two busy cores) with room to spare; the server
	// caps it at 20 ticks, 40 s.
	reconnectSessionTimeout = 30 * time.Second
	// reconnectWait bounds each wait for the client: reconnecting takes
	// about a second (go-zookeeper pauses 1 s between rounds of dials).
	reconnectWait = 30 * time.Second
)

// TestGoZkReconnectAfterServerRestart restarts the server under a
// connected go-zookeeper client, on the same port and data directory,
// within the session timeout. The client must get its old session back,
// with its ephemeral nodes, and its watches, which it re-registers with
// setWatches, must fire for changes made after it is back and for changes
// made while it was away.
func TestGoZkReconnectAfterServerRestart(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			srv := k.start(t)
			for _, tc := range []struct {
				name      string
				whileAway bool
			}{
				{name: "changes after reconnect", whileAway: false},
				{name: "changes while away", whileAway: true},
			} {
				t.Run(tc.name, func(t *testing.T) {
					root := "/reconnect-after"
					if tc.whileAway {
						root = "/reconnect-away"
					}
					reconnectScenario(t, srv, root, tc.whileAway)
				})
			}
		})
	}
}

// reconnectScenario is one restart; see TestGoZkReconnectAfterServerRestart.
// The client goes through a gatedProxy so that, with whileAway, it can be
// kept away while another client changes the watched nodes.
func reconnectScenario(t *testing.T, srv server, root string, whileAway bool) {
	proxy := newGatedProxy(t, srv.Addr)
	c, events := connectGoZk(t, proxy.Addr())
	mustCreate(t, c, root, 0)
	mustCreate(t, c, root+"/eph", zk.FlagEphemeral)
	mustCreate(t, c, root+"/data", 0)
	mustCreate(t, c, root+"/gone", 0)
	session := c.SessionID()

	watches := []struct {
		what string
		set  watchResult
		want zk.Event
	}{
		{what: "data watch", set: watchOf(c.GetW(root + "/data")), want: zk.Event{Type: zk.EventNodeDataChanged, Path: root + "/data"}},
		{what: "child watch", set: watchOf(c.ChildrenW(root)), want: zk.Event{Type: zk.EventNodeChildrenChanged, Path: root}},
		{what: "exists watch on a missing node", set: watchOf(c.ExistsW(root + "/later")), want: zk.Event{Type: zk.EventNodeCreated, Path: root + "/later"}},
		{what: "data watch on a node deleted later", set: watchOf(c.GetW(root + "/gone")), want: zk.Event{Type: zk.EventNodeDeleted, Path: root + "/gone"}},
	}
	for _, w := range watches {
		if w.set.err != nil {
			t.Fatalf("set the %s: %v", w.what, w.set.err)
		}
	}

	mark := events.len()
	if whileAway {
		proxy.Hold()
	}
	srv.Restart(t)
	if err := events.waitFor(mark, zk.StateDisconnected); err != nil {
		t.Fatalf("client did not notice the restart: %v", err)
	}
	change := func() {
		d, _ := connectGoZk(t, srv.Addr())
		if _, err := d.Set(root+"/data", []byte("changed"), -1); err != nil {
			t.Fatalf("set %s/data: %v", root, err)
		}
		mustCreate(t, d, root+"/later", 0)
		if err := d.Delete(root+"/gone", -1); err != nil {
			t.Fatalf("delete %s/gone: %v", root, err)
		}
		d.Close()
	}
	if whileAway {
		change()
		proxy.Release()
	}
	if err := events.waitFor(mark, zk.StateHasSession); err != nil {
		t.Fatalf("client did not get a session back after the restart: %v", err)
	}
	if got := c.SessionID(); got != session {
		t.Fatalf("session after restart = %#x, want the old one %#x", got, session)
	}
	if slices.Contains(events.states(), zk.StateExpired) {
		t.Fatalf("session expired across the restart; client states: %v", events.states())
	}
	_, stat, err := c.Get(root + "/eph")
	if err != nil {
		t.Fatalf("ephemeral %s/eph after restart: %v", root, err)
	}
	if stat.EphemeralOwner != session {
		t.Fatalf("ephemeral owner after restart = %#x, want the session %#x", stat.EphemeralOwner, session)
	}
	if !whileAway {
		change()
	}

	for _, w := range watches {
		select {
		case ev := <-w.set.ch:
			if ev.Type != w.want.Type || ev.Path != w.want.Path || ev.Err != nil {
				t.Errorf("%s fired %v %q (err %v), want %v %q", w.what, ev.Type, ev.Path, ev.Err, w.want.Type, w.want.Path)
			}
		case <-time.After(reconnectWait):
			t.Errorf("%s did not fire within %v after the restart", w.what, reconnectWait)
		}
	}
	data, _, err := c.Get(root + "/data")
	if err != nil || string(data) != "changed" {
		t.Errorf("get %s/data after reconnect = %q, %v; want \"changed\"", root, data, err)
	}
}

// watchResult is what setting a watch with GetW, ChildrenW or ExistsW
// gave: the channel the event will come on, or the error.
type watchResult struct {
	ch  <-chan zk.Event
	err error
}

// watchOf keeps the watch part of a GetW, ChildrenW or ExistsW result.
func watchOf[T any](_ T, _ *zk.Stat, ch <-chan zk.Event, err error) watchResult {
	return watchResult{ch: ch, err: err}
}

func mustCreate(t *testing.T, c *zk.Conn, path string, flags int32) {
	t.Helper()
	if _, err := c.Create(path, []byte(path), flags, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

// sessionEvents records the session states a go-zookeeper client goes
// through, in order.
type sessionEvents struct {
	mu   sync.Mutex
	list []zk.State
	done chan struct{} // closed when the client's event channel is
}

func (e *sessionEvents) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.list)
}

func (e *sessionEvents) states() []zk.State {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

// waitFor polls until state shows up after the first since states.
func (e *sessionEvents) waitFor(since int, state zk.State) error {
	deadline := time.Now().Add(reconnectWait)
	for {
		if slices.Contains(e.states()[since:], state) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %v within %v; states since: %v", state, reconnectWait, e.states()[since:])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// connectGoZk connects to addr and waits for a session; the client is
// closed when the test ends.
func connectGoZk(t *testing.T, addr string) (*zk.Conn, *sessionEvents) {
	t.Helper()
	c, ch, err := zk.Connect([]string{addr}, reconnectSessionTimeout, zk.WithLogger(testLogger{t}), zk.WithDialer(recipe.Dialer()))
	if err != nil {
		t.Fatalf("go-zookeeper connect %s: %v", addr, err)
	}
	ev := &sessionEvents{done: make(chan struct{})}
	go func() {
		defer close(ev.done)
		for e := range ch {
			if e.Type == zk.EventSession {
				ev.mu.Lock()
				ev.list = append(ev.list, e.State)
				ev.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		c.Close()
		<-ev.done
	})
	if err := ev.waitFor(0, zk.StateHasSession); err != nil {
		t.Fatalf("go-zookeeper connect %s: %v", addr, err)
	}
	return c, ev
}

// testLogger sends go-zookeeper's log to the test's log, shown on failure
// or with -v.
type testLogger struct{ t *testing.T }

func (l testLogger) Printf(format string, args ...any) {
	l.t.Helper()
	l.t.Logf("go-zookeeper: "+format, args...)
}
