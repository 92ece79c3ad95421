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
	for i := range workers {
		workers[i] = &worker{
			id:   i,
			conn: e.conns[i%len(e.conns)],
			rng:  rand.New(rand.NewPCG(uint64(i), 0xbe7c4)),
			rec:  newRecorder(uint64(i)),
		}
	}
	var (
		issued, done atomic.Int64
		errOnce      sync.Once
		firstErr     error
		wg           sync.WaitGroup
	)
	start := func(context.Context) (*meter, error) { return startMeter(e.o.PID) }
	if measured {
		start = e.startMeasured
	}
	m, err := start(parent)
	if err != nil {
		return Result{}, err
	}
	// The clock starts once the meter has: a measured loop may have
	// waited for the harness's signal.
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	p := newProgress(e.log, phase, total)
	for _, w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				w.seq = issued.Add(1)
				if w.seq > int64(limit) {
					return
				}
				start := time.Now()
				if err := op(w); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("bench: %s: %s: operation %d: %w", e.name, phase, w.seq, err) })
					cancel()
					return
				}
				w.rec.since(start)
				done.Add(1)
				p.add(1)
			}
		})
	}
	wg.Wait()
	stop := (*meter).stop
	if measured {
		stop = e.stopMeasured
	}
	if err := stop(m); err != nil {
		return Result{}, err
	}
	if firstErr != nil {
		return Result{}, firstErr
	}
	if err := parent.Err(); err != nil {
		return Result{}, fmt.Errorf("bench: %s: %s: %w", e.name, phase, err)
	}
	recs := make([]*recorder, n)
	for i, w := range workers {
		recs[i] = w.rec
	}
	return m.result(e.name, int(done.Load()), mergeRecorders(recs...)), nil
}
