package core

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
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
