package coord

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus metrics, on a registry of its own so
// that several servers can run in one process (tests, `shepherd up`).
type metrics struct {
	reg                   *prometheus.Registry
	requests              *prometheus.CounterVec
	txns                  prometheus.Counter
	notifications         prometheus.Counter
	notificationsWithheld prometheus.Counter
	connections           prometheus.Gauge
	connRejected          prometheus.Counter
	badPackets            prometheus.Counter
	slowClientsClosed     prometheus.Counter
	handshakeTimeouts     prometheus.Counter
	sessionsCreated       prometheus.Counter
	sessionsExpired       prometheus.Counter
	latency               prometheus.Histogram
	fsyncSeconds          prometheus.Histogram
	batchTxns             prometheus.Histogram
	freezeSeconds         prometheus.Histogram
	snapshotSeconds       prometheus.Histogram
}

func newMetrics(s *Server) *metrics {
	const ns = "shepherd_coord"
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "requests_total",
			Help: "Client requests by op code."}, []string{"op"}),
		txns: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "transactions_total",
			Help: "Transactions applied and logged."}),
		notifications: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "watch_notifications_total",
			Help: "Watch events queued for clients."}),
		notificationsWithheld: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "watch_notifications_withheld_total",
			Help: "Watch events not sent because the watcher may not read the node (ZooKeeper's CVE-2024-23944 fix)."}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "connections",
			Help: "Open client connections."}),
		connRejected: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "connections_rejected_total",
			Help: "Connections refused by max-client-conns."}),
		badPackets: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "bad_packets_total",
			Help: "Malformed or oversized packets (each closed its connection)."}),
		slowClientsClosed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "slow_clients_closed_total",
			Help: "Connections closed because their client did not read: it was owed more than max-queued-bytes of replies or max-queued-event-bytes of watch events."}),
		handshakeTimeouts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "handshake_timeouts_total",
			Help: "Connections closed because they sent no connect request within handshake-timeout."}),
		sessionsCreated: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "sessions_created_total",
			Help: "Sessions created."}),
		sessionsExpired: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "sessions_expired_total",
			Help: "Sessions expired by timeout."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "request_latency_seconds",
			Help: "Time from a request's arrival to its reply being written.", Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16)}),
		fsyncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "fsync_seconds",
			Help: "Duration of transaction log syncs.", Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16)}),
		batchTxns: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "fsync_batch_transactions",
			Help: "Transactions made durable by one fsync (group commit).", Buckets: prometheus.ExponentialBuckets(1, 2, 11)}),
		freezeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "snapshot_freeze_seconds",
			Help: "Time the pipeline paused to take a consistent copy for a snapshot.", Buckets: prometheus.ExponentialBuckets(100e-6, 2, 14)}),
		snapshotSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "snapshot_write_seconds",
			Help: "Time to write a snapshot in the background.", Buckets: prometheus.ExponentialBuckets(1e-3, 2, 14)}),
	}
	m.reg.MustRegister(m.requests, m.txns, m.notifications, m.notificationsWithheld, m.connections, m.connRejected, m.badPackets, m.slowClientsClosed, m.handshakeTimeouts,
		m.sessionsCreated, m.sessionsExpired, m.latency, m.fsyncSeconds, m.batchTxns, m.freezeSeconds, m.snapshotSeconds,
		&treeCollector{s: s})
	return m
}

func (m *metrics) observeLatency(d time.Duration) { m.latency.Observe(d.Seconds()) }

// treeCollector reports the tree's gauges at scrape time, read through the
// pipeline so they are consistent.
type treeCollector struct{ s *Server }

var (
	descZnodes     = prometheus.NewDesc("shepherd_coord_znodes", "Znodes in the tree.", nil, nil)
	descEphemerals = prometheus.NewDesc("shepherd_coord_ephemerals", "Ephemeral znodes.", nil, nil)
	descDataBytes  = prometheus.NewDesc("shepherd_coord_data_bytes", "Approximate bytes of znode data and paths.", nil, nil)
	descWatches    = prometheus.NewDesc("shepherd_coord_watches", "Registered watches.", nil, nil)
	descSessions   = prometheus.NewDesc("shepherd_coord_sessions", "Live sessions.", nil, nil)
	descZxid       = prometheus.NewDesc("shepherd_coord_last_zxid", "Zxid of the last applied transaction.", nil, nil)
)

func (tc *treeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descZnodes, descEphemerals, descDataBytes, descWatches, descSessions, descZxid} {
		ch <- d
	}
}

func (tc *treeCollector) Collect(ch chan<- prometheus.Metric) {
	st := tc.s.stats()
	ch <- prometheus.MustNewConstMetric(descZnodes, prometheus.GaugeValue, float64(st.nodes))
	ch <- prometheus.MustNewConstMetric(descEphemerals, prometheus.GaugeValue, float64(st.ephemerals))
	ch <- prometheus.MustNewConstMetric(descDataBytes, prometheus.GaugeValue, float64(st.dataBytes))
	ch <- prometheus.MustNewConstMetric(descWatches, prometheus.GaugeValue, float64(st.watches))
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(st.sessions))
	ch <- prometheus.MustNewConstMetric(descZxid, prometheus.GaugeValue, float64(st.zxid))
}
