package collector

import (
	"cmp"
	"context"
	"errors"
	"net/url"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Admin manages the sources and reads the collectors of /logs: the
// operations behind `shepherd ctl source …` and `ctl collector list`, the
// console and the monitor's reads. Every call retries the coordination
// server's transient errors (Session.Retry).
type Admin struct {
	s *recipe.Session
}

// NewAdmin returns an Admin of the collectors and sources under /logs.
func NewAdmin(s *recipe.Session) *Admin { return &Admin{s: s} }

// Sources returns the sources to collect, in the order they were added.
func (a *Admin) Sources(ctx context.Context) ([]string, error) {
	var doc Sources
	err := a.s.Retry(ctx, func() (err error) {
		doc, _, err = readSources(ctx, a.s)
		return err
	})
	return doc.Sources, err
}

// AddSources adds sources (each checked with ValidateSource) to the list;
// those already present are left alone. It returns how many were added.
func (a *Admin) AddSources(ctx context.Context, uris ...string) (int, error) {
	for _, u := range uris {
		if err := ValidateSource(u); err != nil {
			return 0, err
		}
	}
	added := 0
	err := a.updateSources(ctx, func(have []string) []string {
		added = 0
		for _, u := range uris {
			if !slices.Contains(have, u) {
				have = append(have, u)
				added++
			}
		}
		return have
	})
	return added, err
}

// RemoveSources removes sources from the list and returns how many were
// there. The assigner takes them from their collectors at its next round.
func (a *Admin) RemoveSources(ctx context.Context, uris ...string) (int, error) {
	removed := 0
	err := a.updateSources(ctx, func(have []string) []string {
		removed = 0
		out := have[:0:0]
		for _, h := range have {
			if slices.Contains(uris, h) {
				removed++
				continue
			}
			out = append(out, h)
		}
		return out
	})
	return removed, err
}

func readSources(ctx context.Context, s *recipe.Session) (Sources, int32, error) {
	var doc Sources
	data, stat, err := s.Get(ctx, SourcesPath)
	if errors.Is(err, zk.ErrNoNode) {
		return doc, -1, nil
	}
	if err != nil {
		return doc, 0, err
	}
	return doc, stat.Version, decode(SourcesPath, data, &doc)
}

// updateSources applies change to the list with a conditional set,
// retrying when a concurrent writer got there first.
func (a *Admin) updateSources(ctx context.Context, change func([]string) []string) error {
	return a.s.Retry(ctx, func() error { return updateSources(ctx, a.s, change) })
}

func updateSources(ctx context.Context, s *recipe.Session, change func([]string) []string) error {
	for {
		doc, version, err := readSources(ctx, s)
		if err != nil {
			return err
		}
		doc.Version = schemaVersion
		doc.Sources = change(append([]string(nil), doc.Sources...))
		if doc.Sources == nil {
			doc.Sources = []string{}
		}
		if version < 0 {
			if err := s.EnsurePath(ctx, "/logs"); err != nil {
				return err
			}
			_, err = s.Create(ctx, SourcesPath, encode(doc), zk.FlagPersistent, nil)
			if errors.Is(err, zk.ErrNodeExists) {
				continue
			}
			return err
		}
		_, err = s.Set(ctx, SourcesPath, encode(doc), version)
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		return err
	}
}

// CollectorInfo is one collector as readers see it (Admin.Overview).
type CollectorInfo struct {
	Name  string `json:"name"`
	Alive bool   `json:"alive"`
	// StatusAge is how long before the leading assigner's last round (or,
	// with no assigner, before now on the caller's clock) the status was
	// last written; -1 if it has none.
	StatusAge time.Duration `json:"status_age_ns"`
	Reason    string        `json:"reason"`  // the liveness verdict in words
	Leaving   bool          `json:"leaving"` // stopped on purpose: its sources are handed back
	Load      Load          `json:"load"`
	Sources   []string      `json:"sources"` // assigned
	Lag       int64         `json:"lag"`     // bytes known not yet collected, over its owned sources
	Lines     int64         `json:"lines"`   // lines committed, over the sources it owns
	// Refused is why the collector refuses its assignment (Status.Refused).
	Refused string `json:"refused,omitempty"`
}

// SourceStatus is one source of the list as readers see it.
type SourceStatus struct {
	URI string `json:"uri"`
	// Collector is the collector it is assigned to; "" if unassigned.
	Collector string `json:"collector"`
	// Lag is the bytes known not yet collected, as its latest committer
	// reported them; Lines the lines committed by every collector that
	// has held it.
	Lag   int64 `json:"lag"`
	Lines int64 `json:"lines"`
}

// Overview is the collectors and sources as read at one time.
type Overview struct {
	Collectors []CollectorInfo `json:"collectors"` // by name
	Sources    []SourceStatus  `json:"sources"`    // in the list's order
	// Judged says on which clock liveness was judged (JudgedByAssigner
	// or JudgedLocally).
	Judged string `json:"judged"`
}

// Overview reads the source list and every collector's assignment and
// status, and judges each collector alive or dead with the assigner's
// rule (judge), at the time and with the DeadAfter of the leading
// assigner's last round, so that both decide alike. deadAfter, if
// positive, overrides the assigner's. With no assigner leading,
// liveness is judged at now on this process's clock, with deadAfter or
// DefaultDeadAfter, and Judged says so.
func (a *Admin) Overview(ctx context.Context, deadAfter time.Duration) (Overview, error) {
	var ov Overview
	err := a.s.Retry(ctx, func() (err error) {
		ov, err = readOverview(ctx, a.s, deadAfter)
		return err
	})
	return ov, err
}

func readOverview(ctx context.Context, s *recipe.Session, deadAfter time.Duration) (Overview, error) {
	srcs, _, err := readSources(ctx, s)
	if err != nil {
		return Overview{}, err
	}
	names, _, err := s.Children(ctx, CollectorsPath)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return Overview{}, err
	}
	slices.Sort(names)
	nodes, err := readCollectors(ctx, s, names)
	if err != nil {
		return Overview{}, err
	}
	ref, published, err := assignerClock(ctx, s)
	if err != nil {
		return Overview{}, err
	}
	judged := JudgedByAssigner
	if ref == 0 {
		ref, judged = time.Now().UnixMilli(), JudgedLocally
	}
	if deadAfter <= 0 {
		deadAfter = cmp.Or(published, DefaultDeadAfter)
	}
	infos, err := infosOf(nodes, ref, deadAfter)
	if err != nil {
		return Overview{}, err
	}
	ov := Overview{Collectors: infos, Sources: sourcesOf(srcs.Sources, nodes), Judged: judged}
	for i := range ov.Sources {
		ov.Sources[i].URI = RedactedURI(ov.Sources[i].URI)
	}
	for _, c := range ov.Collectors {
		for i, u := range c.Sources {
			c.Sources[i] = RedactedURI(u)
		}
	}
	return ov, nil
}

// RedactedURI is uri with the password of its user information, if any,
// replaced: readers show sources to viewers who need not see it (`ctl
// source list` shows the list as stored, for `source rm`).
func RedactedURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	if _, ok := u.User.Password(); !ok {
		return uri
	}
	return u.Redacted()
}

// RedactedURIs is RedactedURI of each of uris, in a slice of its own
// (nil for nil): what the audit log keeps of a change of the list.
func RedactedURIs(uris []string) []string {
	if uris == nil {
		return nil
	}
	out := make([]string, len(uris))
	for i, u := range uris {
		out[i] = RedactedURI(u)
	}
	return out
}

// sourcesOf is the state of each source of the list: its collector, and
// its lag and lines from the statuses.
func sourcesOf(uris []string, nodes []collectorNode) []SourceStatus {
	out := make([]SourceStatus, 0, len(uris))
	for _, u := range uris {
		st := SourceStatus{URI: u}
		var seq int64 = -1
		for _, n := range nodes {
			if _, ok := n.assign.lease(u); ok {
				st.Collector = n.name
			}
			p, ok := n.status.Progress[u]
			if !ok {
				continue
			}
			st.Lines += p.Lines
			if p.Seq > seq { // the latest commit knows the lag best
				seq, st.Lag = p.Seq, max(p.Lag, 0)
			}
		}
		out = append(out, st)
	}
	return out
}

// How Overview judged liveness.
const (
	JudgedByAssigner = "on the coordination server's clock at the assigner's last round"
	JudgedLocally    = "on this process's clock: no assigner leads"
)

// assignerClock returns the server time (ms) of the leading assigner's
// last round and its DeadAfter; 0 if no assigner leads.
func assignerClock(ctx context.Context, s *recipe.Session) (int64, time.Duration, error) {
	leader, err := recipe.NewElection(s, AssignerPath, "").Leader(ctx)
	if errors.Is(err, recipe.ErrNoLeader) || (err == nil && leader == "") {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	data, stat, err := s.Get(ctx, AssignerPath)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	var st AssignerState
	if err := decode(AssignerPath, data, &st); err != nil || st.Leader != leader {
		return 0, 0, nil // the leader has not written a round yet
	}
	return stat.Mtime, st.DeadAfter, nil
}
