package monitor

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testBatch() Batch {
	f := Finding{Rule: RuleTaskFailed, Severity: Critical, Labels: map[string]string{"task": "orders"}, Summary: "task orders failed", Fix: "retry"}
	a := &Alert{Finding: f, State: StateFiring, FiredAt: t0}
	return Batch{Monitor: "m1", Notifications: []Notification{a.notification(StatusFiring, t0), a.notification(StatusResolved, t0.Add(time.Minute))}}
}

// post sends b through a webhook of format and returns the body received.
func post(t *testing.T, format string, b Batch) []byte {
	t.Helper()
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("content type %q", r.Header.Get("Content-Type"))
		}
		body, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	n, err := NewWebhook(srv.URL, format)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Send(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return body
}

func TestWebhookAlertmanagerPayload(t *testing.T) {
	var alerts []struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		StartsAt    time.Time         `json:"startsAt"`
		EndsAt      *time.Time        `json:"endsAt"`
	}
	if err := json.Unmarshal(post(t, FormatAlertmanager, testBatch()), &alerts); err != nil {
		t.Fatal(err)
	}
	if len(alerts) != 2 || alerts[0].Labels["alertname"] != RuleTaskFailed || alerts[0].Labels["severity"] != "critical" ||
		alerts[0].Labels["task"] != "orders" || alerts[0].Annotations["summary"] != "task orders failed" || alerts[0].EndsAt != nil ||
		!alerts[1].EndsAt.Equal(t0.Add(time.Minute)) || !alerts[1].StartsAt.Equal(t0) {
		t.Fatalf("alertmanager payload %+v", alerts)
	}
}

func TestWebhookSlackPayload(t *testing.T) {
	var msg map[string]string
	if err := json.Unmarshal(post(t, FormatSlack, testBatch()), &msg); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(msg["text"], "[shepherd] 1 firing, 1 resolved\n[FIRING] TaskFailed task=orders (critical)\ntask orders failed\nFix: retry") || len(msg) != 1 {
		t.Fatalf("slack payload %q", msg)
	}
}

func TestWebhookNon2xxIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "quota exceeded", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	n, _ := NewWebhook(srv.URL, "")
	if err := n.Send(context.Background(), testBatch()); err == nil || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("send to a 429: %v", err)
	}
}

func TestCommandGetsTheBatchOnStdin(t *testing.T) {
	out := filepath.Join(t.TempDir(), "got.json")
	n, err := newCommand(CommandConfig{Command: "sh", Args: []string{"-c", `cat > "$0"; echo "$SHEPHERD_ALERT_SUBJECT" >> "$0.subject"`, out}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Send(context.Background(), testBatch()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Version int `json:"version"`
		Batch
	}
	if err := json.Unmarshal(data, &got); err != nil || got.Version != WebhookVersion || len(got.Notifications) != 2 || got.Monitor != "m1" {
		t.Fatalf("stdin %s: %v", data, err)
	}
	subj, _ := os.ReadFile(out + ".subject")
	if strings.TrimSpace(string(subj)) != "[shepherd] 1 firing, 1 resolved" {
		t.Fatalf("subject %q", subj)
	}
}

// TestCommandPastItsTimeIsKilledWithItsChildren: the process group goes,
// so a child holding the output pipe does not hold up the monitor.
func TestCommandPastItsTimeIsKilledWithItsChildren(t *testing.T) {
	n, _ := newCommand(CommandConfig{Command: "sh", Args: []string{"-c", "sleep 300 & sleep 300"}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- n.Send(ctx, testBatch()) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a command killed at its deadline reported success")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Send did not return after its context ended")
	}
}
