package scheduler

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Freshness gates (Dependency.Task): a run of a job waits until a
// replication task's target holds everything the task's source committed
// up to a time. The scheduler does not read replication tasks itself —
// their layout belongs to package core — but asks a Freshness, which the
// process wiring the scheduler gives it (Options.Freshness; package
// cluster implements it over the coordination tree).

// Freshness answers freshness gates.
type Freshness interface {
	// Fresh tells whether task's target holds everything its source
	// committed up to at. mark is the Mark of the previous answer for the
	// same gate ("" the first time): once a goal is chosen it is kept, so
	// that a busy source does not move it away. wake, if not nil, is
	// closed when something the answer depends on may have changed, and
	// is abandoned when ctx ends.
	Fresh(ctx context.Context, task string, at time.Time, mark string) (ans FreshAnswer, wake <-chan struct{}, err error)
}

// FreshAnswer is what a Freshness says of one gate.
type FreshAnswer struct {
	// Target is the source position the task's target must reach, as
	// people read it: the source's position read at or after the gate's
	// time. Empty while no such reading exists.
	Target string `json:"target,omitempty"`
	// Mark is Target as the Freshness reads it back (Fresh's mark).
	Mark string `json:"-"`
	// Position is the task's committed position now, as people read it.
	Position string `json:"position,omitempty"`
	// Reached: the task's target holds Target.
	Reached bool `json:"reached,omitempty"`
	// Why says why the task is not moving towards Target ("task is
	// STOPPED"), if it is not; empty otherwise.
	Why string `json:"why,omitempty"`
	// Stuck: the task will not reach Target by itself (stopped, failed,
	// missing): someone must act before the run's deadline.
	Stuck bool `json:"stuck,omitempty"`
}

// GateWait is one freshness gate of a waiting run (Waiting.Gates), and
// of a run that waited (Result.Gates): the task and the time its target
// must be fresh to, and the last answer.
type GateWait struct {
	Task string    `json:"task"`
	At   time.Time `json:"at"`
	FreshAnswer
}

// String is the gate in one line, as ctl and the console show it.
func (g GateWait) String() string {
	s := fmt.Sprintf("task %s fresh to %s", g.Task, g.At.UTC().Format(time.RFC3339))
	switch {
	case g.Reached:
		s += ": reached " + g.Target
	case g.Target != "":
		s += fmt.Sprintf(": at %s, waiting for %s", orNone(g.Position), g.Target)
	default:
		s += ": waiting for a reading of the source at or after that time"
	}
	if g.Why != "" {
		s += " (" + g.Why + ")"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// errNoFreshness is the answer to a gate on a scheduler given no
// Freshness: it cannot tell, so the run waits until its deadline.
const errNoFreshness = "this scheduler cannot read replication tasks (started without a Freshness)"

// gateBase is the scheduled time a run's gates count from (the
// "scheduled" of Dependency.CaughtUpTo): a fired run's scheduled time;
// for a run asked for by its key (run-now --run-key, a backfill) the time
// the key names — for a date key, the job's first fire time that day in
// its zone.
func (r runReq) gateBase() time.Time {
	if !r.manual {
		return r.scheduled
	}
	t, manual, ok := ParseRunKey(r.key)
	switch {
	case !ok || manual:
		return r.scheduled
	case len(r.key) == len(time.DateOnly):
		midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, r.p.loc)
		if next := r.p.sched.Next(midnight.Add(-time.Nanosecond)); !next.IsZero() && next.Before(midnight.AddDate(0, 0, 1)) {
			return next
		}
		return midnight
	}
	return t
}

// readGates asks about each of the plan's gates for the run scheduled at
// scheduled (runReq.gateBase), keeping the marks of earlier answers in marks (by task), and
// forwards every answer's wake channel to wake (until ctx ends).
func (sc *Scheduler) readGates(ctx context.Context, p *plan, scheduled time.Time, marks map[string]string, wake chan<- struct{}) ([]GateWait, error) {
	var out []GateWait
	for _, d := range p.gates() {
		off, _ := ParseCaughtUpTo(d.CaughtUpTo) // checked by checkAfter
		g := GateWait{Task: d.Task, At: scheduled.Add(off)}
		if sc.opts.Freshness == nil {
			g.Why = errNoFreshness
			out = append(out, g)
			continue
		}
		ans, ch, err := sc.opts.Freshness.Fresh(ctx, d.Task, g.At, marks[d.Task])
		if err != nil {
			return nil, fmt.Errorf("freshness gate on task %q: %w", d.Task, err)
		}
		if ans.Mark != "" {
			marks[d.Task] = ans.Mark
		}
		g.FreshAnswer = ans
		out = append(out, g)
		if ch != nil {
			go forwardWake(ctx, ch, wake)
		}
	}
	return out, nil
}

// forwardWake passes one wake-up from ch (a watch's, a Freshness's) to
// wake, unless ctx ends first.
func forwardWake[T any](ctx context.Context, ch <-chan T, wake chan<- struct{}) {
	select {
	case <-ch:
		select {
		case wake <- struct{}{}:
		default:
		}
	case <-ctx.Done():
	}
}

// gatesOpen reports whether every gate is reached, and names the others.
func gatesOpen(gates []GateWait) (bool, []string) {
	var closed []string
	for _, g := range gates {
		if !g.Reached {
			closed = append(closed, g.Task)
		}
	}
	return len(closed) == 0, closed
}

// gatesText words the gates not reached, for a missed run's error.
func gatesText(gates []GateWait) string {
	var out []string
	for _, g := range gates {
		if !g.Reached {
			out = append(out, g.String())
		}
	}
	return strings.Join(out, "; ")
}
