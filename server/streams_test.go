package server

import (
	"net/http"
	"testing"
)

// openStream opens an event stream as cl and returns its status; the
// stream stays open until the test ends.
func openStream(t *testing.T, cl *client) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", cl.c.http.URL+"/api/v1/events", nil)
	res, err := cl.hc.Do(req)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res.StatusCode
}

// TestAttackEventStreamQuota: one user took all 1,000 event streams and
// the admin's got 503. A user now holds at most maxUserStreams, and the
// admin still gets one.
func TestAttackEventStreamQuota(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	viewer := c.as("viewer")
	for i := range maxUserStreams {
		if st := openStream(t, viewer); st != http.StatusOK {
			t.Fatalf("viewer's stream %d: %d", i+1, st)
		}
	}
	if st := openStream(t, viewer); st != http.StatusTooManyRequests {
		t.Fatalf("viewer's stream %d: %d, want 429", maxUserStreams+1, st)
	}
	if st := openStream(t, c.as("admin")); st != http.StatusOK {
		t.Fatalf("admin's stream with the viewer at its quota: %d", st)
	}
}
