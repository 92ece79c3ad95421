package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/monitor"
)

// The console shows the alerts of `shepherd monitor` from the monitor's
// own state and silences (package monitor's ReadState and Silences, the
// functions `ctl alert list` calls). Package cluster cannot carry them in
// the snapshot (the monitor reads the snapshot), so the console reads
// them beside it: at most once per snapshot of the feed, shared by every
// page, API call and event stream (alertCache), and again after a
// silence changes.

// alertReadTimeout bounds one read of the monitor's state and silences.
const alertReadTimeout = 5 * time.Second

// Bounds of a silence made through the console.
const (
	maxSilenceFor     = 30 * 24 * time.Hour
	maxSilenceComment = 1000
	maxResolvedShown  = 50
)

// alertBoard is the monitor's alerts and silences as read at ReadAt.
type alertBoard struct {
	ReadAt time.Time `json:"readAt"`
	// Monitor is the active monitor that wrote the state, at Updated;
	// empty when no monitor has evaluated yet.
	Monitor string    `json:"monitor"`
	Updated time.Time `json:"updated"`
	// Alerts firing and pending: firing first, then critical first, the
	// oldest first.
	Alerts []alertView `json:"alerts"`
	// Resolved are the latest resolutions the monitor notified, newest
	// first.
	Resolved []monitor.Notification `json:"resolved"`
	Silences []silenceView          `json:"silences"`
	// Refused are silences the monitor does not honour, with why.
	Refused map[string]string `json:"refusedSilences,omitempty"`
	// Error says what could not be read.
	Error string `json:"error,omitempty"`
}

// alertView is one alert as the console shows it.
type alertView struct {
	// Key names the alert in POST /api/v1/silences.
	Key string `json:"key"`
	monitor.Alert
	// SilencedBy is the silence that covers the alert now, if any.
	SilencedBy string `json:"silencedBy,omitempty"`
}

// Muted reports whether the alert notifies nobody: it fired under a
// silence, or one covers it now.
func (a alertView) Muted() bool { return a.Silenced || a.SilencedBy != "" }

// At is when a firing alert fired, or when a pending one's condition was
// first seen.
func (a alertView) At() time.Time {
	if a.State == monitor.StateFiring && !a.FiredAt.IsZero() {
		return a.FiredAt
	}
	return a.Since
}

// silenceView is a silence and whether it is still in force.
type silenceView struct {
	monitor.Silence
	Active bool `json:"active"`
}

// readAlerts reads the monitor's state and the silences it honours.
func readAlerts(ctx context.Context, s *recipe.Session, now time.Time) *alertBoard {
	b := &alertBoard{ReadAt: now, Alerts: []alertView{}, Resolved: []monitor.Notification{}, Silences: []silenceView{}}
	var errs []string
	st, _, err := monitor.ReadState(ctx, s)
	if err != nil {
		errs = append(errs, err.Error())
	}
	sils, refused, err := monitor.Silences(ctx, s, true)
	if err != nil {
		errs = append(errs, err.Error())
	}
	b.Error = strings.Join(errs, "; ")
	b.Monitor, b.Updated, b.Refused = st.Active, st.Updated, refused
	for _, sl := range sils {
		b.Silences = append(b.Silences, silenceView{Silence: sl, Active: now.Before(sl.EndsAt)})
	}
	for k, a := range st.Alerts {
		v := alertView{Key: k, Alert: *a}
		if sl, ok := monitor.SilencedBy(sils, a.Finding, now); ok {
			v.SilencedBy = sl.ID
		}
		b.Alerts = append(b.Alerts, v)
	}
	slices.SortFunc(b.Alerts, func(x, y alertView) int {
		return cmp.Or(
			cmp.Compare(rank(x.State != monitor.StateFiring), rank(y.State != monitor.StateFiring)),
			cmp.Compare(rank(x.Severity != monitor.Critical), rank(y.Severity != monitor.Critical)),
			x.At().Compare(y.At()), cmp.Compare(x.Key, y.Key))
	})
	for i := len(st.Events) - 1; i >= 0 && len(b.Resolved) < maxResolvedShown; i-- {
		if st.Events[i].Status == monitor.StatusResolved {
			b.Resolved = append(b.Resolved, st.Events[i])
		}
	}
	return b
}

func rank(later bool) int {
	if later {
		return 1
	}
	return 0
}

// Firing returns the firing alerts whose label name is value (task=orders),
// or all firing alerts for an empty name.
func (b *alertBoard) Firing(name, value string) []alertView {
	var out []alertView
	for _, a := range b.Alerts {
		if a.State == monitor.StateFiring && (name == "" || a.Labels[name] == value) {
			out = append(out, a)
		}
	}
	return out
}

// find returns the alert of key.
func (b *alertBoard) find(key string) (alertView, bool) {
	i := slices.IndexFunc(b.Alerts, func(a alertView) bool { return a.Key == key })
	if i < 0 {
		return alertView{}, false
	}
	return b.Alerts[i], true
}

// alertBanner is the line at the top of every page while a critical
// alert fires that no silence covers, or while the alerts cannot be read
// (an operator must not take that for "all clear"). An empty Text: no
// banner.
type alertBanner struct {
	Text     string `json:"text"`
	Critical int    `json:"critical"`
	Unknown  bool   `json:"unknown,omitempty"`
}

// bannerShown is how many alerts the banner names.
const bannerShown = 3

// Banner is the banner of b.
func (b *alertBoard) Banner() alertBanner {
	var names []string
	n := 0
	for _, a := range b.Firing("", "") {
		if a.Severity != monitor.Critical || a.Muted() {
			continue
		}
		if n++; n <= bannerShown {
			names = append(names, strings.TrimSpace(a.Rule+" "+monitor.FormatLabels(a.Labels)))
		}
	}
	switch {
	case n > 0:
		text := fmt.Sprintf("%s firing: %s", plural(n, "critical alert"), strings.Join(names, "; "))
		if n > bannerShown {
			text += fmt.Sprintf(" and %d more", n-bannerShown)
		}
		return alertBanner{Text: text, Critical: n}
	case b.Error != "":
		return alertBanner{Text: "Alerts unknown: the monitor's state could not be read: " + b.Error, Unknown: true}
	}
	return alertBanner{}
}

// alertCache keeps the board read for the newest snapshot: every reader
// of one snapshot shares one read; the next snapshot (the feed's poll)
// or a silence changed here reads again. mu is held during a read, so
// that concurrent readers wait for it instead of reading too.
type alertCache struct {
	mu    sync.Mutex
	after time.Time // ReadAt of the snapshot board was read for
	board *alertBoard
}

// alertsFor returns the alerts as read after snap (or a newer one).
func (s *Server) alertsFor(ctx context.Context, snap *Snapshot) *alertBoard {
	c := &s.alerts
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.board != nil && !snap.ReadAt.After(c.after) {
		return c.board
	}
	// Not cut short by the one request that happens to read for all.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), alertReadTimeout)
	defer cancel()
	c.board, c.after = readAlerts(rctx, s.deps.Session, s.deps.Now()), snap.ReadAt
	return c.board
}

// invalidate makes the next reader read again.
func (c *alertCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.board = nil
}

// board is the alerts for the newest snapshot, or 503 before the first.
func (s *Server) board(ctx context.Context) (*alertBoard, error) {
	snap, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	return s.alertsFor(ctx, snap), nil
}

func (s *Server) apiAlerts(w http.ResponseWriter, r *http.Request, p principal) error {
	b, err := s.board(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

// silenceRequest is the body of POST /api/v1/silences: one alert (its
// key) or matchers as `ctl alert silence` takes them, for how long
// (a Go duration: "2h", "90m"), and why.
type silenceRequest struct {
	Alert    string            `json:"alert"`
	Matchers map[string]string `json:"matchers"`
	For      string            `json:"for"`
	Comment  string            `json:"comment"`
}

// silence builds the silence req asks for, made by user at now.
func (req silenceRequest) silence(b *alertBoard, user string, now time.Time) (monitor.Silence, error) {
	d, err := time.ParseDuration(req.For)
	if err != nil || d <= 0 || d > maxSilenceFor {
		return monitor.Silence{}, errorf(http.StatusBadRequest, "invalid", fmt.Sprintf("for %q: want a duration such as \"2h\" or \"90m\", more than 0 and at most %v", req.For, maxSilenceFor))
	}
	if len(req.Comment) > maxSilenceComment {
		return monitor.Silence{}, errorf(http.StatusBadRequest, "invalid", fmt.Sprintf("comment: %d bytes, at most %d", len(req.Comment), maxSilenceComment))
	}
	matchers := map[string]string{}
	switch {
	case (req.Alert == "") == (len(req.Matchers) == 0):
		return monitor.Silence{}, errorf(http.StatusBadRequest, "invalid", "give either alert (a key from GET /api/v1/alerts) or matchers ({\"rule\": \"TaskFailed\", \"task\": \"orders\"})")
	case req.Alert != "":
		a, ok := b.find(req.Alert)
		if !ok {
			return monitor.Silence{}, errorf(http.StatusBadRequest, "unknown_alert", fmt.Sprintf("alert %s is neither firing nor pending (any more): GET /api/v1/alerts lists the alerts and their keys", req.Alert))
		}
		// Rule, labels and severity: a warning silenced does not mute the
		// same condition turned critical.
		for k, v := range a.Labels {
			matchers[k] = v
		}
		matchers["rule"], matchers["severity"] = a.Rule, string(a.Severity)
	default:
		for k, v := range req.Matchers {
			if k == "" || v == "" {
				return monitor.Silence{}, errorf(http.StatusBadRequest, "invalid", fmt.Sprintf("matcher %q=%q: want a name and a value (rule=TaskFailed, task=orders, job=…, collector=…, server=…)", k, v))
			}
			matchers[k] = v
		}
	}
	return monitor.Silence{ID: monitor.NewSilenceID(now), Matchers: matchers, EndsAt: now.Add(d).UTC(),
		Comment: req.Comment, By: "console " + user}, nil
}

func (s *Server) apiAddSilence(w http.ResponseWriter, r *http.Request, p principal) error {
	var req silenceRequest
	if err := readJSON(w, r, &req); err != nil {
		return err
	}
	b, err := s.board(r.Context())
	if err != nil {
		return err
	}
	sl, err := req.silence(b, p.User, s.deps.Now())
	if err != nil {
		return err
	}
	err = monitor.AddSilence(r.Context(), s.deps.Session, sl)
	s.alerts.invalidate()
	s.record(r, p, "alert.silence", "silence/"+sl.ID, nil, sl, err)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/silences/"+sl.ID)
	writeJSON(w, http.StatusCreated, sl)
	return nil
}

func (s *Server) apiRemoveSilence(w http.ResponseWriter, r *http.Request, p principal) error {
	id := r.PathValue("id")
	var before any
	if b, err := s.board(r.Context()); err == nil {
		if i := slices.IndexFunc(b.Silences, func(sl silenceView) bool { return sl.ID == id }); i >= 0 {
			before = b.Silences[i].Silence
		}
	}
	err := monitor.RemoveSilence(r.Context(), s.deps.Session, id)
	s.alerts.invalidate()
	s.record(r, p, "alert.unsilence", "silence/"+id, before, nil, err)
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// humanAgo writes how long ago (or, negative, how far ahead) d is, to
// the largest unit: "45s ago", "3m ago", "2h ago", "in 5d".
func humanAgo(d time.Duration) string {
	ahead := d < 0
	if ahead {
		d = -d
	}
	var n string
	switch {
	case d < time.Minute:
		n = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		n = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		n = fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		n = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	if ahead {
		return "in " + n
	}
	return n + " ago"
}
