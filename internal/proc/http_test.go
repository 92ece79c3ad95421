package proc

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestHealthFailsWhileAPartFails: /health is 503 while one check fails,
// and its body names the failing part and why; 200 once all pass.
func TestHealthFailsWhileAPartFails(t *testing.T) {
	h := NewHTTP()
	var failing atomic.Bool
	failing.Store(true)
	h.AddCheck("coord", func() error {
		if failing.Load() {
			return errors.New("closing")
		}
		return nil
	})
	h.AddCheck("core", func() error { return nil })
	srv := httptest.NewServer(h.Mux)
	defer srv.Close()
	get := func() (int, string) {
		resp, err := http.Get(srv.URL + "/health")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "coord: closing") || !strings.Contains(body, "core: ok") {
		t.Errorf("with coord failing: %d %q, want 503 naming coord's error", code, body)
	}
	failing.Store(false)
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, "coord: ok") {
		t.Errorf("with all passing: %d %q, want 200", code, body)
	}
}

// TestMetricsJoinsEveryRegistry: /metrics serves the process's registry
// and those of parts that keep their own.
func TestMetricsJoinsEveryRegistry(t *testing.T) {
	h := NewHTTP()
	own := prometheus.NewRegistry()
	own.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "part_gauge", Help: "a part's own"}))
	h.AddGatherer(own)
	h.Registry.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "role_gauge", Help: "a role's"}))
	srv := httptest.NewServer(h.Mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"part_gauge 0", "role_gauge 0", "go_goroutines"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
}
