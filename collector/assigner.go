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

// lead assigns until ctx ends. Liveness is judged on this process's clock
// from when each status was last seen to change, and starts afresh with
// every call: after a failover or a suspension, no collector is declared
// dead before DeadAfter has passed in view of the new leader, and no
// change is made until every collector has been seen alive or dead.
func (a *Assigner) lead(ctx context.Context, e *recipe.Election) error {
	seen := map[string]seenStatus{}
	var counter int64
	for {
		wake, err := a.assignRound(ctx, e, seen, &counter)
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

// seenStatus is when the assigner last saw a status change.
type seenStatus struct {
	mzxid   int64
	at      time.Time
	changed bool // seen to change at least once: the collector is known to be alive
}

// assignRound reads sources, collectors and statuses, plans, and writes
// the changed assignments in one conditional multi. wake fires when the
// collector list changes.
func (a *Assigner) assignRound(ctx context.Context, e *recipe.Election, seen map[string]seenStatus, counter *int64) (<-chan zk.Event, error) {
	if err := a.s.EnsurePath(ctx, CollectorsPath); err != nil {
		return nil, err
	}
	var srcDoc Sources
	data, _, err := a.s.Get(ctx, SourcesPath)
	switch {
	case errors.Is(err, zk.ErrNoNode):
	case err != nil:
		return nil, err
	default:
		if err := decode(SourcesPath, data, &srcDoc); err != nil {
			return nil, err
		}
		// Collectors read the files and URLs the list names: a list an
		// untrusted session could have written is not assigned.
		if err := a.s.CheckTrusted(ctx, LogsRoot, SourcesPath); err != nil {
			return nil, err
		}
	}
	names, _, wake, err := a.s.ChildrenW(ctx, CollectorsPath)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	settled := true
	type node struct {
		a       Assignment
		version int32
	}
	nodes := map[string]node{}
	var members []Member
	for _, n := range names {
		data, stat, err := a.s.Get(ctx, CollectorPath(n))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return wake, err
		}
		var as Assignment
		if err := decode(CollectorPath(n), data, &as); err != nil {
			a.log.Warn("overwriting a malformed assignment", "collector", n, "err", err)
		}
		nodes[n] = node{as, stat.Version}
		m := Member{Name: n, Assigned: as.URIs()}
		sdata, sstat, err := a.s.Get(ctx, StatusPath(n))
		switch {
		case errors.Is(err, zk.ErrNoNode):
			delete(seen, n)
		case err != nil:
			return wake, err
		default:
			var st Status
			if decode(StatusPath(n), sdata, &st) == nil {
				m.Load = st.Load
			}
			s, ok := seen[n]
			if !ok || s.mzxid != sstat.Mzxid {
				s = seenStatus{mzxid: sstat.Mzxid, at: now, changed: ok}
				seen[n] = s
			}
			m.Alive = now.Sub(s.at) < a.cfg.DeadAfter
			// A collector first seen is neither known alive (its status
			// may be days old: the leader cannot compare clocks) nor dead
			// (DeadAfter has not passed in this leader's view) until its
			// status changes or DeadAfter passes. Planning meanwhile would
			// hand work to collectors that may be dead.
			if m.Alive && !s.changed {
				settled = false
			}
		}
		members = append(members, m)
	}
	if !settled {
		return wake, nil
	}
	before := map[string][]string{}
	for _, m := range members {
		before[m.Name] = m.Assigned
	}
	after := Plan(a.cfg.Strategy, validSources(srcDoc.Sources, a.log), members)
	ops := []any{&zk.CheckVersionRequest{Path: e.Node(), Version: 0}} // fence: fails once our term ended
	leases := map[string]string{}
	for n, nd := range nodes {
		for _, l := range nd.a.Sources {
			leases[n+"\x00"+l.URI] = l.ID
		}
	}
	token := e.Token()
	for _, n := range sortedNames(nodes) {
		want := after[n]
		if slices.Equal(want, before[n]) {
			continue
		}
		doc := Assignment{Version: schemaVersion, Sources: []Lease{}, Updated: now.UTC(), By: a.cfg.Name}
		for _, uri := range want {
			id, ok := leases[n+"\x00"+uri]
			if !ok {
				*counter++
				id = fmt.Sprintf("%x-%d", token, *counter)
			}
			doc.Sources = append(doc.Sources, Lease{URI: uri, ID: id})
		}
		ops = append(ops, &zk.SetDataRequest{Path: CollectorPath(n), Data: encode(doc), Version: nodes[n].version})
	}
	if len(ops) == 1 {
		return wake, nil
	}
	if _, err := a.s.Multi(ctx, ops...); err != nil {
		return wake, fmt.Errorf("write assignment: %w", err)
	}
	moved := Moves(before, after)
	a.moves.Add(int64(moved))
	a.log.Info("sources reassigned", "moved", moved, "collectors", len(members))
	return wake, nil
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

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
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
