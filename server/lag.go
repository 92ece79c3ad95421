package server

import (
	"context"
	"fmt"
	"github.com/shepherd-dev/shepherd/cluster"
	"strings"
	"sync"
	"time"
)

// lagHistory keeps, per task, the owner's lag sampled from the snapshots
// at most every lagEvery, for the last lagKeep samples: the task page's
// chart; and each collector's lines per second between the last two
// samples. It is this console's memory since it started (consoles share no
// state), bounded by the tasks of the newest snapshot.
type lagHistory struct {
	mu    sync.Mutex
	last  time.Time
	tasks map[string][]lagSample
	// lines and rates are each collector's committed lines at the last
	// sample and its lines per second since the one before.
	lines map[string]int64
	rates map[string]float64
}

type lagSample struct {
	At  time.Time
	Lag float64 // seconds; -1: no owner running
}

const (
	lagEvery = 30 * time.Second
	lagKeep  = 240 // two hours
)

// add records the lag of every task of snap, if lagEvery has passed.
func (h *lagHistory) add(snap *Snapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if snap.ReadAt.Sub(h.last) < lagEvery {
		return
	}
	prevAt := h.last
	h.last = snap.ReadAt
	next := make(map[string][]lagSample, len(snap.Tasks))
	for _, ts := range snap.Tasks {
		lag := -1.0 // no lag known: drawn as the bottom line
		if v := snap.TaskView(ts); v.LagKnown && v.State != cluster.TaskStopped {
			lag = v.Lag.Seconds()
		}
		s := append(h.tasks[ts.Name], lagSample{At: snap.ReadAt, Lag: lag})
		if len(s) > lagKeep {
			s = s[len(s)-lagKeep:]
		}
		next[ts.Name] = s
	}
	h.tasks = next
	lines, rates := make(map[string]int64, len(snap.Collectors)), make(map[string]float64, len(snap.Collectors))
	for _, c := range snap.Collectors {
		lines[c.Name] = c.Lines
		if prev, ok := h.lines[c.Name]; ok && c.Lines >= prev && !prevAt.IsZero() {
			rates[c.Name] = float64(c.Lines-prev) / snap.ReadAt.Sub(prevAt).Seconds()
		}
	}
	h.lines, h.rates = lines, rates
}

// rate is a collector's lines per second over the last sample interval,
// and whether there is one yet.
func (h *lagHistory) rate(collector string) (float64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.rates[collector]
	return r, ok
}

// track records every snapshot of the feed until ctx ends.
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
			s.lags.add(snap)
		}
	}
}

// lagChart is what the task page draws: an SVG polyline of the samples.
type lagChart struct {
	Points   string // x,y pairs in a 600×120 box
	Max      float64
	From, To time.Time
	N        int
}

func (h *lagHistory) chart(task string) lagChart {
	h.mu.Lock()
	samples := append([]lagSample(nil), h.tasks[task]...)
	h.mu.Unlock()
	c := lagChart{N: len(samples), Max: 1}
	if len(samples) < 2 {
		return c
	}
	for _, s := range samples {
		c.Max = max(c.Max, s.Lag)
	}
	c.From, c.To = samples[0].At, samples[len(samples)-1].At
	span := c.To.Sub(c.From).Seconds()
	var b strings.Builder
	for _, s := range samples {
		x := 600 * s.At.Sub(c.From).Seconds() / span
		y := 120.0
		if s.Lag >= 0 {
			y = 120 - 115*s.Lag/c.Max
		}
		fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
	}
	c.Points = strings.TrimSpace(b.String())
	return c
}
