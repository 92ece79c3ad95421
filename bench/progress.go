package bench

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// progressEvery is how often long phases report how far they have got.
const progressEvery = 2 * time.Second

// progress reports a long phase's advance to the log at most every
// progressEvery. It is safe for concurrent use.
type progress struct {
	log   *slog.Logger
	what  string
	total int // 0 when unknown
	start time.Time
	n     atomic.Int64

	mu   sync.Mutex
	last time.Time
}

func newProgress(log *slog.Logger, what string, total int) *progress {
	now := time.Now()
	return &progress{log: log, what: what, total: total, start: now, last: now}
}

// add counts n more units and logs if the last line is old enough.
func (p *progress) add(n int) {
	done := p.n.Add(int64(n))
	if !p.mu.TryLock() {
		return // someone else is checking; one line per interval is enough
	}
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.last) < progressEvery {
		return
	}
	p.last = now
	p.log.Info("bench: "+p.what, p.attrs(done, now.Sub(p.start))...)
}

// attrs are the fields of a progress line; a phase bounded by time alone
// has no total worth printing.
func (p *progress) attrs(done int64, elapsed time.Duration) []any {
	a := []any{"done", done}
	if p.total > 0 {
		a = append(a, "total", p.total)
	}
	return append(a, "elapsed", elapsed.Round(time.Millisecond))
}

// done logs the final count if the phase was long enough to have
// reported progress at all, so short phases stay quiet.
func (p *progress) done() {
	if elapsed := time.Since(p.start); elapsed >= progressEvery {
		p.log.Info("bench: "+p.what+" finished", p.attrs(p.n.Load(), elapsed)...)
	}
}
