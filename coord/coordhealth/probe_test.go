package coordhealth_test

import (
	"context"
	"testing"
	"time"

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
