package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// benchRoot is the znode under which every run creates its own subtree,
// so that a run against a shared server touches nothing else.
const benchRoot = "/shepherd-bench"

// Workload is one named load pattern.
type Workload struct {
	// Name is how the workload is selected (Run, --workloads).
	Name string
	// Description says what the load is, in one line.
	Description string
	// Unit is what Result.Ops counts.
	Unit string
	// Latency is what Result.P50 and P99 measure.
	Latency string

	run func(ctx context.Context, e *env) (Result, error)
}

// Workloads returns every workload in the order Compare runs them.
func Workloads() []Workload {
	return []Workload{
		{"create", "create persistent znodes", "create", "one create", runCreate},
		{"set", "setData on 1024 existing znodes, unconditionally", "setData", "one setData", runSet},
		{"get", "getData of 1024 existing znodes", "getData", "one getData", runGet},
		{"exists", "exists on 1024 existing znodes", "exists", "one exists", runExists},
		{"mixed", "90% getData / 10% setData on 1024 znodes", "request", "one request", runMixed},
		{"ephemeral-seq", "create an ephemeral-sequential znode, then delete it", "create+delete", "create and delete", runEphemeralSeq},
		{"multi", "3-op multi: create a child, setData its parent, delete the child", "multi", "one multi", runMulti},
		{"watch-fanout", "Watchers sessions (1000 by default) watch one znode; it is set once; repeat",
			"notification", "set until every watcher is notified", runWatchFanout},
		{"lock", "Clients contenders take and release a herd-free lock (ephemeral-sequential, watch the predecessor)",
			"acquire+release", "hand-off, release until the next holder knows it holds", runLock},
		{"session-churn", "open a session, wait until established, close it", "session", "connect and close", runSessionChurn},
		{"tree200k", "create 200k znodes (Ops); RSS holding them; SIGKILL, start, time until the last reads back",
			"create", "one create", runTree},
	}
}

// WorkloadNames returns the names of Workloads(), in order.
func WorkloadNames() []string {
	ws := Workloads()
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = w.Name
	}
	return names
}

// LookupWorkload returns the workload called name.
func LookupWorkload(name string) (Workload, error) {
	for _, w := range Workloads() {
		if w.Name == name {
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownWorkload, name, strings.Join(WorkloadNames(), ", "))
}

// env is what a workload body gets: its options with defaults applied, a
// private root znode, the value to write and Options.Clients sessions.
type env struct {
	o     Options
	log   *slog.Logger
	name  string
	root  string
	value []byte
	conns []*zk.Conn
}

// Run runs workload name against the server at o.Addr and returns what it
// measured. The workload works below its own znode under /shepherd-bench,
// which it deletes afterwards unless o.KeepData is set.
func Run(ctx context.Context, name string, o Options) (Result, error) {
	w, err := LookupWorkload(name)
	if err != nil {
		return Result{}, err
	}
	if o.Addr == "" {
		return Result{}, ErrNoAddr
	}
	if o, err = o.withDefaults(); err != nil {
		return Result{}, err
	}
	e := &env{
		o:     o,
		log:   o.Logger.With("workload", name, "addr", o.Addr),
		name:  name,
		root:  fmt.Sprintf("%s/%s-%d", benchRoot, name, time.Now().UnixNano()),
		value: makeValue(o.ValueBytes),
	}
	if e.conns, err = connectAll(ctx, o.Addr, o.Clients, e.log); err != nil {
		return Result{}, err
	}
	defer func() { closeAll(e.conns) }() // tree200k replaces e.conns after a restart
	if err := ensurePath(e.conns[0], e.root); err != nil {
		return Result{}, err
	}
	e.log.Info("bench: workload starting", "clients", o.Clients, "inflight", o.InFlight, "duration", o.Duration)
	res, err := w.run(ctx, e)
	if !o.KeepData {
		// Clean up after failures too; a cleanup error only matters when
		// the run itself succeeded.
		err = errors.Join(err, e.cleanup(ctx))
	}
	if err != nil {
		return Result{}, err
	}
	e.log.Info("bench: workload finished", "ops", res.Ops, "ops_per_sec", fmt.Sprintf("%.0f", res.OpsPerSec),
		"p50", res.P50, "p99", res.P99, "cpu_per_op", res.CPUPerOp, "rss", res.RSSBytes)
	return res, nil
}

// makeValue returns n bytes of printable, deterministic data.
func makeValue(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// setupTimeout bounds each setup and cleanup phase; they are sized in
// thousands of requests and take well under a second on any server that
// can be benchmarked at all.
const setupTimeout = 2 * time.Minute

// setupBatch is how many creates or deletes setup and cleanup pack into
// one multi: the phases are not measured, and a transaction per znode
// would make them the slowest part of a short run.
const setupBatch = 100

// forBatches runs op on the index ranges [lo, hi) that split [0, n) into
// setupBatch-sized pieces, pipelined like a measured loop, and fails
// unless every piece was done.
func (e *env) forBatches(ctx context.Context, phase string, n int, op func(w *worker, lo, hi int) error) error {
	batches := (n + setupBatch - 1) / setupBatch
	res, err := closedLoop(ctx, e, phase, false, batches, setupTimeout, func(w *worker) error {
		lo := int(w.seq-1) * setupBatch
		return op(w, lo, min(n, lo+setupBatch))
	})
	if err != nil {
		return err
	}
	if res.Ops != batches {
		return fmt.Errorf("bench: %s: %s: did %d of %d batches within %v", e.name, phase, res.Ops, batches, setupTimeout)
	}
	return nil
}

// createAll creates the n znodes path(0) … path(n-1) with e.value.
func (e *env) createAll(ctx context.Context, phase string, n int, path func(i int) string) error {
	return e.forBatches(ctx, phase, n, func(w *worker, lo, hi int) error {
		ops := make([]any, 0, hi-lo)
		for i := lo; i < hi; i++ {
			ops = append(ops, &zk.CreateRequest{Path: path(i), Data: e.value, Acl: openACL})
		}
		_, err := w.conn.Multi(ops...)
		return err
	})
}
