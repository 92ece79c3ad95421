package bench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

const (
	// treeFanout is how many leaves share one parent in tree200k: deep
	// enough to keep child lists small, shallow enough that leaves
	// dominate.
	treeFanout = 1000
	// treeTimeFactor × Options.Duration bounds tree200k's create phase.
	treeTimeFactor = 60
	// readyTimeout bounds the wait for a restarted server to serve the
	// last node.
	readyTimeout = 5 * time.Minute
)

// runTree creates Ops znodes (default 200 000) in parents of treeFanout,
// reports the server's RSS holding them, then, if Options.Target is set,
// kills the server, starts it again on the same data and measures the
// time until a getData of the last znode succeeds. Result.Ops counts the
// creates; "restart" is the restart-to-ready time.
func runTree(ctx context.Context, e *env) (Result, error) {
	n := e.o.Ops
	if n == 0 {
		n = DefaultTreeNodes
	}
	parent := func(i int) string { return fmt.Sprintf("%s/d%04d", e.root, i) }
	leaf := func(i int) string { return fmt.Sprintf("%s/n%04d", parent(i/treeFanout), i%treeFanout) }
	if err := e.createAll(ctx, "creating parents", (n+treeFanout-1)/treeFanout, parent); err != nil {
		return Result{}, err
	}
	timeout := treeTimeFactor * e.o.Duration
	res, err := closedLoop(ctx, e, "creating znodes", true, n, timeout, func(w *worker) error {
		_, err := w.conn.Create(leaf(int(w.seq-1)), e.value, 0, openACL)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	if res.Ops != n {
		return Result{}, fmt.Errorf("bench: %s: created %d of %d znodes within %v", e.name, res.Ops, n, timeout)
	}
	res.Extra["znodes"] = fmt.Sprint(n)
	if e.o.Target == nil {
		return res, nil
	}
	took, err := e.restartToReady(ctx, leaf(n-1))
	if errors.Is(err, ErrRestartUnsupported) && e.conns != nil {
		return res, nil
	}
	if err != nil {
		return Result{}, err
	}
	res.Extra["restart"] = took.Round(time.Millisecond).String()
	if pid := e.o.Target.PID(); pid != 0 {
		if rss, err := ProcessRSS(pid); err == nil {
			res.Extra["rss-after-restart"] = formatBytes(rss)
		}
	}
	return res, nil
}

// restartToReady restarts the target and returns the time from the kill
// until path can be read. The run's sessions are closed first, so the
// server's work on restart is replaying data, not reconnecting clients;
// they are opened again afterwards, whatever happened, for cleanup.
func (e *env) restartToReady(ctx context.Context, path string) (time.Duration, error) {
	closeAll(e.conns)
	e.conns = nil
	e.log.Info("bench: restarting server", "target", e.o.Target.Name())
	start := time.Now()
	err := e.o.Target.Restart(ctx)
	if err == nil {
		err = awaitReadable(ctx, e.o.Target.Addr(), path, readyTimeout, e.log)
	}
	took := time.Since(start)
	e.o.PID = e.o.Target.PID() // later phases meter the new process
	if err != nil && !errors.Is(err, ErrRestartUnsupported) {
		err = fmt.Errorf("bench: %s: restart %s: %w", e.name, e.o.Target.Name(), err)
	}
	conns, cerr := connectAll(ctx, e.o.Target.Addr(), e.o.Clients, e.log)
	e.conns = conns
	if cerr != nil {
		return 0, errors.Join(err, cerr)
	}
	return took, err
}
