package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	// sessionTimeout is what bench clients ask for: long enough that a
	// loaded two-core machine does not expire them mid-run.
	sessionTimeout = 10 * time.Second
	// connectTimeout bounds the wait for one session to be established.
	connectTimeout = 10 * time.Second
	// clientBufferBytes caps go-zookeeper's receive buffer (1.5 MiB by
	// default) so a thousand watcher sessions do not cost gigabytes. No
	// response bench asks for comes near it: the widest getChildren lists
	// 1000 short names.
	clientBufferBytes = 256 << 10
	// dialParallelism bounds concurrent session establishments.
	dialParallelism = 32
)

var openACL = zk.WorldACL(zk.PermAll)

// zkLogger routes go-zookeeper's chatty connection log to slog at debug
// level, where it does not drown the progress lines.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...), "component", "zk-client")
}

// connect opens one session to addr and waits until the server has
// established it, so that callers measure requests, not handshakes.
func connect(ctx context.Context, addr string, log *slog.Logger) (*zk.Conn, error) {
	conn, events, err := zkConnect(addr, log)
	if err != nil {
		return nil, err
	}
	if err := awaitSession(ctx, events, connectTimeout); err != nil {
		conn.Close()
		return nil, fmt.Errorf("bench: connect to %s: %w", addr, err)
	}
	return conn, nil
}

// zkConnect starts a go-zookeeper session to addr, configured as every
// bench client is; the session is established in the background.
func zkConnect(addr string, log *slog.Logger) (*zk.Conn, <-chan zk.Event, error) {
	conn, events, err := zk.Connect([]string{addr}, sessionTimeout,
		zk.WithLogger(zkLogger{log}), zk.WithLogInfo(false), zk.WithMaxBufferSize(clientBufferBytes))
	if err != nil {
		return nil, nil, fmt.Errorf("bench: connect to %s: %w", addr, err)
	}
	return conn, events, nil
}

// errSessionWait is returned when a session is not established in time.
var errSessionWait = errors.New("no session established")

// awaitSession reads connection events until the session is established.
// A connection the server drops before that fails at once, rather than
// after go-zookeeper's one-second reconnect back-off: a server still
// loading its data does exactly that. go-zookeeper drops events when
// nobody reads its small channel, which is harmless afterwards: bench
// never depends on later session events.
func awaitSession(ctx context.Context, events <-chan zk.Event, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return fmt.Errorf("%w: connection closed", errSessionWait)
			}
			if ev.State == zk.StateHasSession {
				return nil
			}
			if ev.State == zk.StateDisconnected || ev.State == zk.StateExpired || ev.State == zk.StateAuthFailed {
				return fmt.Errorf("%w: %v", errSessionWait, ev.State)
			}
		case <-timer.C:
			return fmt.Errorf("%w within %v", errSessionWait, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// connectAll opens n sessions in parallel, logging progress when there are
// many. On error it closes the sessions it opened.
func connectAll(ctx context.Context, addr string, n int, log *slog.Logger) ([]*zk.Conn, error) {
	conns := make([]*zk.Conn, n)
	errs := make([]error, n)
	sem := make(chan struct{}, dialParallelism)
	var wg sync.WaitGroup
	p := newProgress(log, "connecting sessions", n)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			conns[i], errs[i] = connect(ctx, addr, log)
			p.add(1)
		})
	}
	wg.Wait()
	p.done()
	if err := errors.Join(errs...); err != nil {
		closeAll(conns)
		return nil, fmt.Errorf("bench: open %d sessions: %w", n, err)
	}
	return conns, nil
}

// closeAll closes every non-nil session, in parallel: go-zookeeper's Close
// waits for the server to confirm, and a thousand of those in a row would
// take seconds.
func closeAll(conns []*zk.Conn) {
	sem := make(chan struct{}, dialParallelism)
	var wg sync.WaitGroup
	for _, c := range conns {
		if c == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c.Close()
		})
	}
	wg.Wait()
}

// ensurePath creates path and any missing parents as persistent znodes.
func ensurePath(conn *zk.Conn, path string) error {
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		_, err := conn.Create(path[:i], nil, 0, openACL)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("bench: create %s: %w", path[:i], err)
		}
	}
	return nil
}
