package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Feed hands out the newest snapshot and tells subscribers of new ones.
type Feed interface {
	// Latest is the newest snapshot; nil before the first read.
	Latest() *Snapshot
	// Subscribe returns a channel that receives each new snapshot, and
	// the newest at once if there is one. It is buffered 1 and the
	// newest wins: a slow reader skips snapshots, never blocks the
	// feed. cancel closes the channel.
	Subscribe() (ch <-chan *Snapshot, cancel func())
}

// feed is the Feed part of Poller and Fixed.
type feed struct {
	mu     sync.Mutex
	latest *Snapshot
	subs   map[chan *Snapshot]struct{}
}

func (f *feed) Latest() *Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latest
}

func (f *feed) Subscribe() (<-chan *Snapshot, func()) {
	ch := make(chan *Snapshot, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[chan *Snapshot]struct{}{}
	}
	f.subs[ch] = struct{}{}
	if f.latest != nil {
		ch <- f.latest
	}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.subs, ch)
			close(ch)
		})
	}
}

// publish makes s the newest snapshot and hands it to every subscriber,
// replacing one it has not taken yet.
func (f *feed) publish(s *Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latest = s
	for ch := range f.subs {
		select {
		case <-ch:
		default:
		}
		ch <- s // the buffer is free: only publish sends, under mu
	}
}

// Poller is a Feed that re-reads on an interval and, when its Reader is
// a Watcher, at once when a watch fires (watch-driven with a polling
// floor). Reads after a watch are spaced by MinGap at least, so that a
// burst of changes costs one read.
type Poller struct {
	feed
	r        Reader
	interval time.Duration
	log      *slog.Logger
	// MinGap is the least time between the starts of two reads; set it
	// before Run. Default min(interval, 250ms).
	MinGap time.Duration
}

// NewPoller returns a Poller of r; Run starts it.
func NewPoller(r Reader, interval time.Duration, log *slog.Logger) *Poller {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Poller{r: r, interval: interval, log: log, MinGap: min(interval, 250*time.Millisecond)}
}

// Run reads until ctx ends, then returns nil. A read that returns no
// snapshot is logged and retried at the next tick, and the last
// snapshot stays Latest; a snapshot of which nothing could be read
// (ErrUnreadable) is published: its Errors are the news.
func (p *Poller) Run(ctx context.Context) error {
	w, _ := p.r.(Watcher)
	failing := false
	for {
		start := time.Now()
		var changed <-chan struct{}
		if w != nil {
			var err error
			// Armed before the read: a change during it is not missed.
			if changed, err = w.Watch(ctx); err != nil && ctx.Err() == nil {
				p.log.Debug("cluster: cannot watch; polling only until the next read", "err", err)
			}
		}
		snap, err := p.r.Read(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !errors.Is(err, ErrUnreadable):
			p.log.Warn("cluster: read failed", "err", err)
			failing = true
		case err != nil:
			p.log.Warn("cluster: nothing could be read", "errors", snap.Errors)
			failing = true
			p.publish(snap) // its errors are the news
		default:
			if failing {
				p.log.Info("cluster: read again")
				failing = false
			}
			p.publish(snap)
		}
		if !p.wait(ctx, start, changed) {
			return nil
		}
	}
}

// wait returns when the next read is due: interval after start, or
// MinGap after start once changed receives; false when ctx ended.
func (p *Poller) wait(ctx context.Context, start time.Time, changed <-chan struct{}) bool {
	due := start.Add(p.interval)
	for {
		t := time.NewTimer(time.Until(due))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
			return true
		case <-changed:
			t.Stop()
			changed, due = nil, start.Add(p.MinGap)
		}
	}
}
