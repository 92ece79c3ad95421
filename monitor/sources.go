package monitor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/replication"
)

// The readings of the tasks' sources are what an evaluation spends its
// time on: every other input is the snapshot. They are bounded so that an
// evaluation ends within its interval even when many sources hang:
//   - tasks of one source account share one reading, and one probe per
//     source candidate;
//   - at most sourceReaders sources are read (or probed) at once, each for
//     at most sourceTimeout;
//   - no reading starts once the evaluation's reading budget is spent
//     (readBudget); those tasks' sources count as not read this time;
//   - a source whose reading failed is not read again before its backoff
//     ends (the failed reading stands in until then), and the tasks whose
//     source answered last time are read before the others;
//   - a stopped task's source is read every stoppedReadEvery intervals
//     (5 minutes at the default interval): only the binary-log rules look
//     at it, and binary logs expire over hours or days.
const (
	sourceTimeout    = 5 * time.Second
	sourceReaders    = 32
	taskReaders      = 16 // tasks whose spec is read from the coordination service at once
	stoppedReadEvery = 20
	maxSourceBackoff = 5 * time.Minute
)

// readBudget is how long an evaluation may start source readings: the
// interval less one reading's timeout and a second for the rules and the
// state write, so that the evaluation ends within its interval. Short
// intervals (tests) get at least 2 s, and the evaluation then outlasts its
// interval rather than reading nothing.
func readBudget(interval time.Duration) time.Duration {
	return max(interval-sourceTimeout-time.Second, interval/2, 2*time.Second)
}

// sourceAccount is what one reading of a source is shared by: its
// address and the account it is read as.
type sourceAccount struct {
	host           string
	port           int
	user, password string
}

// sourceFailure is a source whose last reading failed.
type sourceFailure struct {
	reading  SourceReading
	failures int       // in a row
	retryAt  time.Time // no reading before
}

// sourceMemory is what the active monitor remembers of source readings
// between evaluations. It is in memory only: a monitor taking over reads
// every source at its first evaluation. Its maps are guarded by mu, as
// the readings of one evaluation run concurrently.
type sourceMemory struct {
	interval time.Duration // the monitor's: the first backoff
	timeout  time.Duration // of one reading; sourceTimeout
	budget   time.Duration // readBudget(interval)
	// stoppedAge is how old a stopped task's reading may be before it
	// is read again: stoppedReadEvery intervals.
	stoppedAge time.Duration

	mu      sync.Mutex
	failed  map[sourceAccount]sourceFailure
	stopped map[string]SourceReading // by task: its last reading
	good    map[string]bool          // by task: its last reading succeeded
}

func newSourceMemory(interval time.Duration) *sourceMemory {
	return &sourceMemory{interval: interval, timeout: sourceTimeout, budget: readBudget(interval), stoppedAge: stoppedReadEvery * interval,
		failed: map[sourceAccount]sourceFailure{}, stopped: map[string]SourceReading{}, good: map[string]bool{}}
}

// backoff is how long a source that failed n times in a row waits before
// it is read again: two intervals (so that the next evaluation skips it),
// doubled per further failure, up to maxSourceBackoff.
func (sm *sourceMemory) backoff(n int) time.Duration {
	d := 2 * sm.interval
	for i := 1; i < n && d < maxSourceBackoff; i++ {
		d *= 2
	}
	return min(d, maxSourceBackoff)
}

// errBudgetSpent is the reading of a source not read because the
// evaluation's budget for readings ran out.
var errBudgetSpent = errors.New("not read in this evaluation: its time for source readings ran out (many sources hanging?); read at a later one")

// readSources reads the source of every task whose spec this monitor may
// act on, within the bounds above: the spec (with its credentials) is
// read unredacted and used only if no session without the monitor's
// identity could have written it. The source candidates of running tasks
// that have them are probed too.
func (m *Monitor) readSources(ctx context.Context, snap *cluster.Snapshot, now time.Time) (map[string]SourceReading, map[string][]replication.SourceHealth) {
	sm := m.sources
	out := map[string]SourceReading{}
	probes := map[string][]replication.SourceHealth{}
	var mu sync.Mutex // guards out, probes, reads and probed
	reads := map[sourceAccount]func() SourceReading{}
	probed := map[sourceAccount]func() replication.SourceHealth{}
	// Readings are bounded by slots of their own: the tasks of one
	// account wait on its one reading without holding one.
	deadline := time.Now().Add(sm.budget)
	slots := make(chan struct{}, sourceReaders)
	bounded := func(do func()) bool {
		slots <- struct{}{}
		defer func() { <-slots }()
		if !time.Now().Before(deadline) {
			m.metrics.sourceRead("budget")
			return false
		}
		do()
		return true
	}
	read := func(ep core.Endpoint, pw string) SourceReading {
		k := sourceAccount{ep.Host, ep.Port, ep.User, pw}
		mu.Lock()
		f, ok := reads[k]
		if !ok {
			f = sync.OnceValue(func() (r SourceReading) {
				if !bounded(func() { r = m.readAccount(ctx, k, ep, pw, now) }) {
					r = SourceReading{At: now, Err: errBudgetSpent.Error()}
				}
				return r
			})
			reads[k] = f
		}
		mu.Unlock()
		return f()
	}
	probe := func(ep core.Endpoint, pw string) replication.SourceHealth {
		k := sourceAccount{ep.Host, ep.Port, ep.User, pw}
		mu.Lock()
		f, ok := probed[k]
		if !ok {
			f = sync.OnceValue(func() (h replication.SourceHealth) {
				if !bounded(func() {
					ctx, cancel := context.WithTimeout(ctx, sm.timeout)
					defer cancel()
					h = m.deps.ProbeSource(ctx, ep, pw)
				}) {
					h = replication.SourceHealth{Addr: ep.Addr(), Err: errBudgetSpent}
				}
				return h
			})
			probed[k] = f
		}
		mu.Unlock()
		return f()
	}
	layout := m.admin.Layout()
	stoppedNow := map[string]bool{}
	readAll := func(tasks []core.TaskStatus) {
		var wg sync.WaitGroup
		sem := make(chan struct{}, taskReaders)
		for _, ts := range tasks {
			running := desiredRunning(ts)
			wg.Go(func() {
				// The spec is read in a slot of its own; the source is
				// read outside it (in a reading slot), so that tasks of a
				// source that hangs do not hold up the others' specs.
				sem <- struct{}{}
				src, ok := m.sourceOf(ctx, layout, ts.Name, ts.LastCommit)
				<-sem
				if !ok {
					return
				}
				r := SourceReading{At: now, Err: src.err}
				if src.err == "" {
					r = read(src.ep, src.pw)
				}
				if r.Err != "" {
					m.log.Warn("monitor: source not read", "task", ts.Name, "error", r.Err)
				}
				var cands []replication.SourceHealth
				if running && src.err == "" && src.candidates != nil {
					cands = []replication.SourceHealth{}
					for _, e := range src.candidates {
						cands = append(cands, probe(e, src.pw))
					}
				}
				sm.mu.Lock()
				if !running {
					sm.stopped[ts.Name] = r
				}
				if r.Err == "" {
					sm.good[ts.Name] = true
				} else {
					delete(sm.good, ts.Name)
				}
				sm.mu.Unlock()
				mu.Lock()
				out[ts.Name] = r
				if cands != nil {
					probes[ts.Name] = cands
				}
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	// The tasks whose source was read last time first, then the others
	// (new, or failing): sources that hang then cannot take the slots and
	// the budget of the ones that answer.
	var good, rest []core.TaskStatus
	for _, ts := range snap.Tasks {
		if ts.Spec == nil {
			continue
		}
		if !desiredRunning(ts) {
			stoppedNow[ts.Name] = true
			sm.mu.Lock()
			last, ok := sm.stopped[ts.Name]
			sm.mu.Unlock()
			if ok && now.Sub(last.At) < sm.stoppedAge && !now.Before(last.At) {
				out[ts.Name] = last
				m.metrics.sourceRead("cached")
				continue
			}
		}
		sm.mu.Lock()
		wasGood := sm.good[ts.Name]
		sm.mu.Unlock()
		if wasGood {
			good = append(good, ts)
		} else {
			rest = append(rest, ts)
		}
	}
	readAll(good)
	readAll(rest)
	sm.mu.Lock()
	for task := range sm.stopped {
		if !stoppedNow[task] {
			delete(sm.stopped, task) // removed, or running again: read afresh once stopped
		}
	}
	for task := range sm.good {
		if _, ok := out[task]; !ok {
			delete(sm.good, task) // removed
		}
	}
	sm.mu.Unlock()
	return out, probes
}

// readAccount reads a source as one account, unless it failed and its
// backoff has not ended: then the failed reading stands.
func (m *Monitor) readAccount(ctx context.Context, k sourceAccount, ep core.Endpoint, pw string, now time.Time) SourceReading {
	sm := m.sources
	sm.mu.Lock()
	f, failed := sm.failed[k]
	sm.mu.Unlock()
	if failed && now.Before(f.retryAt) {
		m.metrics.sourceRead("backoff")
		r := f.reading
		r.Err = fmt.Sprintf("%s (read again after %s)", f.reading.Err, f.retryAt.Format(time.TimeOnly))
		return r
	}
	rctx, cancel := context.WithTimeout(ctx, sm.timeout)
	defer cancel()
	r := m.deps.ReadSource(rctx, ep, pw, now)
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if r.Err == "" {
		m.metrics.sourceRead("ok")
		delete(sm.failed, k)
		return r
	}
	m.metrics.sourceRead("error")
	n := f.failures + 1
	sm.failed[k] = sourceFailure{reading: r, failures: n, retryAt: now.Add(sm.backoff(n))}
	return r
}

// taskSource is what reading a task's source needs from its spec.
type taskSource struct {
	ep         core.Endpoint // the server the task reads now
	pw         string
	candidates []core.Endpoint // the other candidates, when it has some
	err        string          // why the source cannot be read
}

// sourceOf reads a task's spec for its source: false when the task is not
// to be read (untrusted, or gone).
func (m *Monitor) sourceOf(ctx context.Context, layout core.Layout, task string, lc *core.LastCommit) (taskSource, bool) {
	if err := m.deps.Session.CheckTrusted(ctx, layout.Root, layout.Task(task)); err != nil {
		m.log.Warn("monitor: not reading the source of an untrusted task", "task", task, "error", err)
		return taskSource{}, false
	}
	// The spec alone: the snapshot has the task's checkpoint and instances.
	sp, _, err := m.admin.TaskVersion(ctx, task)
	if err != nil {
		if !errors.Is(err, core.ErrNoTask) { // (a task removed since the snapshot is no news)
			m.log.Warn("monitor: source not read: the task's spec is not readable", "task", task, "error", err)
		}
		return taskSource{}, false
	}
	// The server the task reads now: after a failover, not the primary.
	var last core.LastCommit
	if lc != nil {
		last = *lc
	}
	src := taskSource{ep: sp.ActiveSource(last)}
	if src.pw, err = src.ep.ResolvePassword(ctx); err != nil {
		src.err = fmt.Sprintf("task %s: source %v", task, err)
		return src, true
	}
	if len(sp.Source.Hosts) > 0 {
		src.candidates = []core.Endpoint{} // probed: none may be up
		for _, e := range sp.Source.Candidates() {
			if e.Addr() != src.ep.Addr() {
				src.candidates = append(src.candidates, e)
			}
		}
	}
	return src, true
}
