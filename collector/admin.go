package collector

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// ListSources returns the sources to collect, in the order they were added.
func ListSources(ctx context.Context, s *recipe.Session) ([]string, error) {
	doc, _, err := readSources(ctx, s)
	return doc.Sources, err
}

// AddSources adds sources (each checked with ValidateSource) to the list;
// those already present are left alone. It returns how many were added.
func AddSources(ctx context.Context, s *recipe.Session, uris ...string) (int, error) {
	for _, u := range uris {
		if err := ValidateSource(u); err != nil {
			return 0, err
		}
	}
	added := 0
	err := updateSources(ctx, s, func(have []string) []string {
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
func RemoveSources(ctx context.Context, s *recipe.Session, uris ...string) (int, error) {
	removed := 0
	err := updateSources(ctx, s, func(have []string) []string {
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

// CollectorInfo is what ListCollectors reports of one collector.
type CollectorInfo struct {
	Name      string        `json:"name"`
	Alive     bool          `json:"alive"`
	StatusAge time.Duration `json:"status_age_ns"` // since status was last written, on the server's clock against ours
	Load      Load          `json:"load"`
	Sources   []string      `json:"sources"` // assigned
	Lag       int64         `json:"lag"`     // bytes known not yet collected, over its owned sources
	Lines     int64         `json:"lines"`   // lines committed, over the sources it owns
	// Refused is why the collector refuses its assignment (Status.Refused).
	Refused string `json:"refused,omitempty"`
}

// ListCollectors reads every collector's assignment and status. A
// collector is alive if its status was written less than deadAfter ago.
func ListCollectors(ctx context.Context, s *recipe.Session, deadAfter time.Duration) ([]CollectorInfo, error) {
	names, _, err := s.Children(ctx, CollectorsPath)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	now := time.Now()
	out := make([]CollectorInfo, 0, len(names))
	for _, n := range names {
		data, _, err := s.Get(ctx, CollectorPath(n))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var a Assignment
		if err := decode(CollectorPath(n), data, &a); err != nil {
			return nil, err
		}
		info := CollectorInfo{Name: n, Sources: a.URIs(), StatusAge: -1}
		sdata, sstat, err := s.Get(ctx, StatusPath(n))
		switch {
		case errors.Is(err, zk.ErrNoNode):
		case err != nil:
			return nil, err
		default:
			var st Status
			if err := decode(StatusPath(n), sdata, &st); err != nil {
				return nil, err
			}
			info.StatusAge = now.Sub(time.UnixMilli(sstat.Mtime))
			info.Alive = info.StatusAge < deadAfter
			info.Load = st.Load
			info.Refused = st.Refused
			for _, p := range st.Progress {
				if p.Owned {
					info.Lag += max(p.Lag, 0)
					info.Lines += p.Lines
				}
			}
		}
		out = append(out, info)
	}
	return out, nil
}
