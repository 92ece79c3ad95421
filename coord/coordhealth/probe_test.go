package coordhealth_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord"
	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// Probe against the real servers, with every word allowed: srvr and mntr.
func TestProbeReadsARealServer(t *testing.T) {
	targets, stop := coordtest.Start("coordhealth", 200*time.Millisecond)
	defer stop()
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		s := coordhealth.Probe(context.Background(), tg.Addr)
		if !s.OK || s.Mode != "standalone" || s.Znodes < 1 || s.Raw["zk_server_state"] != "standalone" {
			t.Fatalf("Probe(%s) = %+v", tg.Name, s)
		}
	})
}

// With the default words (srvr alone), Probe is OK without mntr's keys.
func TestProbeOfADefaultServerReadsSrvrAlone(t *testing.T) {
	cfg := coord.DefaultConfig()
	cfg.Listen, cfg.DataDir, cfg.NoSync = "127.0.0.1:0", t.TempDir(), true
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := coord.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s := coordhealth.Probe(context.Background(), srv.Addr())
	if !s.OK || s.Mode != "standalone" || s.Error != "" {
		t.Fatalf("Probe = %+v", s)
	}
	if _, ok := s.Raw["zk_version"]; ok {
		t.Fatalf("Probe read mntr from a server that allows srvr alone: %v", s.Raw)
	}
}
