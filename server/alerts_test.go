package server

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/monitor"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// alert is a monitor alert in state (firing or pending) since ago.
func alert(rule string, sev monitor.Severity, state string, ago time.Duration, labels ...string) *monitor.Alert {
	l := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	at := time.Now().Add(-ago).UTC()
	a := &monitor.Alert{Finding: monitor.Finding{Rule: rule, Severity: sev, Labels: l, Summary: rule + " summary of " + monitor.FormatLabels(l), Fix: "the fix for " + rule},
		State: state, Since: at}
	if state == monitor.StateFiring {
		a.FiredAt = at
	}
	return a
}

// setAlerts writes the monitor's state document as the active monitor
// would (data: raw, or the JSON of a monitor.State) and gives the
// console a new snapshot, after which it reads the alerts again.
func (c *console) setAlerts(data any) {
	c.t.Helper()
	ctx := context.Background()
	raw, ok := data.([]byte)
	if !ok {
		st := data.(monitor.State)
		st.Version, st.Active, st.Updated = 1, "monitor-test", time.Now().UTC()
		if st.Alerts == nil {
			st.Alerts = map[string]*monitor.Alert{}
		}
		raw, _ = json.Marshal(st)
	}
	if err := c.session.EnsurePath(ctx, monitor.Root); err != nil {
		c.t.Fatal(err)
	}
	_, err := c.session.Create(ctx, monitor.StatePath, raw, zk.FlagPersistent, nil)
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = c.session.Set(ctx, monitor.StatePath, raw, -1)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	c.refresh()
}

func alertsOf(as ...*monitor.Alert) monitor.State {
	st := monitor.State{Alerts: map[string]*monitor.Alert{}}
	for _, a := range as {
		st.Alerts[a.Key()] = a
	}
	return st
}

// alertsAnswer is the body of GET /api/v1/alerts.
type alertsAnswer struct {
	Monitor string
	Alerts  []struct {
		Key, Rule, Severity, State, Summary, Fix, SilencedBy string
		Labels                                               map[string]string
	}
	Resolved []monitor.Notification
	Silences []struct {
		monitor.Silence
		Active bool
	}
	Error string
}

func (cl *client) alerts() alertsAnswer {
	cl.c.t.Helper()
	st, body := cl.do("GET", "/api/v1/alerts", nil, nil)
	var a alertsAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil || st != http.StatusOK {
		cl.c.t.Fatalf("GET /api/v1/alerts: %d %s (%v)", st, body, err)
	}
	return a
}

// TestAlertsAndSilencesThroughTheAPI: the monitor's alerts in order with
// their keys and the resolved history; an operator silences one alert
// by its key and removes the silence, both audited; bad requests are
// refused with what to send instead.
func TestAlertsAndSilencesThroughTheAPI(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		c := startConsole(t, tg, nil)
		viewer, op := c.as("viewer"), c.as("operator")
		if a := viewer.alerts(); a.Monitor != "" || len(a.Alerts) != 0 || a.Error != "" {
			t.Fatalf("before any monitor: %+v", a)
		}
		failed := alert(monitor.RuleTaskFailed, monitor.Critical, monitor.StateFiring, 3*time.Minute, "task", "orders")
		lag := alert(monitor.RuleReplicationLag, monitor.Warning, monitor.StateFiring, 10*time.Minute, "task", "billing")
		pending := alert(monitor.RuleJobFailed, monitor.Critical, monitor.StatePending, time.Minute, "job", "nightly")
		st := alertsOf(failed, lag, pending)
		st.Events = []monitor.Notification{
			{ID: "1", Status: monitor.StatusFiring, Rule: monitor.RuleCollectorDead, Severity: monitor.Warning, Labels: map[string]string{"collector": "c1"}, StartsAt: time.Now().Add(-time.Hour)},
			{ID: "2", Status: monitor.StatusResolved, Rule: monitor.RuleCollectorDead, Severity: monitor.Warning, Labels: map[string]string{"collector": "c1"}, StartsAt: time.Now().Add(-time.Hour), EndsAt: time.Now().Add(-30 * time.Minute)},
		}
		c.setAlerts(st)
		a := viewer.alerts()
		var got []string
		for _, x := range a.Alerts {
			got = append(got, x.Rule+" "+x.State)
		}
		if strings.Join(got, ", ") != "TaskFailed firing, ReplicationLag firing, JobFailed pending" || a.Monitor != "monitor-test" {
			t.Fatalf("alerts: %q from %q; want the critical firing first, the pending last", got, a.Monitor)
		}
		if a.Alerts[0].Key != failed.Key() || a.Alerts[0].Fix == "" || a.Alerts[0].Labels["task"] != "orders" {
			t.Errorf("first alert: %+v", a.Alerts[0])
		}
		if len(a.Resolved) != 1 || a.Resolved[0].ID != "2" {
			t.Errorf("resolved history: %+v, want the one resolution", a.Resolved)
		}

		for _, tc := range []struct {
			body, code string
		}{
			{`{"alert":"TaskFailed{task=\"gone\"}","for":"1h"}`, "unknown_alert"},
			{`{"alert":` + quote(failed.Key()) + `,"for":"soon"}`, "invalid"},
			{`{"alert":` + quote(failed.Key()) + `,"for":"-1h"}`, "invalid"},
			{`{"alert":` + quote(failed.Key()) + `,"for":"10000h"}`, "invalid"},
			{`{"alert":` + quote(failed.Key()) + `}`, "invalid"},
			{`{"for":"1h"}`, "invalid"},
			{`{"alert":` + quote(failed.Key()) + `,"matchers":{"task":"orders"},"for":"1h"}`, "invalid"},
			{`{"matchers":{"task":""},"for":"1h"}`, "invalid"},
			{`{"alert":` + quote(failed.Key()) + `,"for":"1h","until":"x"}`, "invalid"},
			{`{"alert":` + quote(failed.Key()) + `,"for":"1h","comment":"` + strings.Repeat("x", 1001) + `"}`, "invalid"},
		} {
			if st, body := op.do("POST", "/api/v1/silences", tc.body, nil); st != http.StatusBadRequest || errorCode(body) != tc.code {
				t.Errorf("POST /api/v1/silences %s: %d %s; want 400 %s", tc.body, st, body, tc.code)
			}
		}
		if st, body := viewer.do("POST", "/api/v1/silences", `{"alert":`+quote(failed.Key())+`,"for":"1h"}`, nil); st != http.StatusForbidden {
			t.Errorf("a viewer silences: %d %s", st, body)
		}

		st2, body := op.do("POST", "/api/v1/silences", `{"alert":`+quote(failed.Key())+`,"for":"1h","comment":"db upgrade"}`, nil)
		var sl monitor.Silence
		if err := json.Unmarshal([]byte(body), &sl); err != nil || st2 != http.StatusCreated {
			t.Fatalf("silence: %d %s", st2, body)
		}
		want := map[string]string{"rule": "TaskFailed", "severity": "critical", "task": "orders"}
		if monitor.FormatLabels(sl.Matchers) != monitor.FormatLabels(want) || sl.By != "console operator" || time.Until(sl.EndsAt) < 59*time.Minute {
			t.Errorf("silence made: %+v", sl)
		}
		// The monitor honours it (same credential) and it covers the alert.
		a = viewer.alerts()
		if len(a.Silences) != 1 || a.Silences[0].ID != sl.ID || !a.Silences[0].Active || a.Silences[0].Comment != "db upgrade" {
			t.Errorf("silences after silencing: %+v", a.Silences)
		}
		if a.Alerts[0].SilencedBy != sl.ID || a.Alerts[1].SilencedBy != "" {
			t.Errorf("silenced by: %q and %q; want %q and none", a.Alerts[0].SilencedBy, a.Alerts[1].SilencedBy, sl.ID)
		}

		for _, tc := range []struct {
			id     string
			status int
			code   string
		}{{"nope", http.StatusNotFound, "not_found"}, {"..%2Fstate", http.StatusBadRequest, "invalid"}} {
			if st, body := op.do("DELETE", "/api/v1/silences/"+tc.id, nil, nil); st != tc.status || errorCode(body) != tc.code {
				t.Errorf("DELETE silence %s: %d %s; want %d %s", tc.id, st, body, tc.status, tc.code)
			}
		}
		if _, _, err := c.session.Get(context.Background(), monitor.StatePath); err != nil {
			t.Fatalf("the monitor's state after DELETE ..%%2Fstate: %v", err)
		}
		if st, body := op.do("DELETE", "/api/v1/silences/"+sl.ID, nil, nil); st != http.StatusNoContent {
			t.Fatalf("unsilence: %d %s", st, body)
		}
		if a := viewer.alerts(); len(a.Silences) != 0 || a.Alerts[0].SilencedBy != "" {
			t.Errorf("after unsilence: %+v", a)
		}

		_, body = viewer.do("GET", "/api/v1/audit", nil, nil)
		var audit struct {
			Entries []struct{ User, Action, Target, Error string }
		}
		_ = json.Unmarshal([]byte(body), &audit)
		var done []string
		for _, e := range audit.Entries {
			if e.Error == "" {
				done = append(done, e.User+" "+e.Action+" "+e.Target)
			}
		}
		if strings.Join(done, "; ") != "operator alert.unsilence silence/"+sl.ID+"; operator alert.silence silence/"+sl.ID {
			t.Errorf("audited: %q", done)
		}
	})
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var bannerTag = regexp.MustCompile(`<p id="alert-banner"[^>]*>`)

// banner returns the page's banner text and whether it is shown.
func (cl *client) banner(path string) (string, bool) {
	cl.c.t.Helper()
	st, body := cl.do("GET", path, nil, nil)
	if st != http.StatusOK {
		cl.c.t.Fatalf("GET %s: %d %s", path, st, body)
	}
	tag := bannerTag.FindString(body)
	if tag == "" {
		cl.c.t.Fatalf("GET %s: no banner element", path)
	}
	_, rest, _ := strings.Cut(body, tag)
	text, _, _ := strings.Cut(rest, "</p>")
	text = regexp.MustCompile(`<[^>]*>`).ReplaceAllString(text, "")
	return html.UnescapeString(strings.TrimSpace(text)), !strings.Contains(tag, "hidden")
}

// TestBannerShowsWhileACriticalAlertFires: every page shows the banner
// while a critical alert fires, not for a warning, a pending critical
// alert or a silenced one; an unreadable state is not shown as all
// clear. The task and job pages show their own firing alerts.
func TestBannerShowsWhileACriticalAlertFires(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	c.addOrders()
	c.refresh()
	snap := *c.feed.Latest()
	snap.Jobs = []JobStatus{{Name: "nightly", Job: scheduler.Job{Name: "nightly", Schedule: "@daily", Command: "true"}, Stored: true}}
	c.feed.Set(&snap)
	viewer := c.as("viewer")
	pages := []string{"/", "/tasks", "/tasks/orders", "/jobs/nightly", "/alerts", "/audit"}
	noBanner := func(when string) {
		t.Helper()
		for _, p := range pages {
			if text, shown := viewer.banner(p); shown {
				t.Errorf("%s: %s shows the banner %q", when, p, text)
			}
		}
	}
	noBanner("no monitor state")

	warning := alert(monitor.RuleReplicationLag, monitor.Warning, monitor.StateFiring, time.Minute, "task", "orders")
	pending := alert(monitor.RuleTaskFailed, monitor.Critical, monitor.StatePending, time.Second, "task", "billing")
	c.setAlerts(alertsOf(warning, pending))
	noBanner("a warning firing, a critical alert pending")
	if _, body := viewer.do("GET", "/tasks/orders", nil, nil); !strings.Contains(section(body, "task-alerts"), "ReplicationLag summary") {
		t.Errorf("the task page does not show its warning:\n%s", section(body, "task-alerts"))
	}

	critical := alert(monitor.RuleTaskFailed, monitor.Critical, monitor.StateFiring, 3*time.Minute, "task", "orders")
	jobFailed := alert(monitor.RuleJobFailed, monitor.Critical, monitor.StateFiring, time.Minute, "job", "nightly")
	c.setAlerts(alertsOf(warning, pending, critical, jobFailed))
	for _, p := range pages {
		text, shown := viewer.banner(p)
		if !shown || text != "2 critical alerts firing: TaskFailed task=orders; JobFailed job=nightly" {
			t.Errorf("%s with two critical alerts firing: banner %q, shown %v", p, text, shown)
		}
	}
	_, body := viewer.do("GET", "/tasks/orders", nil, nil)
	own := section(body, "task-alerts")
	if !strings.Contains(own, "TaskFailed summary of task=orders") || !regexp.MustCompile(`firing since \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`).MatchString(own) || strings.Contains(own, "JobFailed") {
		t.Errorf("the task page's alerts:\n%s", own)
	}
	_, body = viewer.do("GET", "/jobs/nightly", nil, nil)
	if own := section(body, "job-alerts"); !strings.Contains(own, "JobFailed") || strings.Contains(own, "TaskFailed") {
		t.Errorf("the job page's alerts:\n%s", own)
	}

	// Silenced, they raise no banner.
	op := c.as("operator")
	for _, a := range []*monitor.Alert{critical, jobFailed} {
		if st, body := op.do("POST", "/api/v1/silences", `{"alert":`+quote(a.Key())+`,"for":"1h"}`, nil); st != http.StatusCreated {
			t.Fatalf("silence: %d %s", st, body)
		}
	}
	noBanner("both critical alerts silenced")

	c.setAlerts([]byte("{not json"))
	if text, shown := viewer.banner("/tasks"); !shown || !strings.HasPrefix(text, "Alerts unknown: the monitor's state could not be read") {
		t.Errorf("an unreadable state: banner %q, shown %v", text, shown)
	}
}

// section returns the element of id in a page, up to its </section>.
func section(page, id string) string {
	_, rest, ok := strings.Cut(page, `id="`+id+`"`)
	if !ok {
		return ""
	}
	s, _, _ := strings.Cut(rest, "</section>")
	return s
}

func TestHumanAgo(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s ago"}, {45 * time.Second, "45s ago"}, {3*time.Minute + 59*time.Second, "3m ago"},
		{5 * time.Hour, "5h ago"}, {47 * time.Hour, "47h ago"}, {72 * time.Hour, "3d ago"}, {-58 * time.Minute, "in 58m"},
	} {
		if got := humanAgo(tc.d); got != tc.want {
			t.Errorf("humanAgo(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
