package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Target is a server under test.
type Target interface {
	// Name identifies the target in tables and logs.
	Name() string
	// Start launches the server on an empty data directory and returns
	// once it serves requests.
	Start(ctx context.Context) error
	// Addr is the client address, valid after Start.
	Addr() string
	// PID is the server's process id, valid after Start; 0 if unknown.
	PID() int
	// Restart kills the server (SIGKILL: no chance to flush anything),
	// starts it again on the same data and address, and returns once it
	// serves requests.
	Restart(ctx context.Context) error
	// Stop terminates the server and waits for it to exit.
	Stop() error
}

const (
	// startTimeout bounds a server's start, including loading its data.
	startTimeout = 5 * time.Minute
	// probeInterval is how often readiness is polled; it is the
	// resolution of restart-to-ready times.
	probeInterval = 10 * time.Millisecond
	// probeSessionTimeout bounds one readiness probe's session handshake.
	probeSessionTimeout = 2 * time.Second
)

// awaitReadable polls addr until a fresh session can read path, or
// timeout passes. It is the readiness test of every target, with path
// "/", and how tree200k decides a restarted server is back.
func awaitReadable(ctx context.Context, addr, path string, timeout time.Duration, log *slog.Logger) error {
	return pollReadable(ctx, addr, path, timeout, log, func() error { return nil })
}

// pollReadable is awaitReadable with a check run before every probe, so
// that a caller can stop waiting for a server process that has exited.
func pollReadable(ctx context.Context, addr, path string, timeout time.Duration, log *slog.Logger, alive func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A failed probe's Close waits up to a second for a server that is
	// not answering; do those in the background so that they do not set
	// the polling pace, and wait for them before returning.
	var closing sync.WaitGroup
	defer closing.Wait()
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	var last error
	for {
		if err := alive(); err != nil {
			return err
		}
		if last = probe(ctx, addr, path, log, &closing); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: %s not readable at %s within %v: %w", path, addr, timeout, last)
		case <-tick.C:
		}
	}
}

// probe makes one attempt: TCP connect, session, getData path.
func probe(ctx context.Context, addr, path string, log *slog.Logger, closing *sync.WaitGroup) error {
	// Dial first: go-zookeeper retries a refused connection only after a
	// one-second back-off, far coarser than probeInterval.
	d := net.Dialer{Timeout: probeSessionTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	nc.Close()
	conn, events, err := zkConnect(addr, log)
	if err != nil {
		return err
	}
	defer closing.Go(conn.Close)
	if err := awaitSession(ctx, events, probeSessionTimeout); err != nil {
		return err
	}
	_, _, err = conn.Get(path)
	return err
}
