package scheduler

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are a Scheduler's Prometheus collectors, registered with
// Options.Registerer when one is given.
type metrics struct {
	elections *prometheus.CounterVec   // job, outcome (won, lost)
	runs      *prometheus.CounterVec   // job, status: results this scheduler published
	takeovers *prometheus.CounterVec   // job: attempts started after another master died
	duration  *prometheus.HistogramVec // job: attempt durations
	refused   prometheus.Gauge         // stored jobs and triggers refused
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		elections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_scheduler_elections_total",
			Help: "Elections for the master of a run, by outcome (won, lost).",
		}, []string{"job", "outcome"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_scheduler_results_total",
			Help: "Run results published by this scheduler as master, by status.",
		}, []string{"job", "status"}),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_scheduler_takeovers_total",
			Help: "Runs this scheduler took over after their master died.",
		}, []string{"job"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "shepherd_scheduler_attempt_duration_seconds",
			Help:    "Duration of the attempts this scheduler ran.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10), // 10ms to ~45min
		}, []string{"job"}),
		refused: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shepherd_scheduler_refused",
			Help: "Stored jobs and triggers this scheduler refuses: malformed, clashing with a --jobs file job, or writable by an untrusted identity.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.elections, m.runs, m.takeovers, m.duration, m.refused} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
