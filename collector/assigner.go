package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// AssignerConfig configures an Assigner.
type AssignerConfig struct {
	Name     string   // the candidate's id in the election
	Strategy Strategy // Global or Local
	// PollInterval is how often the leader reads every status.
	PollInterval time.Duration
	// DeadAfter is how long a status may go unchanged before its
	// collector is treated as dead. It must exceed the collectors'
	// status interval by a margin.
	DeadAfter time.Duration
	Logger    *slog.Logger
}

// Defaults of AssignerConfig.
const (
	DefaultAssignPoll = time.Second
	DefaultDeadAfter  = 10 * time.Second
)

// Assigner contends to be the one that assigns sources to collectors,
// and while it leads, keeps the assignment in line with the sources and
// the live collectors.
type Assigner struct {
	s   *recipe.Session
	cfg AssignerConfig
	log *slog.Logger

	moves  atomic.Int64
	rounds atomic.Int64
	terms  atomic.Int64

	refused string // why the source list is refused; owned by the lead goroutine
}

// NewAssigner returns an assigner working through s.
func NewAssigner(s *recipe.Session, cfg AssignerConfig) (*Assigner, error) {
	if _, err := ParseStrategy(string(cfg.Strategy)); err != nil {
		return nil, err
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultAssignPoll
	}
	if cfg.DeadAfter <= 0 {
		cfg.DeadAfter = DefaultDeadAfter
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Assigner{s: s, cfg: cfg, log: cfg.Logger.With("assigner", cfg.Name, "strategy", cfg.Strategy)}, nil
}

// Moves is the number of sources this assigner has moved (or assigned
// for the first time) so far.
func (a *Assigner) Moves() int64 { return a.moves.Load() }

// Terms is the number of times this assigner was elected.
func (a *Assigner) Terms() int64 { return a.terms.Load() }

// Run campaigns and assigns while leading, until ctx ends (then nil).
func (a *Assigner) Run(ctx context.Context) error {
	e := recipe.NewElection(a.s, AssignerPath, a.cfg.Name)
	defer func() { _ = e.Resign() }()
	for ctx.Err() == nil {
		if err := e.Campaign(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			a.log.Warn("campaign failed", "err", err)
			if err := sleep(ctx, a.cfg.PollInterval); err != nil {
				return nil
			}
			continue
		}
		a.terms.Add(1)
		a.log.Info("assigner elected", "token", e.Token())
		if err := e.Serve(ctx, a.lead); err != nil && ctx.Err() == nil {
			a.log.Warn("assigner term ended", "err", err)
		}
		_ = e.Resign()
	}
	return nil
}

// lead assigns until ctx ends. Liveness is judged by judge on the
// server's clock, read from the mtime of this leader's own write of
// AssignerPath at each round. The sources of a collector judged dead for
// the age of its status are not moved until this leader has written
// rounds without a gap for DeadAfter: after a failover, a suspension or
// a server restart, live collectors get DeadAfter to write again. A
// collector that marked its status Leaving is dead at once.
func (a *Assigner) lead(ctx context.Context, e *recipe.Election) error {
	var clock termClock
	var counter int64
	for {
		wake, err := a.assignRound(ctx, e, &clock, &counter)
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, recipe.ErrUntrusted):
			if err.Error() != a.refused {
				a.log.Error("refusing the source list: assignments unchanged", "path", SourcesPath, "err", err)
				a.refused = err.Error()
			}
		case err != nil:
			a.log.Warn("assignment round failed", "err", err)
		}
		if err == nil && a.refused != "" {
			a.log.Info("source list trusted again", "path", SourcesPath)
			a.refused = ""
		}
		a.rounds.Add(1)
		t := time.NewTimer(a.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// termClock follows the server's clock through a leader's rounds.
type termClock struct {
	since, last int64 // server ms: start of the rounds without a gap, and the last round
}

// tick records a round at server time now and reports whether rounds
// have run without a gap longer than maxGap for deadAfter.
func (c *termClock) tick(now int64, deadAfter, maxGap time.Duration) bool {
	gap := time.Duration(now-c.last) * time.Millisecond
	if c.last == 0 || gap > maxGap {
		c.since = now
	}
	c.last = now
	return time.Duration(now-c.since)*time.Millisecond >= deadAfter
}

// assignRound is one round of the leader: it writes the round's
// AssignerState (fenced by the election node: only the leader writes
// it; its mtime is the round's time on the server's clock), reads the
// sources and the collectors (readRound), decides the assignment
// (decideRound, pure) and writes the changed assignments in one
// conditional multi (writeRound). wake fires when the collector list
// changes.
func (a *Assigner) assignRound(ctx context.Context, e *recipe.Election, clock *termClock, counter *int64) (<-chan zk.Event, error) {
	if err := a.s.EnsurePath(ctx, CollectorsPath); err != nil {
		return nil, err
	}
	fence := &zk.CheckVersionRequest{Path: e.Node(), Version: 0} // fails once our term ended
	now := time.Now()
	hb := AssignerState{Version: schemaVersion, Leader: a.cfg.Name, DeadAfter: a.cfg.DeadAfter, Time: now.UTC()}
	res, err := a.s.Multi(ctx, fence, &zk.SetDataRequest{Path: AssignerPath, Data: encode(hb), Version: -1})
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", AssignerPath, err)
	}
	ref := res[1].Stat.Mtime
	// A gap of DeadAfter (or two polls, if longer) between rounds: this
	// leader was cut off, and so may the collectors have been.
	settled := clock.tick(ref, a.cfg.DeadAfter, max(a.cfg.DeadAfter, 2*a.cfg.PollInterval))
	in, wake, err := a.readRound(ctx)
	if err != nil {
		return wake, err
	}
	for _, n := range in.nodes {
		if n.assignErr != nil {
			a.log.Warn("overwriting a malformed assignment", "collector", n.name, "err", n.assignErr)
		}
	}
	r := round{ref: ref, settled: settled, deadAfter: a.cfg.DeadAfter, strategy: a.cfg.Strategy,
		by: a.cfg.Name, token: e.Token(), counter: *counter, now: now.UTC()}
	out := decideRound(r, validSources(in.sources, a.log), in.nodes)
	*counter = out.counter
	if len(out.writes) == 0 {
		return wake, nil
	}
	if err := a.writeRound(ctx, fence, out.writes); err != nil {
		return wake, err
	}
	a.moves.Add(int64(out.moved))
	a.log.Info("sources reassigned", "moved", out.moved, "collectors", len(in.nodes))
	return wake, nil
}

// roundInput is what a round reads: the source list and the collectors.
type roundInput struct {
	sources []string
	nodes   []collectorNode
}

// readRound reads the source list (refused unless trusted: collectors
// read the files and URLs it names) and every collector, leaving a watch
// on the collector list.
func (a *Assigner) readRound(ctx context.Context) (roundInput, <-chan zk.Event, error) {
	var in roundInput
	var srcDoc Sources
	data, _, err := a.s.Get(ctx, SourcesPath)
	switch {
	case errors.Is(err, zk.ErrNoNode):
	case err != nil:
		return in, nil, err
	default:
		if err := decode(SourcesPath, data, &srcDoc); err != nil {
			return in, nil, err
		}
		if err := a.s.CheckTrusted(ctx, LogsRoot, SourcesPath); err != nil {
			return in, nil, err
		}
	}
	in.sources = srcDoc.Sources
	names, _, wake, err := a.s.ChildrenW(ctx, CollectorsPath)
	if err != nil {
		return in, nil, err
	}
	slices.Sort(names)
	in.nodes, err = readCollectors(ctx, a.s, names)
	return in, wake, err
}

// round is what decideRound knows of the round besides what it read.
type round struct {
	ref       int64 // the round's time, server clock (ms)
	settled   bool  // this leader has written rounds without a gap for deadAfter
	deadAfter time.Duration
	strategy  Strategy
	by        string    // the assigner's name, written in assignments
	token     int64     // the leader's term, prefix of new lease ids
	counter   int64     // lease ids issued so far in this term
	now       time.Time // the assigner's clock, written in assignments
}

// assignmentWrite is one collector's new assignment, conditional on the
// version read.
type assignmentWrite struct {
	name    string
	doc     Assignment
	version int32
}

// roundPlan is what decideRound decided.
type roundPlan struct {
	writes  []assignmentWrite
	moved   int
	counter int64 // lease ids issued, new ones included
}

// decideRound judges the collectors (judge, at r.ref) and plans the
// sources over the live ones. A source keeps its lease id while it stays
// on its collector and gets a new one when it moves. Until the leader is
// settled it moves nothing away from a collector judged dead only for
// the age of its status: that collector may be alive and not yet
// reconnected after an outage the leader shared.
func decideRound(r round, sources []string, nodes []collectorNode) roundPlan {
	out := roundPlan{counter: r.counter}
	members := membersOf(nodes, r.ref, r.deadAfter)
	if !r.settled {
		for i, m := range members {
			if !m.Alive && len(m.Assigned) > 0 && nodes[i].stamp.exists && !nodes[i].stamp.leaving {
				return out // it may be alive and not yet reconnected: keep its sources
			}
		}
	}
	before := map[string][]string{}
	for _, m := range members {
		before[m.Name] = m.Assigned
	}
	after := Plan(r.strategy, sources, members)
	for _, n := range nodes {
		want := after[n.name]
		if slices.Equal(want, before[n.name]) {
			continue
		}
		doc := Assignment{Version: schemaVersion, Sources: []Lease{}, Updated: r.now, By: r.by}
		for _, uri := range want {
			id, ok := n.assign.lease(uri)
			if !ok {
				out.counter++
				id = fmt.Sprintf("%x-%d", r.token, out.counter)
			}
			doc.Sources = append(doc.Sources, Lease{URI: uri, ID: id})
		}
		out.writes = append(out.writes, assignmentWrite{name: n.name, doc: doc, version: n.version})
	}
	if len(out.writes) > 0 {
		out.moved = Moves(before, after)
	}
	return out
}

// writeRound writes the assignments in one multi, fenced by the
// election node and each conditional on the version read.
func (a *Assigner) writeRound(ctx context.Context, fence *zk.CheckVersionRequest, writes []assignmentWrite) error {
	ops := []any{fence}
	for _, w := range writes {
		ops = append(ops, &zk.SetDataRequest{Path: CollectorPath(w.name), Data: encode(w.doc), Version: w.version})
	}
	if _, err := a.s.Multi(ctx, ops...); err != nil {
		return fmt.Errorf("write assignment: %w", err)
	}
	return nil
}

// validSources drops (and logs) the sources that no collector can read.
func validSources(uris []string, log *slog.Logger) []string {
	out := make([]string, 0, len(uris))
	for _, u := range uris {
		if err := ValidateSource(u); err != nil {
			log.Warn("skipping a bad source", "err", err)
			continue
		}
		out = append(out, u)
	}
	return out
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return nil
}
