package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Sharding (Job.Shards): a run of a sharded job is split into items
// 0..N-1. Its master, the coordinator, opens the items (ItemsPath) once
// the run may start — after its upstream runs and its concurrency
// policy — then waits for every item's result and publishes the run's,
// which sums them up (Result.Items). Every scheduler that settles the
// run works on it (work): it registers under workersPath and stands for
// the items assignItems gives it among the registered workers. An item
// is a unit of its own: elected, fenced by its attempts, retried,
// taken over when its master dies and abandoned as a run is.

// MaxShards bounds Job.Shards.
const MaxShards = 256

// maxItemError bounds an item's error in its run's result.
const maxItemError = 512

// shardRecheck is how often a coordinator or a worker looks again
// without a watch event (one lost to a server restart).
const shardRecheck = time.Minute

// itemsDoc is the data of ItemsPath.
type itemsDoc struct {
	Version int `json:"version"`
	Shards  int `json:"shards"`
}

// ItemSummary is one item of a sharded run, in its run's result
// (Result.Items) and, while the run goes on, in RunInfo.Items.
type ItemSummary struct {
	Item int `json:"item"`
	// Status is empty while the item has no result.
	Status Status `json:"status,omitempty"`
	// Running: a master holds the item's binding.
	Running  bool      `json:"running,omitempty"`
	Attempt  int       `json:"attempt,omitempty"`
	Host     string    `json:"host,omitempty"`
	Start    time.Time `json:"start,omitzero"`
	End      time.Time `json:"end,omitzero"`
	ExitCode int       `json:"exitCode,omitempty"`
	Error    string    `json:"error,omitempty"`
	LogFile  string    `json:"logFile,omitempty"`
}

func summarizeItem(i int, r Result) ItemSummary {
	e := r.Error
	if len(e) > maxItemError {
		e = e[:maxItemError] + "…"
	}
	return ItemSummary{Item: i, Status: r.Status, Attempt: r.Attempt, Host: r.Host, Start: r.Start, End: r.End,
		ExitCode: r.ExitCode, Error: e, LogFile: r.LogFile}
}

// assignItems returns the items of n that the spread over workers gives
// to me: item i goes to the (i mod len)-th worker in name order. Nothing
// if me is not among them.
func assignItems(n int, workers []string, me string) []int {
	ws := slices.Sorted(slices.Values(workers))
	at := slices.Index(ws, me)
	if at < 0 {
		return nil
	}
	var out []int
	for i := at; i < n; i += len(ws) {
		out = append(out, i)
	}
	return out
}

// aggregate is the result of a sharded run from its items' results
// (all n of them): succeeded if every item succeeded, replaced if one
// was replaced, else failed, the error naming the items that did not
// succeed. It reads nothing and writes nothing.
func aggregate(base Result, items map[int]Result, n int) Result {
	r := base
	r.Status = Succeeded
	r.Items = make([]ItemSummary, n)
	var bad []string
	for i := range n {
		it := items[i]
		r.Items[i] = summarizeItem(i, it)
		if !it.Start.IsZero() && (r.Start.IsZero() || it.Start.Before(r.Start)) {
			r.Start = it.Start
		}
		if it.End.After(r.End) {
			r.End = it.End
		}
		if it.Status == Succeeded {
			continue
		}
		if len(bad) == 0 {
			r.ExitCode = it.ExitCode
		}
		bad = append(bad, fmt.Sprintf("%d %s", i, it.Status))
		if it.Status == Replaced {
			r.Status = Replaced
		} else if r.Status != Replaced {
			r.Status = Failed
		}
	}
	if len(bad) > 0 {
		shown := bad[:min(len(bad), 20)]
		more := ""
		if len(bad) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(bad)-len(shown))
		}
		r.Error = fmt.Sprintf("%d of %d items did not succeed: %s%s", len(bad), n, strings.Join(shown, ", "), more)
	}
	return r
}

// coordinate is the master of a sharded run once it may start: it bumps
// the run's attempts (a stale coordinator cannot publish), opens the
// items, waits until each has a result and publishes the run's.
func (sc *Scheduler) coordinate(ctx, runCtx context.Context, req runReq, base Result, a attempts, aver int32) (Result, error) {
	s, p, key := sc.sess, req.p, req.key
	u := runUnit(p.Name, key)
	a.Attempts++
	a.Host = sc.host
	aver, err := sc.writeAttempts(runCtx, u, a, aver)
	if err != nil {
		return Result{}, sc.masterErr(runCtx, err)
	}
	if r, ok, err := readResult(runCtx, s, p.Name, key); err != nil || ok {
		sc.resign(ctx, u)
		return r, sc.masterErr(runCtx, err)
	}
	base.Attempt = a.Attempts
	data, _ := json.Marshal(itemsDoc{Version: 1, Shards: p.Shards})
	err = s.Retry(runCtx, func() error {
		_, err := s.Create(runCtx, ItemsPath(p.Name, key), data, zk.FlagPersistent, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil // opened by an earlier coordinator, or our own create
		}
		return err
	})
	if err != nil {
		return Result{}, sc.stopErr(ctx, runCtx, u, err)
	}
	sc.log.Info("items open", "job", p.Name, "run", key, "shards", p.Shards, "coordinator_attempt", a.Attempts)

	got := map[int]Result{}
	armed := map[int]bool{} // a watch waits for the item's result
	fired := make(chan int, p.Shards)
	wctx, cancel := context.WithCancel(runCtx)
	defer cancel()
	for {
		for i := range p.Shards {
			if _, ok := got[i]; ok || armed[i] {
				continue
			}
			iu := unit{job: p.Name, key: key, item: i}
			r, ok, err := readUnitResult(wctx, s, iu)
			if err == nil && !ok {
				var ch <-chan zk.Event
				if ok, _, ch, err = s.Retrying().ExistsW(wctx, iu.resultPath()); err == nil && ok {
					r, ok, err = readUnitResult(wctx, s, iu)
				} else if err == nil {
					armed[i] = true
					go func() {
						select {
						case <-ch:
							fired <- i
						case <-wctx.Done():
						}
					}()
				}
			}
			if err != nil {
				return Result{}, sc.stopErr(ctx, runCtx, u, err)
			}
			if ok {
				got[i] = r
			}
		}
		if len(got) == p.Shards {
			r := aggregate(base, got, p.Shards)
			sc.log.Info("run ended", "job", p.Name, "run", key, "status", r.Status, "items", p.Shards)
			return sc.publish(runCtx, p, u, r, aver)
		}
		t := time.NewTimer(shardRecheck)
		select {
		case i := <-fired:
			armed[i] = false
		case <-t.C:
			// A watch a server restart lost: read the armed ones again.
			for i := range armed {
				if r, ok, err := readUnitResult(wctx, s, unit{job: p.Name, key: key, item: i}); err == nil && ok {
					got[i] = r
				}
			}
		case <-runCtx.Done():
		}
		t.Stop()
		if runCtx.Err() != nil {
			return Result{}, sc.stopErr(ctx, runCtx, u, runCtx.Err())
		}
	}
}

// work is what a scheduler settling a sharded run does besides: until the
// run has a result or ctx ends, it registers as a worker of the run and,
// once the items are open, stands for those the spread gives it
// (settleItem), again whenever the workers change.
func (sc *Scheduler) work(ctx context.Context, req runReq) {
	job, key, n := req.p.Name, req.key, req.p.Shards
	log := sc.log.With("job", job, "run", key)
	// reg is this scheduler's worker node, of this loop alone; the item
	// goroutines read the spread (workers, me) under mu.
	var reg string
	var (
		mu      sync.Mutex
		workers []string
		me      string
	)
	assigned := func(i int) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(assignItems(n, workers, me), i)
	}
	var wg sync.WaitGroup
	running, done := map[int]bool{}, map[int]bool{}
	ended := make(chan int, n)
	defer func() {
		wg.Wait()
		if reg != "" {
			sc.leaveWorkers(context.WithoutCancel(ctx), job, key, reg)
		}
	}()
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx)
		wake := make(chan struct{}, 1)
		forward := func(ch <-chan zk.Event) {
			go func() {
				select {
				case <-ch:
					select {
					case wake <- struct{}{}:
					default:
					}
				case <-wctx.Done():
				}
			}()
		}
		finished, open, names, err := sc.workRound(wctx, job, key, &reg, forward)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("cannot read the run's items or workers; trying again", "err", err)
		case finished:
			cancel()
			return
		case open:
			mu.Lock()
			workers, me = names, reg
			mine := assignItems(n, workers, me)
			mu.Unlock()
			for _, i := range mine {
				if running[i] || done[i] {
					continue
				}
				running[i] = true
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := sc.settleItem(ctx, req, i, assigned)
					if err != nil && ctx.Err() == nil {
						log.Warn("item not settled", "item", i, "err", err)
					}
					if ok {
						i = -1 - i // settled: never again
					}
					ended <- i
				}()
			}
		}
		t := time.NewTimer(shardRecheck)
		if err != nil {
			t.Reset(time.Second)
		}
		select {
		case <-wake:
		case i := <-ended:
			if i < 0 {
				i = -1 - i
				done[i] = true
			}
			running[i] = false
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		cancel()
	}
}

// workRound reads, for work, whether the run has a result (finished),
// registers this scheduler as a worker (under *me, named anew for a new
// session), whether its items are open and the registered workers,
// leaving watches on all of it (forward).
func (sc *Scheduler) workRound(ctx context.Context, job, key string, me *string, forward func(<-chan zk.Event)) (finished, open bool, workers []string, err error) {
	s := sc.sess
	ok, _, ch, err := s.Retrying().ExistsW(ctx, ResultPath(job, key))
	if err != nil || ok {
		return ok, false, nil, err
	}
	forward(ch)
	if err := sc.joinRun(ctx, job, key, me); err != nil {
		return false, false, nil, err
	}
	ok, _, ch, err = s.Retrying().ExistsW(ctx, ItemsPath(job, key))
	if err != nil {
		return false, false, nil, err
	}
	forward(ch)
	if !ok {
		return false, false, nil, nil
	}
	names, _, ch, err := s.Retrying().ChildrenW(ctx, workersPath(job, key))
	if err != nil {
		return false, false, nil, err
	}
	forward(ch)
	return false, true, names, nil
}

// leaveWorkers deletes this scheduler's worker node of a run, so that its
// items go to the others at once rather than when its session ends.
func (sc *Scheduler) leaveWorkers(ctx context.Context, job, key, me string) {
	ctx, cancel := context.WithTimeout(ctx, leaveTimeout)
	defer cancel()
	err := sc.sess.Retry(ctx, func() error {
		err := sc.sess.Delete(ctx, workersPath(job, key)+"/"+me, -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	if err != nil {
		sc.log.Debug("cannot leave the run's workers; the node goes with the session", "job", job, "run", key, "err", err)
	}
}

// settleItem stands for item i of the run while the spread gives it to
// this scheduler (assigned): it elects, executes the item as its master
// (itemMaster) or watches its master, as settle does for a run.
// settled reports that the item has a result.
func (sc *Scheduler) settleItem(ctx context.Context, req runReq, i int, assigned func(int) bool) (settled bool, err error) {
	s := sc.sess
	u := unit{job: req.p.Name, key: req.key, item: i}
	if err := s.Retry(ctx, func() error { return s.EnsurePath(ctx, u.path()) }); err != nil {
		return false, fmt.Errorf("scheduler: %s: %w", u, err)
	}
	for {
		if _, ok, err := readUnitResult(ctx, s, u); err != nil || ok {
			return ok, err
		}
		if !assigned(i) {
			return false, nil // another worker's now
		}
		won, err := sc.elect(ctx, u, req.scheduled)
		if err != nil {
			return false, err
		}
		if won {
			_, err := sc.itemMaster(ctx, req, i)
			if err != nil && !errors.Is(err, ErrNotMaster) && ctx.Err() == nil {
				sc.resign(ctx, u)
			}
			if err == nil || !errors.Is(err, ErrNotMaster) {
				return err == nil, err
			}
			sc.log.Warn("lost the item while master; another scheduler takes over", "job", u.job, "run", u.key, "item", i, "err", err)
			if err := sc.awaitConnected(ctx); err != nil {
				return false, err
			}
			continue
		}
		if err := sc.watchMaster(ctx, u); err != nil {
			return false, err
		}
	}
}

// itemMaster executes item i as its elected master and publishes its
// result: the attempts of a run (runAttempts), the run's start having
// been decided by its coordinator. It returns ErrNotMaster if the
// session ended before the result was published.
func (sc *Scheduler) itemMaster(ctx context.Context, req runReq, i int) (Result, error) {
	s, p, key := sc.sess, req.p, req.key
	u := unit{job: p.Name, key: key, item: i}
	if r, ok, err := readUnitResult(ctx, s, u); err != nil || ok {
		sc.resign(ctx, u)
		return r, err
	}
	runCtx, cancel, end := sc.mastership(ctx)
	defer end()
	a, aver, err := sc.readAttempts(runCtx, u)
	if err != nil {
		return Result{}, sc.masterErr(runCtx, err)
	}
	item := i
	base := Result{Version: 1, Job: p.Name, RunKey: key, Scheduled: req.scheduled, Host: sc.host, Attempt: a.Attempts, Params: req.params, Shard: &item}
	// Never late: the coordinator decided that the run starts.
	v := decideStart(p, true, req.scheduled, sc.now(), false, a)
	if v.takeover {
		sc.metrics.takeovers.WithLabelValues(p.Name).Inc()
	}
	if v.status != "" {
		base.Status, base.Error = v.status, v.err
		return sc.publish(runCtx, p, u, base, aver)
	}
	var upstream map[string]Result
	if req.waits() {
		if upstream, err = sc.upstreamResults(runCtx, p, key); err != nil {
			return Result{}, sc.masterErr(runCtx, err)
		}
	}
	base.Upstream = upstreamStatus(upstream)
	stopWatch := sc.watchCancel(runCtx, cancel, p.Name, key)
	defer stopWatch()
	run := Run{Job: p.Name, RunKey: key, Scheduled: req.scheduled, Upstream: upstream, Params: req.params, Shard: i, Shards: p.Shards}
	return sc.runAttempts(ctx, runCtx, p, u, base, run, a, aver)
}

// readItems reads the items of a sharded run that has no result yet:
// nil if its items are not open (or it is not sharded).
func readItems(ctx context.Context, s *recipe.Session, job, key string) ([]ItemSummary, error) {
	data, _, err := s.Retrying().Get(ctx, ItemsPath(job, key))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d itemsDoc
	if err := json.Unmarshal(data, &d); err != nil || d.Shards < 0 || d.Shards > MaxShards {
		return nil, fmt.Errorf("scheduler: items of %s/%s: %q does not say how many", job, key, data)
	}
	out := make([]ItemSummary, d.Shards)
	for i := range d.Shards {
		u := unit{job: job, key: key, item: i}
		r, ok, err := readUnitResult(ctx, s, u)
		if err != nil {
			return nil, err
		}
		out[i] = ItemSummary{Item: i}
		if ok {
			out[i] = summarizeItem(i, r)
			continue
		}
		if err := s.Retry(ctx, func() (err error) {
			out[i].Running, _, err = s.Exists(ctx, u.bindingPath())
			return err
		}); err != nil {
			return nil, err
		}
		if out[i].Running {
			if a, _, err := loadAttempts(ctx, s, u); err == nil {
				out[i].Attempt, out[i].Host = a.Attempts, a.Host
			}
		}
	}
	return out, nil
}
