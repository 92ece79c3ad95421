package monitor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/replication"
)

// Deps are what a monitor uses, owned by the caller.
type Deps struct {
	// Session is the monitor's own (authenticated) session.
	Session *recipe.Session
	// Feed hands out the cluster snapshots (the process's one poller).
	Feed cluster.Feed
	// Logger; nil is slog.Default().
	Logger *slog.Logger
	// Gatherer, if set, is served beside the monitor's metrics (the
	// process's own metrics).
	Gatherer prometheus.Gatherer
	// Now and ReadSource replace the clock and the source reader in tests;
	// nil is time.Now and ReadSource.
	Now        func() time.Time
	ReadSource func(ctx context.Context, ep core.Endpoint, password string, now time.Time) SourceReading
	// ProbeSource looks at a task's source candidate (SourceFailoverUnsafe);
	// nil is replication.ProbeSource.
	ProbeSource func(ctx context.Context, ep core.Endpoint, password string) replication.SourceHealth
}

// Monitor evaluates the rules and sends notifications while it is the
// active monitor, and watches the active one while it stands by.
type Monitor struct {
	cfg      Config
	deps     Deps
	log      *slog.Logger
	chans    []Notifier
	holds    map[string]time.Duration
	election *recipe.Election
	admin    *core.Admin
	metrics  *metrics
	series   *seriesWriter

	// standby is the MonitorStandbyOnly alert this monitor raised, until
	// delivered; noActiveSince is when it first saw no active monitor
	// (both owned by Run's goroutine).
	standby       *Notification
	noActiveSince time.Time
	// wasActive: this monitor led at its last tick; outage is set while
	// it judges an outage of the coordination service (outage.go).
	wasActive bool
	outage    *outage

	// sources is what the active monitor remembers of source readings
	// between evaluations (sources.go); owned by Run's goroutine.
	sources *sourceMemory

	// checkStateTrusted is Session.CheckTrusted; tests make it fail.
	checkStateTrusted func(ctx context.Context, base, p string) error
}

// New returns a monitor; nothing happens until Run.
func New(cfg Config, deps Deps) (*Monitor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Session == nil || deps.Feed == nil {
		return nil, errors.New("monitor: a session and a snapshot feed are required")
	}
	deps.Logger = cmp.Or(deps.Logger, slog.Default())
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.ProbeSource == nil {
		log := deps.Logger
		if log == nil {
			log = slog.Default()
		}
		deps.ProbeSource = func(ctx context.Context, ep core.Endpoint, password string) replication.SourceHealth {
			return replication.ProbeSource(ctx, replication.Endpoint{Host: ep.Host, Port: ep.Port, User: ep.User, Password: password, Flavor: ep.Flavor}, log)
		}
	}
	if deps.ReadSource == nil {
		deps.ReadSource = ReadSource
	}
	if cfg.Name == "" {
		host, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s-%d", cmp.Or(host, "monitor"), os.Getpid())
	}
	chans, err := cfg.Channels(context.Background())
	if err != nil {
		return nil, err
	}
	if len(chans) == 0 {
		deps.Logger.Warn("monitor: no notification channel configured (--webhook URL or a config file): alerts are only logged and exported")
	}
	m := &Monitor{
		cfg: cfg, deps: deps, log: deps.Logger.With("monitor", cfg.Name), chans: chans, holds: cfg.holds(),
		election: recipe.NewElection(deps.Session, ElectionPath, cfg.Name),
		admin:    core.NewAdmin(deps.Session, cfg.CoreRoot),

		sources:           newSourceMemory(cfg.Interval),
		checkStateTrusted: deps.Session.CheckTrusted,
	}
	m.metrics = newMetrics(m)
	m.series = newSeriesWriter(deps.Session, m.log, m.metrics.seriesWrites.Inc)
	return m, nil
}

// Run evaluates every Interval until ctx ends: as the active monitor if
// it wins the election, as a standby otherwise.
func (m *Monitor) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	if !m.cfg.StandbyOnly {
		wg.Go(func() { m.campaign(ctx) })
	}
	defer m.election.Resign()
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		m.tick(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// campaign keeps this monitor a candidate until ctx ends.
func (m *Monitor) campaign(ctx context.Context) {
	for ctx.Err() == nil {
		if err := m.election.Campaign(ctx); err != nil {
			if ctx.Err() == nil {
				m.log.Warn("monitor: election", "error", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		m.log.Info("monitor: active")
		select {
		case <-m.election.Lost():
			m.log.Warn("monitor: no longer active: leadership lost")
		case <-ctx.Done():
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (m *Monitor) tick(ctx context.Context) {
	if m.watchOutage(ctx, m.wasActive) {
		return
	}
	m.wasActive = m.election.IsLeader()
	if m.wasActive {
		m.metrics.active.Set(1)
		m.noActiveSince = time.Time{}
		if err := m.evaluate(ctx, m.election.Node()); err != nil {
			m.log.Warn("monitor: evaluation", "error", err)
		}
		return
	}
	m.metrics.active.Set(0)
	if err := m.watchActive(ctx); err != nil {
		m.log.Warn("monitor: standby check", "error", err)
	}
}

// evaluate is one evaluation by the active monitor whose election node
// is termNode: rules, alert state, notifications, then the tasks' series.
func (m *Monitor) evaluate(ctx context.Context, termNode string) error {
	began := time.Now()
	defer func() { m.metrics.evaluationSeconds.Observe(time.Since(began).Seconds()) }()
	now := m.deps.Now()
	snap := m.deps.Feed.Latest()
	if snap == nil {
		return nil // no snapshot yet
	}
	s := m.deps.Session
	st, version, err := ReadState(ctx, s)
	switch {
	case errors.Is(err, ErrBadState):
		m.log.Error("monitor: state", "error", err)
	case err != nil:
		return err
	}
	if version >= 0 {
		// The outbox is sent: only a state no other identity could have
		// written is taken up. An untrusted one (its node or an ancestor
		// another session made) is refused as every role refuses one,
		// with the fix in the error: starting over from an empty state
		// instead sent every alert again at each evaluation.
		if err := m.checkStateTrusted(ctx, Root, StatePath); err != nil {
			return err
		}
	}
	readings, candidates := m.readSources(ctx, snap, now)
	in := Input{Now: now, Snap: snap, Sources: readings, Candidates: candidates, History: Observe(st.History, snap, readings, now)}
	findings := append(m.findings(&in), Unjudged(&in, st.Alerts)...)
	silences, refused, err := Silences(ctx, s, true)
	if err != nil {
		m.log.Warn("monitor: silences not read; none applied", "error", err)
	}
	for id, why := range refused {
		m.log.Warn("monitor: silence refused", "silence", id, "reason", why)
	}
	silenced := func(f Finding) bool {
		_, ok := SilencedBy(silences, f, now)
		return ok
	}
	alerts, notes := Step(st.Alerts, findings, m.holds, m.cfg.RepeatInterval, silenced, now)
	standby, standbyVersion := m.standbyAlert(ctx)
	if standby != nil {
		a := Alert{Finding: Finding{Rule: standby.Rule, Severity: standby.Severity, Labels: standby.Labels, Summary: standby.Summary, Fix: standby.Fix},
			State: StateFiring, FiredAt: standby.StartsAt}
		notes = append(notes, a.notification(StatusResolved, now))
	}
	st.Alerts, st.History, st.Active, st.Updated = alerts, in.History, m.cfg.Name, now
	if len(notes) > 0 {
		slices.SortStableFunc(notes, func(a, b Notification) int { return cmp.Compare(ruleIndex(a.Rule), ruleIndex(b.Rule)) })
		st.Outbox = append(st.Outbox, Outgoing{Batch: Batch{Monitor: m.cfg.Name, Notifications: notes}, Decided: now})
		st.Events = append(st.Events, notes...)
	}
	if version, err = writeState(ctx, s, termNode, &st, version); err != nil {
		return err
	}
	if standby != nil {
		if err := s.Delete(ctx, StandbyPath, standbyVersion); err != nil && !errors.Is(err, zk.ErrNoNode) {
			m.log.Warn("monitor: delete "+StandbyPath, "error", err)
		}
	}
	m.metrics.observe(&in, findings, alerts)
	if err := m.flush(ctx, termNode, &st, version); err != nil {
		return err
	}
	// After the notifications, which matter more; a failure is retried
	// at the next evaluation and holds up nothing else.
	if err := m.series.record(ctx, termNode, &in); err != nil {
		m.log.Warn("monitor: series", "error", err)
	}
	return nil
}

// findings runs every rule but MonitorStandbyOnly (a standby's).
func (m *Monitor) findings(in *Input) []Finding {
	var out []Finding
	for _, r := range Rules() {
		if r.Name != RuleMonitorStandbyOnly {
			out = append(out, r.Eval(in, &m.cfg.Rules)...)
		}
	}
	return out
}

func ruleIndex(name string) int {
	return slices.IndexFunc(Rules(), func(r Rule) bool { return r.Name == name })
}

// flush delivers the outbox: each batch to the channels it has not
// reached, then records what was delivered. A batch is recorded as
// decided before any channel gets it, so a monitor taking over sends
// what this one did not; the one repeat possible is of a batch delivered
// just before this monitor died, carrying the same notification IDs.
func (m *Monitor) flush(ctx context.Context, termNode string, st *State, version int32) error {
	if len(st.Outbox) == 0 {
		return nil
	}
	now := m.deps.Now()
	keep := st.Outbox[:0]
	for _, o := range st.Outbox {
		if !o.Attempted {
			o.Attempted = true
			o.Pending = nil
			for _, c := range m.chans {
				o.Pending = append(o.Pending, c.Name())
			}
		}
		var chans []Notifier
		for _, c := range m.chans {
			if slices.Contains(o.Pending, c.Name()) {
				chans = append(chans, c)
			}
		}
		o.Pending = o.Pending[:0]
		for name, err := range deliver(ctx, chans, o.Batch) {
			m.metrics.notification(name, err)
			if err != nil {
				o.Pending, o.LastError = append(o.Pending, name), err.Error()
				m.log.Warn("monitor: notification not delivered; retried next evaluation", "channel", name, "error", err)
			}
		}
		m.logNotes(o.Batch.Notifications)
		switch {
		case len(o.Pending) == 0:
		case now.Sub(o.Decided) > outboxMaxAge:
			m.log.Error("monitor: notification dropped: channels failed for a day", "channels", o.Pending, "error", o.LastError)
		default:
			keep = append(keep, o)
		}
	}
	st.Outbox = keep
	_, err := writeState(ctx, m.deps.Session, termNode, st, version)
	return err
}

// logNotes logs each notification sent.
func (m *Monitor) logNotes(ns []Notification) {
	for _, n := range ns {
		m.log.Info("monitor: alert "+n.Status, "rule", n.Rule, "labels", n.Labels, "summary", n.Summary, "id", n.ID)
	}
}

// staleAfter is how old the active monitor's last state may be before
// standbys call it gone: three evaluations and a session timeout, so
// that a failover in progress does not count.
func (m *Monitor) staleAfter() time.Duration {
	return 3*m.cfg.Interval + 2*m.deps.Session.Timeout()
}

// watchActive is a standby's check of the active monitor: with none
// leading, or none writing its state for staleAfter, the first standby
// to see it raises MonitorStandbyOnly (creating StandbyPath decides who)
// and sends it through its own channels.
func (m *Monitor) watchActive(ctx context.Context) error {
	now := m.deps.Now()
	if m.standby != nil { // raised, not yet delivered
		return m.sendStandby(ctx)
	}
	status := ""
	active := func() error { m.noActiveSince = time.Time{}; return nil }
	leader, err := m.election.Leader(ctx)
	switch {
	case errors.Is(err, recipe.ErrNoLeader) || (err == nil && leader == ""):
		status = "no monitor is a candidate in " + ElectionPath
	case err != nil:
		return err
	default:
		st, version, err := ReadState(ctx, m.deps.Session)
		if err != nil {
			return err
		}
		if version < 0 || now.Sub(st.Updated) <= m.staleAfter() {
			return active() // (a new cluster's leader has not evaluated yet)
		}
		status = fmt.Sprintf("%s leads the election but its last evaluation was at %s", leader, st.Updated.UTC().Format(time.RFC3339))
	}
	if m.noActiveSince.IsZero() {
		m.noActiveSince = now
	}
	if now.Sub(m.noActiveSince) < m.holds[RuleMonitorStandbyOnly] {
		return nil
	}
	in := Input{Now: now, NoActiveMonitor: true, ActiveMonitorStatus: status, Snap: &cluster.Snapshot{}}
	a := &Alert{Finding: monitorStandbyOnly(&in, &m.cfg.Rules)[0], State: StateFiring, Since: m.noActiveSince, FiredAt: now}
	n := a.notification(StatusFiring, now)
	data, err := json.Marshal(n)
	if err != nil {
		return err
	}
	if err := m.deps.Session.EnsurePath(ctx, Root); err != nil {
		return err
	}
	if _, err := m.deps.Session.Create(ctx, StandbyPath, data, zk.FlagPersistent, nil); err != nil {
		if errors.Is(err, zk.ErrNodeExists) {
			return nil // another standby raised it
		}
		return err
	}
	m.log.Error("monitor: no active monitor", "status", status)
	m.standby = &n
	return m.sendStandby(ctx)
}

func (m *Monitor) sendStandby(ctx context.Context) error {
	var errs []error
	for name, err := range deliver(ctx, m.chans, Batch{Monitor: m.cfg.Name, Notifications: []Notification{*m.standby}}) {
		m.metrics.notification(name, err)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	m.standby = nil
	return nil
}

// standbyAlert returns the MonitorStandbyOnly alert a standby raised, if
// any, for the active monitor to resolve.
func (m *Monitor) standbyAlert(ctx context.Context) (*Notification, int32) {
	data, stat, err := m.deps.Session.Get(ctx, StandbyPath)
	if err != nil {
		return nil, 0
	}
	var n Notification
	if err := m.deps.Session.CheckTrusted(ctx, Root, StandbyPath); err != nil || json.Unmarshal(data, &n) != nil || n.Rule != RuleMonitorStandbyOnly {
		n = Notification{Rule: RuleMonitorStandbyOnly, Severity: Critical, Labels: map[string]string{}, Summary: "no monitor was active"}
	}
	return &n, stat.Version
}
