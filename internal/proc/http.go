package proc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// FlagHTTPListen names the address of a process's HTTP endpoints. Its
// alias metrics-listen is the name it had when it served only /metrics.
const FlagHTTPListen = "http-listen"

// HTTPFlag is the --http-listen flag.
func HTTPFlag() cli.Flag {
	return &cli.StringFlag{Name: FlagHTTPListen, Aliases: []string{"metrics-listen"},
		Usage: "HTTP address serving Prometheus /metrics and /health (off if empty)"}
}

// HTTP is the one HTTP mux of a process. It serves
//
//	/metrics   Prometheus: Registry, and the registries added with AddGatherer
//	/health    200 while every check added with AddCheck passes, else 503;
//	           the body has one line per check
//
// and the parts of the process install their own handlers into Mux.
type HTTP struct {
	// Mux is the process's mux; parts install their handlers here.
	Mux *http.ServeMux
	// Registry gets the metrics of the process's parts, and the Go
	// runtime's and the process's own.
	Registry *prometheus.Registry

	mu        sync.Mutex
	gatherers prometheus.Gatherers
	checks    []check
}

type check struct {
	name string
	fn   func() error
}

// NewHTTP returns a process's mux with /metrics and /health installed.
func NewHTTP() *HTTP {
	h := &HTTP{Mux: http.NewServeMux(), Registry: prometheus.NewRegistry()}
	h.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h.gatherers = prometheus.Gatherers{h.Registry}
	h.Mux.Handle("/metrics", promhttp.HandlerFor(prometheus.GathererFunc(h.gather), promhttp.HandlerOpts{}))
	h.Mux.HandleFunc("/health", h.serveHealth)
	return h
}

// AddGatherer adds a part's own registry (the coordination server keeps
// one, so that several can run in one process) to /metrics.
func (h *HTTP) AddGatherer(g prometheus.Gatherer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gatherers = append(h.gatherers, g)
}

// AddCheck adds a part's health to /health: fn returns nil while the part
// can do its work, else why it cannot.
func (h *HTTP) AddCheck(name string, fn func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checks = append(h.checks, check{name, fn})
}

// AddSessionCheck adds the health of a part that works through s: it is
// healthy while s is connected.
func (h *HTTP) AddSessionCheck(name string, s *recipe.Session) {
	h.AddCheck(name, func() error {
		if st := s.State(); !st.Connected() {
			return fmt.Errorf("session %s", st)
		}
		return nil
	})
}

// Gatherer gathers what /metrics serves, for a part that serves metrics
// on a listener of its own (the console).
func (h *HTTP) Gatherer() prometheus.Gatherer { return prometheus.GathererFunc(h.gather) }

func (h *HTTP) gather() ([]*dto.MetricFamily, error) { return h.snapshotGatherers().Gather() }

func (h *HTTP) snapshotGatherers() prometheus.Gatherers {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(prometheus.Gatherers(nil), h.gatherers...)
}

// Health runs every check; the error joins those that failed.
func (h *HTTP) Health() (report string, err error) {
	h.mu.Lock()
	checks := append([]check(nil), h.checks...)
	h.mu.Unlock()
	var b strings.Builder
	var errs []error
	for _, c := range checks {
		if cerr := c.fn(); cerr != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, cerr))
			fmt.Fprintf(&b, "%s: %v\n", c.name, cerr)
			continue
		}
		fmt.Fprintf(&b, "%s: ok\n", c.name)
	}
	return b.String(), errors.Join(errs...)
}

func (h *HTTP) serveHealth(w http.ResponseWriter, r *http.Request) {
	report, err := h.Health()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprint(w, report)
}

// Serve listens on addr and serves the mux until ctx ends; it returns the
// address it listens on (the real port for ":0"). The server is closed,
// and its goroutine gone, when ctx ends and the returned wait returns.
func (h *HTTP) Serve(ctx context.Context, addr string, log *slog.Logger) (bound string, wait func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--%s %s: %w", FlagHTTPListen, addr, err)
	}
	hs := &http.Server{Handler: h.Mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
		case <-done:
		}
		hs.Close()
	}()
	log.Info("HTTP served", "addr", ln.Addr().String(), "paths", "/metrics /health")
	return ln.Addr().String(), func() { <-stopped; <-done }, nil
}
