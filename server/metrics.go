package server

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests      *prometheus.HistogramVec
	loginFailures prometheus.Counter
	streams       prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shepherd_server_request_seconds", Help: "Console requests by route.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"route"}),
		loginFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shepherd_server_login_failures_total", Help: "Failed console logins.",
		}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shepherd_server_event_streams", Help: "Open /api/v1/events streams.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.loginFailures, m.streams)
	}
	return m
}

func (m *metrics) observe(route string, d time.Duration) {
	m.requests.WithLabelValues(route).Observe(d.Seconds())
}

func itoa(n int) string { return strconv.Itoa(n) }
