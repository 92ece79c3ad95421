package realclients

import (
	"sync"
	"testing"

	"github.com/shepherd-dev/shepherd/coord"
)

// shepherd is an in-process `shepherd coord` server.
type shepherd struct {
	cfg coord.Config

	mu  sync.Mutex
	srv *coord.Server
}

// startShepherd starts `shepherd coord` on a free loopback port with a
// fresh data directory, and closes it when the test ends.
func startShepherd(t *testing.T) server {
	t.Helper()
	cfg := coord.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.FourLetterWords = []string{"*"}
	cfg.Logger = newTestLogger(t, "shepherd coord")
	s := &shepherd{cfg: cfg}
	s.srv = s.launch(t)
	// From now on the port is fixed: a restart must come back where the
	// clients look for it.
	s.cfg.Listen = s.srv.Addr()
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.srv.Close(); err != nil {
			t.Errorf("close shepherd coord: %v", err)
		}
	})
	return s
}

func (s *shepherd) launch(t testing.TB) *coord.Server {
	t.Helper()
	srv, err := coord.NewServer(s.cfg)
	if err != nil {
		t.Fatalf("shepherd coord in %s: %v", s.cfg.DataDir, err)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("start shepherd coord on %s: %v", s.cfg.Listen, err)
	}
	return srv
}

func (s *shepherd) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv.Addr()
}

// Restart closes the server, dropping every connection, and opens a new
// one on the same data directory and port; sessions must survive it.
func (s *shepherd) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.srv.Close(); err != nil {
		t.Fatalf("close shepherd coord for restart: %v", err)
	}
	s.srv = s.launch(t)
}
