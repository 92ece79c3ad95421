package monitor

import (
	"context"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/coordhealth"
)

// While the coordination service cannot be reached at all, no monitor
// can lead, read the snapshot or store an alert: the stored state cannot
// say "the coordination service is down". The monitor that was active
// when its connection went — there is one, and no other can be elected
// meanwhile — keeps judging CoordUnhealthy alone, from its own probes of
// the servers, and sends those alerts and their resolutions itself. Its
// outage alerts live in its memory only (a restart of it during the
// outage forgets them).

// outage is the alert state of an outage, owned by Run's goroutine.
type outage struct {
	since   time.Time         // the connection went
	alerts  map[string]*Alert // CoordUnhealthy alerts of the outage
	pending []Notification    // decided, not yet delivered to every channel
}

// watchOutage is the tick of a monitor that was active and has lost its
// connection; it reports whether it handled the tick.
func (m *Monitor) watchOutage(ctx context.Context, wasActive bool) bool {
	connected := m.deps.Session.State().Connected()
	switch {
	case m.outage == nil && (connected || !wasActive):
		return false
	case m.outage == nil:
		m.outage = &outage{since: m.deps.Now(), alerts: map[string]*Alert{}}
		m.log.Warn("monitor: connection to the coordination service lost while active: judging CoordUnhealthy from probes alone")
	}
	now := m.deps.Now()
	var findings []Finding
	if !connected {
		in := &Input{Now: now, Snap: &cluster.Snapshot{Coord: coordhealth.ProbeAll(ctx, m.coordAddrs())}}
		findings = coordUnhealthy(in, &m.cfg.Rules)
	}
	var notes []Notification
	m.outage.alerts, notes = Step(m.outage.alerts, findings, m.holds, m.cfg.RepeatInterval, func(Finding) bool { return false }, now)
	m.outage.pending = append(m.outage.pending, notes...)
	m.logNotes(notes)
	if len(m.outage.pending) > 0 {
		failed := false
		for name, err := range deliver(ctx, m.chans, Batch{Monitor: m.cfg.Name, Notifications: m.outage.pending}) {
			m.metrics.notification(name, err)
			failed = failed || err != nil
		}
		// Channels that took it may get it again with the same ids.
		if !failed {
			m.outage.pending = nil
		}
	}
	if connected && len(m.outage.alerts) == 0 && len(m.outage.pending) == 0 {
		m.log.Info("monitor: connection back after an outage", "lasted", now.Sub(m.outage.since).Round(time.Second))
		m.outage = nil
		return false
	}
	return true
}

// coordAddrs are the coordination servers of the newest snapshot.
func (m *Monitor) coordAddrs() []string {
	var out []string
	if snap := m.deps.Feed.Latest(); snap != nil {
		for _, s := range snap.Coord {
			out = append(out, s.Addr)
		}
	}
	return out
}
