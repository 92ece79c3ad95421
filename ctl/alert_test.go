package ctl

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestAlertSilenceListUnsilence(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		out := mustCtlAuth(t, connect, "alert", "silence", "--for", "1h", "--id", "maint", "--comment", "db upgrade", "rule=TaskFailed", "task=orders")
		if !strings.Contains(out, "silence maint until") {
			t.Fatalf("silence: %s", out)
		}
		out = mustCtlAuth(t, connect, "alert", "list")
		if !strings.Contains(out, "no monitor has evaluated yet") || !strings.Contains(out, "maint") || !strings.Contains(out, "rule=TaskFailed,task=orders") || !strings.Contains(out, "db upgrade") {
			t.Fatalf("list: %s", out)
		}
		var doc struct {
			Active   string `json:"active"`
			Silences []struct {
				ID       string            `json:"id"`
				Matchers map[string]string `json:"matchers"`
			} `json:"silences"`
		}
		if err := json.Unmarshal([]byte(mustCtlAuth(t, connect, "--json", "alert", "list")), &doc); err != nil || len(doc.Silences) != 1 ||
			doc.Silences[0].ID != "maint" || doc.Silences[0].Matchers["task"] != "orders" {
			t.Fatalf("list --json: %+v, %v", doc, err)
		}
		mustCtlAuth(t, connect, "alert", "unsilence", "maint")
		if out := mustCtlAuth(t, connect, "alert", "list"); strings.Contains(out, "maint") {
			t.Fatalf("list after unsilence: %s", out)
		}
		if r := runCtlAuth(t, connect, "alert", "silence", "task"); r.code == 0 || !strings.Contains(r.stderr, "want NAME=VALUE") {
			t.Fatalf("silence with a bad matcher: %v", r)
		}
	})
}

// TestAlertTestSendsToEachChannel: alert test posts one test notification
// to each webhook and reports a failing one.
func TestAlertTestSendsToEachChannel(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer ok.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusForbidden)
	}))
	defer bad.Close()
	r := runCtl(t, "127.0.0.1:1", "alert", "test", "--webhook", ok.URL, "--webhook", bad.URL)
	if r.code == 0 || !strings.Contains(r.stdout, "ok shepherd "+ok.URL) || !strings.Contains(r.stdout, "FAILED shepherd "+bad.URL) || !strings.Contains(r.stdout, "403") {
		t.Fatalf("alert test: %v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 || !strings.Contains(bodies[0], `"status":"test"`) {
		t.Fatalf("received %q", bodies)
	}
}
