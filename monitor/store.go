package monitor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Subtrees are the roots of the monitor's nodes, for
// recipe.Session.EnsureSubtree.
func Subtrees() []recipe.Subtree { return []recipe.Subtree{{Path: Root}} }

// The monitor's subtree.
const (
	Root         = cluster.MonitorRoot
	ElectionPath = Root + "/election"
	StatePath    = cluster.MonitorStatePath
	SilencesPath = Root + "/silences"
	// StandbyPath is the MonitorStandbyOnly alert a standby raised: its
	// creation decides which standby sends it; the next active monitor
	// resolves it.
	StandbyPath = Root + "/standby"
	// SeriesPath holds one node per task, SeriesPath/<task>: its lag and
	// rows/s over the last 24 hours (package series), written by the
	// active monitor (series.go), plotted by the console.
	SeriesPath = Root + "/series"
)

// stateVersion is the schema version of the state document.
const stateVersion = 1

// Bounds of the state document, which must stay far below the 1 MB a
// ZooKeeper node holds.
const (
	maxEvents   = 100
	maxOutbox   = 50
	maxSilences = 1000
	// outboxMaxAge: a batch no channel took for this long is dropped
	// (logged): the channel is broken and the alert stale.
	outboxMaxAge = 24 * time.Hour
)

// State is what the active monitor keeps in StatePath.
type State struct {
	Version int `json:"version"`
	// Active is the monitor that wrote it, at Updated.
	Active  string            `json:"active"`
	Updated time.Time         `json:"updated"`
	Alerts  map[string]*Alert `json:"alerts"`
	History History           `json:"history"`
	// Outbox holds the batches decided but not yet delivered to every
	// channel.
	Outbox []Outgoing `json:"outbox,omitempty"`
	// Events are the latest notifications decided, newest last.
	Events []Notification `json:"events,omitempty"`
}

// Outgoing is a batch and the channels it still has to reach.
type Outgoing struct {
	Batch   Batch     `json:"batch"`
	Decided time.Time `json:"decided"`
	// Pending are the names of channels not yet delivered to; nil until
	// the first delivery attempt, which fills it with every channel.
	Pending   []string `json:"pending"`
	Attempted bool     `json:"attempted,omitempty"`
	LastError string   `json:"lastError,omitempty"`
}

// ErrBadState reports a state document that does not decode: it is
// started over (the worst is one repeat of what was firing).
var ErrBadState = errors.New("monitor: state does not decode")

// ReadState reads the state document and its version (-1: none yet). A
// document that does not decode is an error wrapping ErrBadState, with an
// empty state and the document's version, so that it can be replaced.
func ReadState(ctx context.Context, s *recipe.Session) (State, int32, error) {
	st := State{Alerts: map[string]*Alert{}}
	var data []byte
	var stat *zk.Stat
	err := s.Retry(ctx, func() (err error) {
		data, stat, err = s.Get(ctx, StatePath)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return st, -1, nil
	}
	if err != nil {
		return st, 0, fmt.Errorf("monitor: read %s: %w", StatePath, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return State{Alerts: map[string]*Alert{}}, stat.Version, fmt.Errorf("%w: %s: %v: starting from an empty state", ErrBadState, StatePath, err)
	}
	if st.Alerts == nil {
		st.Alerts = map[string]*Alert{}
	}
	return st, stat.Version, nil
}

// ErrNotActive reports a state write refused because this monitor's term
// is over (or another monitor wrote meanwhile).
var ErrNotActive = errors.New("monitor: not the active monitor any more")

// writeState writes st on condition that the election node of this
// monitor's term still exists and nobody wrote the state since version
// (-1: it did not exist). It returns the new version.
func writeState(ctx context.Context, s *recipe.Session, termNode string, st *State, version int32) (int32, error) {
	st.Version = stateVersion
	trimState(st)
	data, err := encodeState(st)
	if err != nil {
		return version, err
	}
	check := &zk.CheckVersionRequest{Path: termNode, Version: 0}
	var op any = &zk.SetDataRequest{Path: StatePath, Data: data, Version: version}
	if version < 0 {
		if err := s.EnsurePath(ctx, Root); err != nil {
			return version, fmt.Errorf("monitor: create %s: %w", Root, err)
		}
		op = &zk.CreateRequest{Path: StatePath, Data: data, Flags: zk.FlagPersistent}
	}
	_, err = s.Multi(ctx, check, op)
	switch {
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists):
		return version, fmt.Errorf("%w: %v", ErrNotActive, err)
	case err != nil:
		return version, fmt.Errorf("monitor: write %s: %w", StatePath, err)
	}
	return version + 1, nil
}

// maxStateBytes bounds the state document, below the 1 MB a ZooKeeper
// node holds (jute.maxbuffer) with room for the request around it.
const maxStateBytes = 768 << 10

// encodeState encodes st; a document over maxStateBytes loses the
// history's older source samples and events first (lag is measured
// coarser for a while), and is an error if still too large.
func encodeState(st *State) ([]byte, error) {
	for keep := maxSamples / 2; ; keep /= 2 {
		data, err := json.Marshal(st)
		if err != nil {
			return nil, fmt.Errorf("monitor: encode state: %w", err)
		}
		if len(data) <= maxStateBytes {
			return data, nil
		}
		if keep == 0 {
			return nil, fmt.Errorf("monitor: state of %d alerts and %d tasks is %d bytes, over %d: too many tasks or alerts for one monitor state", len(st.Alerts), len(st.History.Tasks), len(data), maxStateBytes)
		}
		for _, th := range st.History.Tasks {
			if th != nil && len(th.Samples) > keep {
				th.Samples = th.Samples[len(th.Samples)-keep:]
			}
		}
		if len(st.Events) > keep {
			st.Events = st.Events[len(st.Events)-keep:]
		}
	}
}

// trimState keeps the state document within its bounds.
func trimState(st *State) {
	if n := len(st.Events); n > maxEvents {
		st.Events = slices.Clone(st.Events[n-maxEvents:])
	}
	if n := len(st.Outbox); n > maxOutbox {
		st.Outbox = slices.Clone(st.Outbox[n-maxOutbox:])
	}
}

// Silence mutes the alerts whose rule and labels match all of Matchers
// ("rule" matches the rule name) until EndsAt.
type Silence struct {
	Version  int               `json:"version"`
	ID       string            `json:"id"`
	Matchers map[string]string `json:"matchers"`
	EndsAt   time.Time         `json:"endsAt"`
	Comment  string            `json:"comment,omitempty"`
	By       string            `json:"by,omitempty"`
}

// Matches reports whether the silence covers f at now.
func (sl Silence) Matches(f Finding, now time.Time) bool {
	if !now.Before(sl.EndsAt) || len(sl.Matchers) == 0 {
		return false
	}
	for k, v := range sl.Matchers {
		got, ok := f.Labels[k]
		switch k {
		case "rule", "alertname":
			got, ok = f.Rule, true
		case "severity":
			got, ok = string(f.Severity), true
		}
		if !ok || got != v {
			return false
		}
	}
	return true
}

// SilencedBy returns the first of sils that covers f at now.
func SilencedBy(sils []Silence, f Finding, now time.Time) (Silence, bool) {
	i := slices.IndexFunc(sils, func(sl Silence) bool { return sl.Matches(f, now) })
	if i < 0 {
		return Silence{}, false
	}
	return sils[i], true
}

// Errors of the silence functions.
var (
	// ErrInvalidSilence: a silence id or silence that cannot be stored.
	ErrInvalidSilence = errors.New("monitor: invalid silence")
	// ErrNoSilence: no silence of that id.
	ErrNoSilence = errors.New("monitor: no such silence")
)

var silenceIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// NewSilenceID returns a fresh silence id made at now, s-<UTC
// time>-<random>: two made in the same second (two operators) do not
// replace each other.
func NewSilenceID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return "s-" + now.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// checkSilenceID refuses an id that is not one node name under
// SilencesPath.
func checkSilenceID(id string) error {
	if !silenceIDRe.MatchString(id) {
		return fmt.Errorf("%w: id %q: letters, digits, '.', '_', '-', at most 64", ErrInvalidSilence, id)
	}
	return nil
}

// AddSilence stores a silence under SilencesPath/<id>, with the session's
// ACL. A monitor honours it only if no session without that identity
// could have written it (Session.CheckTrusted).
func AddSilence(ctx context.Context, s *recipe.Session, sl Silence) error {
	if err := checkSilenceID(sl.ID); err != nil {
		return err
	}
	if len(sl.Matchers) == 0 {
		return fmt.Errorf("%w: %s matches nothing: give rule=NAME and/or labels (task=t)", ErrInvalidSilence, sl.ID)
	}
	sl.Version = stateVersion
	data, err := json.Marshal(sl)
	if err != nil {
		return err
	}
	return s.Retry(ctx, func() error {
		if err := s.EnsurePath(ctx, SilencesPath); err != nil {
			return err
		}
		_, err := s.Create(ctx, path.Join(SilencesPath, sl.ID), data, zk.FlagPersistent, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = s.Set(ctx, path.Join(SilencesPath, sl.ID), data, -1)
		}
		return err
	})
}

// RemoveSilence deletes a silence. An id that is not a silence's name
// ("../state") is refused before anything is deleted.
func RemoveSilence(ctx context.Context, s *recipe.Session, id string) error {
	if err := checkSilenceID(id); err != nil {
		return err
	}
	err := s.Retry(ctx, func() error { return s.Delete(ctx, path.Join(SilencesPath, id), -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %q: shepherd ctl alert list shows the silences and their ids", ErrNoSilence, id)
	}
	return err
}

// Silences reads the silences. With trusted, only those that pass
// Session.CheckTrusted are returned, and refused ones are in refused with
// the reason.
func Silences(ctx context.Context, s *recipe.Session, trusted bool) (out []Silence, refused map[string]string, err error) {
	var names []string
	err = s.Retry(ctx, func() (err error) {
		names, _, err = s.Children(ctx, SilencesPath)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("monitor: list %s: %w", SilencesPath, err)
	}
	slices.Sort(names)
	if len(names) > maxSilences {
		names = names[:maxSilences]
	}
	refused = map[string]string{}
	for _, n := range names {
		p := path.Join(SilencesPath, n)
		if trusted {
			if err := s.CheckTrusted(ctx, Root, p); err != nil {
				refused[n] = err.Error()
				continue
			}
		}
		var data []byte
		err := s.Retry(ctx, func() (err error) {
			data, _, err = s.Get(ctx, p)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("monitor: read %s: %w", p, err)
		}
		var sl Silence
		if err := json.Unmarshal(data, &sl); err != nil {
			refused[n] = fmt.Sprintf("does not decode: %v", err)
			continue
		}
		sl.ID = n
		out = append(out, sl)
	}
	return out, refused, nil
}
