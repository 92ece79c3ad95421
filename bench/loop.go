package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// maxLoopOps bounds every measured loop in count even when Options.Ops is
// zero; at the rates a single server reaches it is never the binding
// limit within Options.Duration.
const maxLoopOps = 50_000_000

// worker is one closed-loop request issuer: a goroutine with its own
// session share, random source and latency recorder.
type worker struct {
	id   int
	conn *zk.Conn
	rng  *rand.Rand
	seq  int64 // number of the operation being issued, from 1, unique across workers
	rec  *recorder
}

// closedLoop runs op from Clients×InFlight workers, each issuing its next
// request as soon as the previous one returns, until timeout passes, limit
// operations were issued (limit ≤ 0 means maxLoopOps), or one fails.
// Workers share e.conns round-robin, so each session carries InFlight
// outstanding requests. It measures the phase and returns the Result, in
// which Ops tells callers that need every operation done whether the time
// ran out first. The first operation error aborts the loop and is
// returned. A measured loop (measured is true) is framed by
// e.startMeasured and e.stopMeasured; setup loops are not.
func closedLoop(parent context.Context, e *env, phase string, measured bool, limit int, timeout time.Duration, op func(w *worker) error) (Result, error) {
	total := limit // for progress lines; 0 reads as "bounded by time"
	if limit <= 0 || limit > maxLoopOps {
		limit, total = maxLoopOps, 0
	}
	n := e.o.Clients * e.o.InFlight
	workers := make([]*worker, n)
	recs := make([]*recorder, n)
	for i := range workers {
		recs[i] = newRecorder(uint64(i))
		workers[i] = &worker{
			id:   i,
			conn: e.conns[i%len(e.conns)],
			rng:  rand.New(rand.NewPCG(uint64(i), 0xbe7c4)),
			rec:  recs[i],
		}
	}
	return e.metered(parent, phase, measured, timeout, func(ctx context.Context) (int, []*recorder, error) {
		var issued, done atomic.Int64
		p := newProgress(e.log, phase, total)
		err := runAll(ctx, len(workers), func(ctx context.Context, i int) error {
			w := workers[i]
			for ctx.Err() == nil {
				w.seq = issued.Add(1)
				if w.seq > int64(limit) {
					return nil
				}
				start := time.Now()
				if err := op(w); err != nil {
					return fmt.Errorf("operation %d: %w", w.seq, err)
				}
				w.rec.since(start)
				done.Add(1)
				p.add(1)
			}
			return nil
		})
		return int(done.Load()), recs, err
	})
}

// runAll runs body for workers 0 … n-1, each on its own goroutine, until
// all return. The first error cancels the others' context and is
// returned.
func runAll(ctx context.Context, n int, body func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		once     sync.Once
		firstErr error
		wg       sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			if err := body(ctx, i); err != nil {
				once.Do(func() { firstErr = err })
				cancel()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// metered runs loop between the start and the stop of a meter of the
// server (a measured phase is also framed by e.startMeasured and
// e.stopMeasured, the harness's barrier) with a context that ends after
// timeout, the clock starting once the meter has. loop returns the
// operations it completed, their latencies and the first operation error,
// which fails the phase.
func (e *env) metered(parent context.Context, phase string, measured bool, timeout time.Duration,
	loop func(ctx context.Context) (ops int, recs []*recorder, err error)) (Result, error) {
	start := func(context.Context) (*meter, error) { return startMeter(e.o.PID) }
	stop := (*meter).stop
	if measured {
		start, stop = e.startMeasured, e.stopMeasured
	}
	m, err := start(parent)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	ops, recs, loopErr := loop(ctx)
	if err := stop(m); err != nil {
		return Result{}, err
	}
	if loopErr != nil {
		return Result{}, fmt.Errorf("bench: %s: %s: %w", e.name, phase, loopErr)
	}
	if err := parent.Err(); err != nil {
		return Result{}, fmt.Errorf("bench: %s: %s: %w", e.name, phase, err)
	}
	return m.result(e.name, ops, mergeRecorders(recs...)), nil
}
