package server

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
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

// TestAttackStreamOutlivesLogout: an event stream opened before a logout
// went on sending the cluster's state to whoever held it open. It now
// ends at the first event after the logout, without sending it.
func TestAttackStreamOutlivesLogout(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	viewer := c.as("viewer")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.http.URL+"/api/v1/events", nil)
	for k, v := range viewer.header {
		req.Header[k] = v
	}
	res, err := viewer.hc.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("events: %v %v", res, err)
	}
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	for { // the first event: the snapshot as it is
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("first event: %v", err)
		}
		if line == "\n" {
			break
		}
	}
	if st, body := viewer.do("POST", "/logout", map[string]string{}, nil); st != http.StatusNoContent {
		t.Fatalf("logout: %d %s", st, body)
	}
	c.addOrders()
	c.refresh() // an event after the logout
	rest, err := io.ReadAll(rd)
	if err != nil {
		t.Fatalf("the stream did not end after the logout: %v (it sent %q)", err, rest)
	}
	if strings.Contains(string(rest), "orders") {
		t.Fatalf("the stream sent an event after the logout: %q", rest)
	}
}
