package monitor

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/replication"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// metrics are the monitor's Prometheus metrics: cluster-wide gauges read
// from the newest snapshot at each scrape, the measures only the active
// monitor takes (lag against the source, binary logs at risk) from its
// last evaluation, and its own counters.
type metrics struct {
	m   *Monitor
	reg *prometheus.Registry

	active        prometheus.Gauge
	notifications *prometheus.CounterVec
	evaluations   prometheus.Counter
	seriesWrites  prometheus.Counter
	// evaluationSeconds is how long evaluations take: one that outlasts
	// the interval delays the next.
	evaluationSeconds prometheus.Histogram
	sourceReads       *prometheus.CounterVec

	mu   sync.Mutex
	last *evaluation // of the last evaluation as active monitor
}

// evaluation is what the last evaluation measured, for scrapes.
type evaluation struct {
	at     time.Time
	lag    map[string]float64 // by task, when known
	risk   map[string]bool    // BinlogPurgeRisk by task
	purged map[string]bool
	unsafe map[string]bool   // SourceFailoverUnsafe found
	firing map[[2]string]int // by rule, severity
	// unchanged is how long each task's lastCommit has stayed where it
	// is; ahead whether its source is past it.
	unchanged map[string]float64
	ahead     map[string]bool
	// running is, by job, how long its oldest running run has run.
	running map[string]float64
}

func newMetrics(m *Monitor) *metrics {
	x := &metrics{m: m, reg: prometheus.NewRegistry()}
	x.active = prometheus.NewGauge(prometheus.GaugeOpts{Name: "shepherd_monitor_active", Help: "1 if this monitor is the active (elected) one."})
	x.notifications = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shepherd_monitor_notifications_total",
		Help: "Notification deliveries by channel and result (ok, error)."}, []string{"channel", "result"})
	x.evaluations = prometheus.NewCounter(prometheus.CounterOpts{Name: "shepherd_monitor_evaluations_total", Help: "Rule evaluations by this monitor as the active one."})
	x.seriesWrites = prometheus.NewCounter(prometheus.CounterOpts{Name: "shepherd_monitor_series_writes_total",
		Help: "Writes of tasks' lag and rows/s series (" + SeriesPath + "/<task>) by this monitor."})
	x.evaluationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "shepherd_monitor_evaluation_duration_seconds",
		Help: "How long an evaluation as the active monitor took, source readings included.", Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30, 60}})
	x.sourceReads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shepherd_monitor_source_reads_total",
		Help: "Source readings by result: ok, error, backoff (a failed source not read again yet), cached (a stopped task's recent reading), budget (not read: the evaluation's time ran out)."}, []string{"result"})
	x.reg.MustRegister(x.active, x.notifications, x.evaluations, x.seriesWrites, x.evaluationSeconds, x.sourceReads, x)
	return x
}

func (x *metrics) sourceRead(result string) { x.sourceReads.WithLabelValues(result).Inc() }

func (x *metrics) notification(channel string, err error) {
	res := "ok"
	if err != nil {
		res = "error"
	}
	x.notifications.WithLabelValues(channel, res).Inc()
}

// observe records an evaluation's measures.
func (x *metrics) observe(in *Input, findings []Finding, alerts map[string]*Alert) {
	ev := &evaluation{at: in.Now, lag: map[string]float64{}, risk: map[string]bool{}, purged: map[string]bool{}, unsafe: map[string]bool{}, firing: map[[2]string]int{},
		unchanged: map[string]float64{}, ahead: map[string]bool{}, running: map[string]float64{}}
	for _, ts := range in.Snap.Tasks {
		if h := in.History.Tasks[ts.Name]; h != nil && ts.LastCommit != nil {
			ev.unchanged[ts.Name] = in.Now.Sub(h.CheckpointSince).Seconds()
			if r, ok := in.Sources[ts.Name]; ok && r.Err == "" {
				c, ok := replication.CompareFilePositions(ts.LastCommit.Position(), r.Current())
				ev.ahead[ts.Name] = ok && c < 0
			}
		}
		if v := cluster.ViewTask(ts, in.History.Tasks[ts.Name].samples(), in.Now); v.LagKnown && !v.Position.IsZero() && v.State != cluster.TaskStopped {
			ev.lag[ts.Name] = v.Lag.Seconds()
		}
	}
	for _, js := range in.Snap.Jobs {
		for _, r := range js.Runs {
			if start, ok := runStart(in, r); ok && r.Running && r.Result == nil {
				ev.running[js.Name] = max(ev.running[js.Name], in.Now.Sub(start).Seconds())
			}
		}
	}
	for _, f := range findings {
		switch f.Rule {
		case RuleBinlogPurgeRisk:
			ev.risk[f.Labels["task"]] = true
		case RuleBinlogPurged:
			ev.purged[f.Labels["task"]] = true
		case RuleSourceFailoverUnsafe:
			ev.unsafe[f.Labels["task"]] = true
		}
	}
	for _, a := range alerts {
		if a.State == StateFiring {
			ev.firing[[2]string{a.Rule, string(a.Severity)}]++
		}
	}
	x.mu.Lock()
	x.last = ev
	x.mu.Unlock()
	x.evaluations.Inc()
}

func (ev *evaluation) runningOf(job string) (float64, bool) {
	if ev == nil {
		return 0, false
	}
	v, ok := ev.running[job]
	return v, ok
}

// The cluster-wide metrics' descriptions.
var (
	descTaskUp            = desc("shepherd_task_running", "1 if an instance of the task is RUNNING.", "task")
	descTaskDesired       = desc("shepherd_task_desired_running", "1 if the task's desired state is running.", "task")
	descTaskInstances     = desc("shepherd_task_instances", "Instances registered for the task.", "task")
	descTaskInstState     = desc("shepherd_task_instances_by_state", "Instances of the task in each state.", "task", "state")
	descTaskFailed        = desc("shepherd_task_failed", "1 if the task is FAILED (an instance, or a recorded failure).", "task")
	descTaskHot           = desc("shepherd_task_hot_standby", "1 if the task is in hot standby mode.", "task")
	descTaskReportedLag   = desc("shepherd_task_reported_lag_seconds", "Lag the task's RUNNING instance reports (age of its last event applied).", "task")
	descTaskLag           = desc("shepherd_task_lag_seconds", "Lag measured by the active monitor against the source's position: 0 for a task at its source's position, however idle.", "task")
	descCheckpointAge     = desc("shepherd_task_checkpoint_age_seconds", "Age of the task's lastCommit.", "task")
	descPurgeRisk         = desc("shepherd_task_binlog_purge_risk", "1 if the binary log the task's checkpoint needs is at risk (BinlogPurgeRisk).", "task")
	descPurged            = desc("shepherd_task_binlog_purged", "1 if the binary log the task's checkpoint needs is gone (BinlogPurged).", "task")
	descVerifyDiffs       = desc("shepherd_task_verify_differences", "Confirmed differences between source and target in the task's last verify report (TaskDataMismatch); absent before the first verify.", "task")
	descFailoverUnsafe    = desc("shepherd_task_source_failover_unsafe", "1 if no source candidate of the task could take over now (SourceFailoverUnsafe).", "task")
	descJobLastSuccess    = desc("shepherd_job_last_success_timestamp_seconds", "End of the job's newest successful run.", "job")
	descJobLastFailure    = desc("shepherd_job_last_failure_timestamp_seconds", "End of the job's newest failed or timed-out run.", "job")
	descJobLastDuration   = desc("shepherd_job_last_duration_seconds", "Duration of the job's newest finished run.", "job")
	descJobLastStatus     = desc("shepherd_job_last_status", "1 for the status of the job's newest finished run.", "job", "status")
	descJobRunning        = desc("shepherd_job_running", "Runs of the job in progress.", "job")
	descJobRunningSeconds = desc("shepherd_job_running_seconds", "How long the job's oldest run in progress has run (active monitor's measure).", "job")
	descJobWaitingOnTask  = desc("shepherd_job_waiting_on_task", "Runs of the job waiting on a freshness gate whose task will not move by itself (stopped, failed, missing).", "job")
	descUnchanged         = desc("shepherd_task_checkpoint_unchanged_seconds", "How long the task's lastCommit position has not moved (active monitor's measure).", "task")
	descSourceAhead       = desc("shepherd_task_source_ahead", "1 if the task's source is past its lastCommit position (active monitor's reading).", "task")
	descCollectorAlive    = desc("shepherd_collector_alive", "1 if the collector is alive by the assigner's rule.", "collector")
	descCollectorLeaving  = desc("shepherd_collector_leaving", "1 if the collector was stopped on purpose.", "collector")
	descCollectorLag      = desc("shepherd_collector_lag_bytes", "Bytes the collector knows it has not collected yet.", "collector")
	descCollectorLines    = desc("shepherd_collector_lines", "Lines committed over the sources the collector owns.", "collector")
	descSourceAssigned    = desc("shepherd_source_assigned", "1 if the log source is assigned to a collector.", "source")
	descServiceServed     = desc("shepherd_service_served_addresses", "Addresses the DNS registry's name is answered with: registered, healthy, unblocked and trusted.", "app", "domain")
	descServiceRegistered = desc("shepherd_service_registered_addresses", "Addresses registered under the DNS registry's name.", "app", "domain")
	descCoordUp           = desc("shepherd_coord_up", "1 if the coordination server answered.", "server")
	descCoordOutstanding  = desc("shepherd_coord_outstanding_requests", "Requests queued on the coordination server.", "server")
	descCoordLatency      = desc("shepherd_coord_avg_latency_ms", "Average request latency of the coordination server.", "server")
	descCoordZnodes       = desc("shepherd_coord_znodes", "Znodes on the coordination server.", "server")
	descCoordWatches      = desc("shepherd_coord_watches", "Watches on the coordination server.", "server")
	descSnapshotErrors    = desc("shepherd_snapshot_section_error", "1 if a section of the cluster snapshot could not be read.", "section")
	descSnapshotAge       = desc("shepherd_snapshot_age_seconds", "Age of the newest cluster snapshot.")
	descAlertsFiring      = desc("shepherd_monitor_alerts_firing", "Alerts firing by rule and severity, as of the active monitor's last evaluation.", "rule", "severity")
	descLastEvaluationAge = desc("shepherd_monitor_last_evaluation_timestamp_seconds", "When this monitor last evaluated the rules as the active one.")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// Describe is empty: the set of cluster-wide series follows the cluster,
// so the collector is unchecked.
func (x *metrics) Describe(chan<- *prometheus.Desc) {}

// Collect reads the newest snapshot.
func (x *metrics) Collect(ch chan<- prometheus.Metric) {
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	x.mu.Lock()
	ev := x.last
	x.mu.Unlock()
	if ev != nil {
		g(descLastEvaluationAge, float64(ev.at.UnixNano())/1e9)
		for k, n := range ev.firing {
			g(descAlertsFiring, float64(n), k[0], k[1])
		}
	}
	snap := x.m.deps.Feed.Latest()
	if snap == nil {
		return
	}
	now := x.m.deps.Now()
	g(descSnapshotAge, now.Sub(snap.ReadAt).Seconds())
	for sec := range snap.Errors {
		g(descSnapshotErrors, 1, string(sec))
	}
	for _, ts := range snap.Tasks {
		byState := map[string]int{}
		running, failed := false, ts.LastCommit != nil && ts.LastCommit.Failure != nil
		for _, in := range ts.Instances {
			byState[in.State.State]++
			running = running || in.State.State == core.StateRunning
			failed = failed || in.State.State == core.StateFailed
		}
		for st, n := range byState {
			g(descTaskInstState, float64(n), ts.Name, st)
		}
		g(descTaskUp, b(running), ts.Name)
		g(descTaskDesired, b(desiredRunning(ts)), ts.Name)
		g(descTaskHot, b(ts.Spec != nil && ts.Spec.Standby.Mode == core.ModeHot), ts.Name)
		g(descTaskInstances, float64(len(ts.Instances)), ts.Name)
		g(descTaskFailed, b(failed), ts.Name)
		if o, ok := ts.Owner(); ok && o.State.State == core.StateRunning {
			g(descTaskReportedLag, o.State.LagSeconds, ts.Name)
		}
		if ts.Verify != nil {
			g(descVerifyDiffs, float64(ts.Verify.Differences), ts.Name)
		}
		if ts.LastCommit != nil && !ts.LastCommit.Time.IsZero() {
			g(descCheckpointAge, now.Sub(ts.LastCommit.Time).Seconds(), ts.Name)
		}
		if ev != nil {
			if lag, ok := ev.lag[ts.Name]; ok {
				g(descTaskLag, lag, ts.Name)
			}
			if v, ok := ev.unchanged[ts.Name]; ok {
				g(descUnchanged, v, ts.Name)
			}
			if v, ok := ev.ahead[ts.Name]; ok {
				g(descSourceAhead, b(v), ts.Name)
			}
			g(descPurgeRisk, b(ev.risk[ts.Name]), ts.Name)
			g(descPurged, b(ev.purged[ts.Name]), ts.Name)
			g(descFailoverUnsafe, b(ev.unsafe[ts.Name]), ts.Name)
		}
	}
	for _, js := range snap.Jobs {
		running, stuck := 0, 0
		var lastOK, lastBad time.Time
		var newest *scheduler.Result
		for _, r := range js.Runs {
			if r.Running && r.Result == nil {
				running++
				if _, ok := r.Waiting.StuckGate(); ok {
					stuck++
				}
				continue
			}
			if r.Result == nil {
				continue
			}
			if newest == nil {
				newest = r.Result
			}
			end := r.Result.End
			switch r.Result.Status {
			case scheduler.Succeeded:
				if end.After(lastOK) {
					lastOK = end
				}
			case scheduler.Failed, scheduler.TimedOut, scheduler.Abandoned:
				if end.After(lastBad) {
					lastBad = end
				}
			}
		}
		g(descJobRunning, float64(running), js.Name)
		g(descJobWaitingOnTask, float64(stuck), js.Name)
		if v, ok := ev.runningOf(js.Name); ok {
			g(descJobRunningSeconds, v, js.Name)
		}
		if !lastOK.IsZero() {
			g(descJobLastSuccess, float64(lastOK.Unix()), js.Name)
		}
		if !lastBad.IsZero() {
			g(descJobLastFailure, float64(lastBad.Unix()), js.Name)
		}
		if newest != nil {
			g(descJobLastStatus, 1, js.Name, string(newest.Status))
			if !newest.Start.IsZero() && !newest.End.IsZero() {
				g(descJobLastDuration, newest.End.Sub(newest.Start).Seconds(), js.Name)
			}
		}
	}
	for _, c := range snap.Collectors {
		g(descCollectorAlive, b(c.Alive), c.Name)
		g(descCollectorLeaving, b(c.Leaving), c.Name)
		g(descCollectorLag, float64(c.Lag), c.Name)
		g(descCollectorLines, float64(c.Lines), c.Name)
	}
	for _, s := range snap.Sources {
		g(descSourceAssigned, b(s.Collector != ""), s.URI)
	}
	for _, s := range snap.Services {
		g(descServiceServed, float64(s.Served), s.App, s.Domain)
		g(descServiceRegistered, float64(len(s.Addresses)), s.App, s.Domain)
	}
	for _, s := range snap.Coord {
		g(descCoordUp, b(s.OK), s.Addr)
		if s.OK {
			g(descCoordOutstanding, float64(s.Outstanding), s.Addr)
			g(descCoordLatency, s.Latency.Avg, s.Addr)
			g(descCoordZnodes, float64(s.Znodes), s.Addr)
			g(descCoordWatches, float64(s.Watches), s.Addr)
		}
	}
}

// Gatherer gathers the monitor's own metrics, the cluster-wide gauges
// included, for a process that serves them on its own /metrics.
func (m *Monitor) Gatherer() prometheus.Gatherer { return m.metrics.reg }

// Register installs the monitor's /metrics on mux: the cluster-wide
// gauges, the monitor's own metrics and Deps.Gatherer's.
func (m *Monitor) Register(mux *http.ServeMux) {
	gs := prometheus.Gatherers{m.metrics.reg}
	if m.deps.Gatherer != nil {
		gs = append(gs, m.deps.Gatherer)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(gs, promhttp.HandlerOpts{}))
}
