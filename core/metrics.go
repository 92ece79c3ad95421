package core

import (
	"github.com/prometheus/client_golang/prometheus"
)

// instanceStates are the values of the state label of
// shepherd_core_instance_state.
var instanceStates = []string{StateStandby, StateRunning, StatePaused, StateFailed}

// metrics are a Core's Prometheus collectors, registered with
// Config.Registerer when one is given.
type metrics struct {
	state    *prometheus.GaugeVec   // task, state: 1 for this core's current state of the task
	lag      *prometheus.GaugeVec   // task: seconds the target is behind, while RUNNING here
	rows     *prometheus.CounterVec // task: rows applied by this core
	terms    *prometheus.CounterVec // task: terms of ownership begun (takeovers and first starts)
	fenced   *prometheus.CounterVec // task: terms ended because a newer owner fenced this one
	failures *prometheus.CounterVec // task, kind (retryable, non_retryable)
	// sourceSwitches counts the runs this core moved to another source
	// candidate.
	sourceSwitches *prometheus.CounterVec // task
	// handovers counts the cold tasks this core handed to its group.
	handovers *prometheus.CounterVec // reason (balance, pinned, shutdown)
	// snapshotRows is a table copy's progress (start: snapshot), while
	// this core runs the task: rows copied and estimated in total.
	snapshotRows *prometheus.GaugeVec // task, kind (copied, estimated)
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shepherd_core_instance_state",
			Help: "This core's instance state for each task: 1 for the current state (STANDBY, RUNNING, PAUSED, FAILED), 0 for the others.",
		}, []string{"task", "state"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shepherd_core_lag_seconds",
			Help: "How far the target is behind the source, for the tasks this core runs.",
		}, []string{"task"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_core_rows_applied_total",
			Help: "Row changes this core applied to targets.",
		}, []string{"task"}),
		terms: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_core_terms_total",
			Help: "Terms of ownership this core began: first starts and takeovers.",
		}, []string{"task"}),
		fenced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_core_fenced_total",
			Help: "Terms that ended because a newer owner had taken the task over.",
		}, []string{"task"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_core_failures_total",
			Help: "Replication failures of the tasks this core ran, by kind (retryable, non_retryable).",
		}, []string{"task", "kind"}),
		sourceSwitches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_core_source_switches_total",
			Help: "Times this core moved a task to another source candidate: the source unreachable, read-only, or an operator's request.",
		}, []string{"task"}),
		handovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_core_handovers_total",
			Help: "Cold-standby tasks this core handed over to its group, by reason: balance (over its fair share), pinned (to a preferred core), shutdown.",
		}, []string{"reason"}),
		snapshotRows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shepherd_core_snapshot_rows",
			Help: "A start: snapshot task's table copy, while this core runs it: rows copied, and rows estimated (information_schema) in total.",
		}, []string{"task", "kind"}),
	}
	for _, r := range moveReasons {
		m.handovers.WithLabelValues(r) // exported at 0 from the start
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.state, m.lag, m.rows, m.terms, m.fenced, m.failures, m.sourceSwitches, m.handovers, m.snapshotRows} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// setState records this core's state of task; "" means it has none (not
// an instance any more).
func (m *metrics) setState(task, state string) {
	for _, s := range instanceStates {
		v := 0.0
		if s == state {
			v = 1
		}
		m.state.WithLabelValues(task, s).Set(v)
	}
	if state != StateRunning {
		m.lag.WithLabelValues(task).Set(0)
	}
}
