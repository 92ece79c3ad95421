package coord

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// startAdmin serves the admin HTTP endpoints:
//
//	/metrics            Prometheus metrics
//	/health             200 "ok" while the server accepts requests
//	/commands/<word>    a four-letter word's answer (whitelist applies)
//	/debug/pprof/       Go profiles, only with AdminPprof: they expose memory
//	                    contents and stacks, and the endpoint has no login
func (s *Server) startAdmin() error {
	ln, err := net.Listen("tcp", s.cfg.AdminListen)
	if err != nil {
		return fmt.Errorf("coord: admin listen on %s: %w", s.cfg.AdminListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if s.closing.Load() {
			http.Error(w, "closing", http.StatusServiceUnavailable)
			return
		}
		if err := s.pipe.query(func() {}); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
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
		s.log.Warn("serving Go profiles without authentication", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	}
	s.adminLn = ln
	s.admin = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.run(func() {
		if err := s.admin.Serve(ln); err != nil && err != http.ErrServerClosed {
			s.log.Error("admin server stopped", "err", err)
		}
	})
	return nil
}
