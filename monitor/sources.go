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
//   - at most sourceReaders sources are read at once, each for at most
//     sourceTimeout;
//   - no reading starts once the evaluation's reading budget is spent
//     (readBudget); those tasks' sources count as not read this time;
//   - a source whose reading failed is not read again before its backoff
//     ends (the failed reading stands in until then);
//   - a stopped task's source is read every stoppedReadEvery intervals
//     (5 minutes at the default interval): only the binary-log rules look
//     at it, and binary logs expire over hours or days.
const (
	sourceTimeout    = 5 * time.Second
	sourceReaders    = 16
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
}

func newSourceMemory(interval time.Duration) *sourceMemory {
	return &sourceMemory{interval: interval, timeout: sourceTimeout, budget: readBudget(interval), stoppedAge: stoppedReadEvery * interval,
		failed: map[sourceAccount]sourceFailure{}, stopped: map[string]SourceReading{}}
}

// backoff is how long a source that failed n times in a row waits before
// it is read again: the interval, doubled per failure, up to
// maxSourceBackoff.
func (sm *sourceMemory) backoff(n int) time.Duration {
	d := sm.interval
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
	read := func(ep core.Endpoint, pw string) SourceReading {
		k := sourceAccount{ep.Host, ep.Port, ep.User, pw}
		mu.Lock()
		f, ok := reads[k]
		if !ok {
			f = sync.OnceValue(func() SourceReading { return m.readAccount(ctx, k, ep, pw, now) })
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
			f = sync.OnceValue(func() replication.SourceHealth {
				ctx, cancel := context.WithTimeout(ctx, sm.timeout)
				defer cancel()
				return m.deps.ProbeSource(ctx, ep, pw)
			})
			probed[k] = f
		}
		mu.Unlock()
		return f()
	}
	deadline := time.Now().Add(sm.budget)
	var wg sync.WaitGroup
	sem := make(chan struct{}, sourceReaders)
	layout := m.admin.Layout()
	stoppedNow := map[string]bool{}
	for _, ts := range snap.Tasks {
		if ts.Spec == nil {
			continue
		}
		running := desiredRunning(ts)
		if !running {
			stoppedNow[ts.Name] = true
			sm.mu.Lock()
			last, ok := sm.stopped[ts.Name]
			sm.mu.Unlock()
			if ok && now.Sub(last.At) < sm.stoppedAge && !now.Before(last.At) {
				mu.Lock()
				out[ts.Name] = last
				mu.Unlock()
				m.metrics.sourceRead("cached")
				continue
			}
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if !time.Now().Before(deadline) {
				m.metrics.sourceRead("budget")
				mu.Lock()
				out[ts.Name] = SourceReading{At: now, Err: errBudgetSpent.Error()}
				mu.Unlock()
				return
			}
			r, cands, ok := m.readSource(ctx, layout, ts.Name, ts.LastCommit, now, running, read, probe)
			if !ok {
				return
			}
			if !running {
				sm.mu.Lock()
				sm.stopped[ts.Name] = r
				sm.mu.Unlock()
			}
			mu.Lock()
			out[ts.Name] = r
			if cands != nil {
				probes[ts.Name] = cands
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	sm.mu.Lock()
	for task := range sm.stopped {
		if !stoppedNow[task] {
			delete(sm.stopped, task) // removed, or running again: read afresh once stopped
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

// readSource reads one task's source (and probes its candidates, when
// running): it reports false when the task is not to be read.
func (m *Monitor) readSource(ctx context.Context, layout core.Layout, task string, lc *core.LastCommit, now time.Time, running bool,
	read func(core.Endpoint, string) SourceReading, probe func(core.Endpoint, string) replication.SourceHealth) (SourceReading, []replication.SourceHealth, bool) {
	if err := m.deps.Session.CheckTrusted(ctx, layout.Root, layout.Task(task)); err != nil {
		m.log.Warn("monitor: not reading the source of an untrusted task", "task", task, "error", err)
		return SourceReading{}, nil, false
	}
	// The spec alone: the snapshot has the task's checkpoint and instances.
	sp, _, err := m.admin.TaskVersion(ctx, task)
	if err != nil {
		if !errors.Is(err, core.ErrNoTask) { // (a task removed since the snapshot is no news)
			m.log.Warn("monitor: source not read: the task's spec is not readable", "task", task, "error", err)
		}
		return SourceReading{}, nil, false
	}
	// The server the task reads now: after a failover, not the primary.
	var last core.LastCommit
	if lc != nil {
		last = *lc
	}
	src := sp.ActiveSource(last)
	pw, err := src.ResolvePassword(ctx)
	if err != nil {
		return SourceReading{At: now, Err: fmt.Sprintf("task %s: source %v", task, err)}, nil, true
	}
	r := read(src, pw)
	if r.Err != "" {
		m.log.Warn("monitor: source not read", "task", task, "error", r.Err)
	}
	var cands []replication.SourceHealth
	if running && len(sp.Source.Hosts) > 0 {
		cands = []replication.SourceHealth{} // probed: none may be up
		for _, e := range sp.Source.Candidates() {
			if e.Addr() != src.Addr() {
				cands = append(cands, probe(e, pw))
			}
		}
	}
	return r, cands, true
}
