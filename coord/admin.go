package coord

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// startAdmin serves HandleAdmin's endpoints on AdminListen, for an
// embedded server with a listener of its own; `shepherd coord` and
// `shepherd up` install them into their process's one mux instead.
func (s *Server) startAdmin() error {
	ln, err := net.Listen("tcp", s.cfg.AdminListen)
	if err != nil {
		return fmt.Errorf("coord: admin listen on %s: %w", s.cfg.AdminListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if err := s.Healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	s.HandleAdmin(mux, ln.Addr().String())
	s.adminLn = ln
	s.admin = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.run(func() {
		if err := s.admin.Serve(ln); err != nil && err != http.ErrServerClosed {
			s.log.Error("admin server stopped", "err", err)
		}
	})
	return nil
}

// Gatherer is the server's Prometheus registry, for a process that serves
// /metrics itself.
func (s *Server) Gatherer() prometheus.Gatherer { return s.metrics.reg }

// Healthy returns nil while the server accepts requests, else why not.
func (s *Server) Healthy() error {
	if s.closing.Load() {
		return ErrClosed
	}
	return s.pipe.query(func() {})
}

// HandleAdmin installs into mux, which the caller owns and serves at
// addr (only for the log), the server's own admin endpoints:
//
//	/commands/<word>    a four-letter word's answer (whitelist applies)
//	/debug/pprof/       Go profiles, only with AdminPprof: they expose memory
//	                    contents and stacks, and the endpoint has no login
//
// /metrics (Gatherer) and /health (Healthy) are the process's, which may
// run more than this server.
func (s *Server) HandleAdmin(mux *http.ServeMux, addr string) {
	mux.HandleFunc("/commands/", func(w http.ResponseWriter, r *http.Request) {
		word := strings.TrimPrefix(r.URL.Path, "/commands/")
		if _, ok := fourLetterWord([4]byte([]byte(word + "    ")[:4])); !ok || len(word) != 4 {
			http.Error(w, fmt.Sprintf("unknown command %q; try one of %s", word, strings.Join(fourLetterWords, ", ")), http.StatusNotFound)
			return
		}
		if !s.fourLetterAllowed(word) {
			http.Error(w, word+" is not in the four-letter-word whitelist (--4lw)", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, s.fourLetter(word))
	})
	if s.cfg.AdminPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		s.log.Warn("serving Go profiles without authentication", "url", "http://"+addr+"/debug/pprof/")
	}
}
