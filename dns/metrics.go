package dns

import (
	"github.com/prometheus/client_golang/prometheus"
)

// serverMetrics are a Server's Prometheus collectors.
type serverMetrics struct {
	queries *prometheus.CounterVec // qtype, rcode
	stale   prometheus.Counter     // answers given from a stale cache
}

func newServerMetrics(reg prometheus.Registerer, c *Cache) (*serverMetrics, error) {
	m := &serverMetrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_dns_queries_total",
			Help: "DNS queries answered, by query type and result code (NOERROR, NXDOMAIN, SERVFAIL, REFUSED, …).",
		}, []string{"qtype", "rcode"}),
		stale: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shepherd_dns_stale_answers_total",
			Help: "DNS answers given from a cache that may be behind the registry (coordination server unreachable).",
		}),
	}
	cs := []prometheus.Collector{m.queries, m.stale,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shepherd_dns_cache_age_seconds",
			Help: "How long ago the DNS cache last matched the registry: 0 while it does, -1 if it never loaded.",
		}, func() float64 { return c.Age().Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shepherd_dns_cache_stale",
			Help: "1 while the DNS cache may be behind the registry (it is still served), else 0.",
		}, func() float64 { return b2f(c.Stale()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shepherd_dns_cache_loaded",
			Help: "1 once the DNS cache has read the registry; before, every answer is SERVFAIL.",
		}, func() float64 { return b2f(c.Table().Loaded()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shepherd_dns_served_addresses",
			Help: "Addresses the DNS server answers with: registered, healthy, unblocked and trusted.",
		}, func() float64 { return float64(c.Table().Addresses) }),
	}
	if reg != nil {
		for _, col := range cs {
			if err := reg.Register(col); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// scannerMetrics are a Scanner's Prometheus collectors.
type scannerMetrics struct {
	checks  *prometheus.CounterVec // kind (tcp, http, heartbeat), result (ok, fail)
	marks   *prometheus.CounterVec // verdict (unhealthy, healthy)
	rounds  prometheus.Counter
	leading prometheus.Gauge
}

func newScannerMetrics(reg prometheus.Registerer) (*scannerMetrics, error) {
	m := &scannerMetrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_dns_checks_total",
			Help: "Health checks the scanner made, by kind (tcp, http, heartbeat) and result (ok, fail).",
		}, []string{"kind", "result"}),
		marks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_dns_verdicts_total",
			Help: "Addresses the scanner marked unhealthy or healthy again.",
		}, []string{"verdict"}),
		rounds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shepherd_dns_scanner_rounds_total",
			Help: "Rounds of the scanner while it led.",
		}),
		leading: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shepherd_dns_scanner_leading",
			Help: "1 while this process is the elected scanner.",
		}),
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{m.checks, m.marks, m.rounds, m.leading} {
			if err := reg.Register(col); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
