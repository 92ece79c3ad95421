package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Notifier is one notification channel. Channels come from the monitor's
// own config file and flags only (see the package doc).
type Notifier interface {
	// Name says which channel it is, for logs and delivery records
	// ("webhook https://…", "email ops@…"): unique in a config.
	Name() string
	// Send delivers one batch: every change of one evaluation.
	Send(ctx context.Context, b Batch) error
}

// Batch is what one evaluation sends: its notifications, grouped by rule
// in rule order, from one monitor.
type Batch struct {
	Monitor       string         `json:"monitor"`
	Notifications []Notification `json:"notifications"`
}

// WebhookVersion is the version of the webhook's JSON document.
const WebhookVersion = 1

// sendTimeout bounds one delivery to one channel, so that a channel that
// hangs delays the others' next evaluation by at most that.
const sendTimeout = 10 * time.Second

// maxReply bounds what is read of a receiver's reply.
const maxReply = 64 << 10

// subject is a one-line summary of a batch, for e-mail subjects and chat.
func (b Batch) subject() string {
	firing, resolved := 0, 0
	for _, n := range b.Notifications {
		if n.Status == StatusResolved {
			resolved++
		} else {
			firing++
		}
	}
	if len(b.Notifications) == 1 {
		n := b.Notifications[0]
		return fmt.Sprintf("[%s] %s %s", strings.ToUpper(n.Status), n.Rule, labelText(n.Labels))
	}
	return fmt.Sprintf("[shepherd] %d firing, %d resolved", firing, resolved)
}

// text is a batch as plain text, one block per notification.
func (b Batch) text() string {
	var sb strings.Builder
	for _, n := range b.Notifications {
		fmt.Fprintf(&sb, "[%s] %s %s (%s)\n%s\n", strings.ToUpper(n.Status), n.Rule, labelText(n.Labels), n.Severity, n.Summary)
		if n.Fix != "" && n.Status != StatusResolved {
			fmt.Fprintf(&sb, "Fix: %s\n", n.Fix)
		}
		fmt.Fprintf(&sb, "Since %s", n.StartsAt.UTC().Format(time.RFC3339))
		if !n.EndsAt.IsZero() {
			fmt.Fprintf(&sb, ", resolved %s", n.EndsAt.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(&sb, " (id %s)\n\n", n.ID)
	}
	return strings.TrimSpace(sb.String())
}

func labelText(l map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, " ")
}

// Webhook formats.
const (
	FormatShepherd     = "shepherd"     // Batch as JSON
	FormatAlertmanager = "alertmanager" // Alertmanager's POST /api/v2/alerts body
	FormatSlack        = "slack"        // Slack-compatible incoming webhook: {"text": …}
)

// webhook posts batches to a URL.
type webhook struct {
	url, format string
	client      *http.Client
}

// NewWebhook returns a channel posting to url in format.
func NewWebhook(url, format string) (Notifier, error) {
	switch format {
	case "":
		format = FormatShepherd
	case FormatShepherd, FormatAlertmanager, FormatSlack:
	default:
		return nil, fmt.Errorf("monitor: webhook %s: format %q: want %s, %s or %s", url, format, FormatShepherd, FormatAlertmanager, FormatSlack)
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return nil, fmt.Errorf("monitor: webhook %q: want an http:// or https:// URL", url)
	}
	return &webhook{url: url, format: format, client: &http.Client{Timeout: sendTimeout}}, nil
}

func (w *webhook) Name() string { return w.format + " " + w.url }

func (w *webhook) Send(ctx context.Context, b Batch) error {
	var body any
	switch w.format {
	case FormatShepherd:
		body = struct {
			Version int `json:"version"`
			Batch
		}{WebhookVersion, b}
	case FormatAlertmanager:
		body = alertmanagerAlerts(b)
	case FormatSlack:
		body = map[string]string{"text": b.subject() + "\n" + b.text()}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s: %s", w.url, resp.Status, strings.TrimSpace(string(reply)))
	}
	return nil
}

// amAlert is one alert of Alertmanager's API v2 (postableAlert).
type amAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt,omitzero"`
}

// alertmanagerAlerts is a batch as the body of Alertmanager's
// POST /api/v2/alerts: alertname is the rule, severity a label, a
// resolved alert carries its endsAt.
func alertmanagerAlerts(b Batch) []amAlert {
	out := make([]amAlert, 0, len(b.Notifications))
	for _, n := range b.Notifications {
		labels := map[string]string{"alertname": n.Rule, "severity": string(n.Severity)}
		for k, v := range n.Labels {
			labels[k] = v
		}
		ann := map[string]string{"summary": n.Summary, "id": n.ID}
		if n.Fix != "" {
			ann["fix"] = n.Fix
		}
		out = append(out, amAlert{Labels: labels, Annotations: ann, StartsAt: n.StartsAt, EndsAt: n.EndsAt})
	}
	return out
}

// deliver sends b to every channel at once, each bounded by sendTimeout,
// and returns each channel's error (nil: delivered).
func deliver(ctx context.Context, chans []Notifier, b Batch) map[string]error {
	out := make(map[string]error, len(chans))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range chans {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, sendTimeout)
			defer cancel()
			err := c.Send(cctx, b)
			if err != nil {
				err = fmt.Errorf("%s: %w", c.Name(), err)
			}
			mu.Lock()
			out[c.Name()] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// SendTest sends a test notification to every channel of cfg — what
// `shepherd ctl alert test` does with the monitor's config file — and
// returns each channel's result by name.
func SendTest(ctx context.Context, cfg Config, from string) (map[string]error, error) {
	chans, err := cfg.Channels(ctx)
	if err != nil {
		return nil, err
	}
	if len(chans) == 0 {
		return nil, fmt.Errorf("monitor: no channel configured: give a --monitor-config with channels or --webhook URL")
	}
	now := time.Now().UTC()
	n := Notification{
		ID: "Test@" + now.Format(time.RFC3339Nano) + ":" + StatusTest, Status: StatusTest, Rule: "Test", Severity: Warning,
		Labels: map[string]string{}, Summary: "a test notification from " + from + ": this channel works", StartsAt: now,
	}
	return deliver(ctx, chans, Batch{Monitor: from, Notifications: []Notification{n}}), nil
}
