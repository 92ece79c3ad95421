package monitor

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Alert states.
const (
	StatePending = "pending" // the condition holds, not yet for its hold time
	StateFiring  = "firing"
)

// Notification statuses.
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
	StatusTest     = "test"
)

// Alert is one alert the active monitor tracks.
type Alert struct {
	Finding
	State string    `json:"state"`
	Since time.Time `json:"since"` // the condition first seen
	// FiredAt is when it fired; zero while pending.
	FiredAt time.Time `json:"firedAt,omitzero"`
	// Notified is when a firing notification was last queued (first or
	// repeat); Silenced is true when it fired under a silence, which then
	// also mutes its resolution.
	Notified time.Time `json:"notified,omitzero"`
	Silenced bool      `json:"silenced,omitempty"`
}

// Notification is one alert's change as sent to every channel. Its ID is
// the same for every channel and every retry — and for a monitor that
// takes over and sends what its predecessor may not have — so that a
// receiver can drop a repeat delivery.
type Notification struct {
	ID       string            `json:"id"`
	Status   string            `json:"status"` // firing, resolved or test
	Rule     string            `json:"rule"`
	Severity Severity          `json:"severity"`
	Labels   map[string]string `json:"labels"`
	Summary  string            `json:"summary"`
	Fix      string            `json:"fix,omitempty"`
	StartsAt time.Time         `json:"startsAt"`
	EndsAt   time.Time         `json:"endsAt,omitzero"`
	// Repeat is true for a reminder of an alert still firing.
	Repeat bool `json:"repeat,omitempty"`
}

// Step is the alert state machine: given the alerts tracked so far and
// what the rules find now, it returns the alerts to track and the
// notifications to send. A finding becomes a pending alert, which fires
// once it has held for its rule's hold time; a firing alert whose
// condition is gone resolves. A firing alert is repeated every repeat
// (0: never). silenced says whether a finding is silenced now: a silenced
// alert fires and resolves without notifications.
func Step(alerts map[string]*Alert, findings []Finding, hold map[string]time.Duration, repeat time.Duration, silenced func(Finding) bool, now time.Time) (map[string]*Alert, []Notification) {
	next := make(map[string]*Alert, len(findings))
	var notes []Notification
	for _, f := range findings {
		k := f.Key()
		if _, dup := next[k]; dup {
			continue
		}
		a := &Alert{Finding: f, State: StatePending, Since: now}
		if old, ok := alerts[k]; ok {
			a.State, a.Since, a.FiredAt, a.Notified, a.Silenced = old.State, old.Since, old.FiredAt, old.Notified, old.Silenced
		}
		next[k] = a
		switch {
		case a.State == StatePending && now.Sub(a.Since) >= hold[f.Rule]:
			a.State, a.FiredAt = StateFiring, now
			a.Silenced = silenced(f)
			if !a.Silenced {
				a.Notified = now
				notes = append(notes, a.notification(StatusFiring, now))
			}
		case a.State == StateFiring && !a.Silenced && repeat > 0 && now.Sub(a.Notified) >= repeat:
			if silenced(f) {
				continue // muted for now; reminded when the silence ends
			}
			a.Notified = now
			n := a.notification(StatusFiring, now)
			n.Repeat = true
			notes = append(notes, n)
		}
	}
	for k, a := range alerts {
		if _, still := next[k]; still || a.State != StateFiring || a.Silenced {
			continue
		}
		notes = append(notes, a.notification(StatusResolved, now))
	}
	return next, notes
}

// notification is a's change to status at now.
func (a *Alert) notification(status string, now time.Time) Notification {
	n := Notification{
		Status: status, Rule: a.Rule, Severity: a.Severity, Labels: a.Labels,
		Summary: a.Summary, Fix: a.Fix, StartsAt: a.FiredAt,
	}
	at := a.FiredAt
	if status == StatusResolved {
		n.EndsAt, at = now, now
	} else if status == StatusFiring && now.After(a.FiredAt) {
		at = now // a repeat
	}
	n.ID = fmt.Sprintf("%s@%s:%s", a.Key(), at.UTC().Format(time.RFC3339Nano), status)
	return n
}

// FormatLabels writes labels (or a silence's matchers) as
// "k=v,k=v", sorted by name: how ctl and the console show them.
func FormatLabels(l map[string]string) string {
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}
