package server

import (
	"context"
	"sync"
	"time"
)

// lineRates is each collector's committed lines per second between two
// snapshots this console read at least rateEvery apart (a rate over the
// milliseconds between two snapshots a watch triggered would be noise):
// the collectors page's rate. It
// is this console's own reading (consoles share no state), bounded by
// the collectors of the newest snapshot. (The task and job plots read
// what the monitor stores: plots.go.)
type lineRates struct {
	mu   sync.Mutex
	last time.Time
	// lines and rates are each collector's committed lines at the last
	// snapshot and its lines per second since the one before.
	lines map[string]int64
	rates map[string]float64
}

// rateEvery is the shortest interval a rate is measured over.
const rateEvery = 30 * time.Second

// add takes the collectors of snap, if rateEvery has passed.
func (h *lineRates) add(snap *Snapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if snap.ReadAt.Sub(h.last) < rateEvery {
		return
	}
	prevAt := h.last
	h.last = snap.ReadAt
	lines, rates := make(map[string]int64, len(snap.Collectors)), make(map[string]float64, len(snap.Collectors))
	for _, c := range snap.Collectors {
		lines[c.Name] = c.Lines
		if prev, ok := h.lines[c.Name]; ok && c.Lines >= prev && !prevAt.IsZero() {
			rates[c.Name] = float64(c.Lines-prev) / snap.ReadAt.Sub(prevAt).Seconds()
		}
	}
	h.lines, h.rates = lines, rates
}

// rate is a collector's lines per second over the last interval, and
// whether there is one yet.
func (h *lineRates) rate(collector string) (float64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.rates[collector]
	return r, ok
}

// track takes every snapshot of the feed until ctx ends.
func (s *Server) track(ctx context.Context) {
	ch, cancel := s.deps.Feed.Subscribe()
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case snap, ok := <-ch:
			if !ok {
				return
			}
			s.rates.add(snap)
		}
	}
}
