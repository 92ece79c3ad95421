package core

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-dev/shepherd/replication"
)

// metricValue returns the value of the sample of metric name whose labels
// include want, or fails the test.
func metricValue(t testing.TB, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	sample:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue sample
				}
			}
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Counter != nil:
				return m.Counter.GetValue()
			}
		}
	}
	t.Fatalf("no sample of %s with labels %v", name, want)
	return 0
}

// TestSnapshotMetrics: a copy's progress reaches the snapshot gauges.
func TestSnapshotMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: &taskRun{name: "t1", c: &Core{metrics: m}}}
	tm.onProgress(Progress{Snapshot: &replication.SnapshotProgress{Rows: 1200, Estimated: 5000}})
	if v := metricValue(t, reg, "shepherd_core_snapshot_rows", map[string]string{"task": "t1", "kind": "copied"}); v != 1200 {
		t.Errorf("copied = %v, want 1200", v)
	}
	if v := metricValue(t, reg, "shepherd_core_snapshot_rows", map[string]string{"task": "t1", "kind": "estimated"}); v != 5000 {
		t.Errorf("estimated = %v, want 5000", v)
	}
}
