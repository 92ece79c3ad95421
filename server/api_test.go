package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/scheduler"
)

const specJSON = `{"name":"orders","source":{"host":"127.0.0.1","port":3306,"user":"repl","password":"src-secret","flavor":"mariadb"},
"target":{"host":"127.0.0.1","port":3307,"user":"apply","password":"tgt-secret","flavor":"mariadb"},"filter":{"include":["shop.*"]},"start":"current"}`

// TestEventTargetPasswordKept: an edit of a NATS or Kafka task that
// leaves its password as the *** it was shown keeps the stored one only
// while the target's servers and user stay: otherwise a user who may not
// read the password could send it to a server of their choosing.
func TestEventTargetPasswordKept(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	admin := c.as("admin")
	for _, tc := range []struct{ name, target, moved string }{
		{"bus", `{"kind":"nats","url":"nats://10.0.0.5:4222","stream":"s","user":"pub","password":"nats-secret"}`, `"nats://10.0.0.5:4222,nats://10.6.6.6:4222"`},
		{"log", `{"kind":"kafka","brokers":["10.0.0.5:9092"],"saslMechanism":"PLAIN","user":"pub","password":"kafka-secret"}`, `["10.0.0.5:9092","10.6.6.6:9092"]`},
	} {
		sp := `{"name":"` + tc.name + `","source":{"host":"10.0.0.1","user":"u"},"target":` + tc.target + `}`
		if st, body := admin.do("POST", "/api/v1/tasks", sp, nil); st != http.StatusCreated {
			t.Fatalf("create %s: %d %s", tc.name, st, body)
		}
		st, body := admin.do("GET", "/api/v1/tasks/"+tc.name, nil, nil)
		if st != 200 || strings.Contains(body, "secret") {
			t.Fatalf("get %s: %d %s", tc.name, st, body)
		}
		var tv struct {
			Spec json.RawMessage `json:"spec"`
		}
		_ = json.Unmarshal([]byte(body), &tv)
		shown := string(tv.Spec)
		field := `"url":"nats://10.0.0.5:4222"`
		moved := `"url":` + tc.moved
		if strings.Contains(tc.target, "brokers") {
			field, moved = `"brokers":["10.0.0.5:9092"]`, `"brokers":`+tc.moved
		}
		if !strings.Contains(shown, field) || !strings.Contains(shown, `"password":"***"`) {
			t.Fatalf("%s shown as %s", tc.name, shown)
		}
		if st, body := admin.do("PUT", "/api/v1/tasks/"+tc.name, strings.Replace(shown, field, moved, 1), map[string]string{"If-Match": `"0"`}); st != http.StatusBadRequest || !strings.Contains(body, "target.password") {
			t.Errorf("%s: an edit adding a server with the password as ***: %d %s, want 400 naming target.password", tc.name, st, body)
		}
		if st, body := admin.do("PUT", "/api/v1/tasks/"+tc.name, strings.Replace(shown, `"shop`, `"shop`, 1), map[string]string{"If-Match": `"0"`}); st != 200 {
			t.Fatalf("%s: an edit leaving the servers: %d %s", tc.name, st, body)
		}
		sp2, _, err := c.admin.TaskVersion(t.Context(), tc.name)
		if err != nil || !strings.HasSuffix(sp2.Target.Password, "-secret") {
			t.Errorf("%s stored after the edit: password %q, %v; want the stored one kept", tc.name, sp2.Target.Password, err)
		}
	}
}

// TestTaskLifecycleThroughTheAPI: create, read with an ETag, conditional
// update (missing If-Match, stale version), actions, the error cases,
// delete — each change audited with who, what, before and after, and no
// password ever in an answer.
func TestTaskLifecycleThroughTheAPI(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		c := startConsole(t, tg, nil)
		admin := c.as("admin")
		st, body := admin.do("POST", "/api/v1/tasks", specJSON, nil)
		if st != http.StatusCreated || strings.Contains(body, "secret") {
			t.Fatalf("create: %d %s", st, body)
		}
		etag := admin.last.Header.Get("ETag")
		if etag == "" || admin.last.Header.Get("Location") != "/api/v1/tasks/orders" {
			t.Fatalf("create: ETag %q, Location %q", etag, admin.last.Header.Get("Location"))
		}
		for _, tc := range []struct {
			method, path, body string
			hdr                map[string]string
			status             int
			code               string
		}{
			{"POST", "/api/v1/tasks", specJSON, nil, http.StatusConflict, "exists"},
			{"POST", "/api/v1/tasks", `{"name":"bad","source":{"host":"a","port":99999}}`, nil, http.StatusBadRequest, "invalid"},
			{"POST", "/api/v1/tasks", `{"name":"x","unknown":1}`, nil, http.StatusBadRequest, "invalid"},
			{"POST", "/api/v1/tasks", `not json`, nil, http.StatusBadRequest, "invalid"},
			// NATS and Kafka targets are defined with ctl until the console's form knows them.
			{"PUT", "/api/v1/tasks/orders", specJSON, nil, http.StatusPreconditionRequired, "if_match_required"},
			{"PUT", "/api/v1/tasks/orders", specJSON, map[string]string{"If-Match": `"999"`}, http.StatusPreconditionFailed, "version_conflict"},
			{"PUT", "/api/v1/tasks/other", specJSON, map[string]string{"If-Match": etag}, http.StatusBadRequest, "invalid"},
			{"GET", "/api/v1/tasks/nope", "", nil, http.StatusNotFound, "not_found"},
			{"POST", "/api/v1/tasks/nope/stop", "", nil, http.StatusNotFound, "not_found"},
			{"POST", "/api/v1/tasks/orders/handover", "", nil, http.StatusConflict, "no_standby"},
			{"POST", "/api/v1/tasks/orders/switch-source", `{"to":"nowhere.test:3306"}`, nil, http.StatusBadRequest, "not_candidate"},
			{"POST", "/api/v1/tasks/orders/switch-source", `{"to":"no port"}`, nil, http.StatusBadRequest, "invalid"},
			{"POST", "/api/v1/tasks/nope/switch-source", `{"to":"a:1"}`, nil, http.StatusNotFound, "not_found"},
			{"POST", "/api/v1/tasks/orders/reset-position", `{"position":"mysql-bin.000001:4","confirm":"wrong"}`, nil, http.StatusBadRequest, "confirm"},
			{"POST", "/api/v1/tasks/orders/reset-position", `{"position":"mysql-bin.000001:4","confirm":"orders"}`, nil, http.StatusConflict, "busy"},
			// The forms ctl task reset-position takes, through the same parser.
			{"POST", "/api/v1/tasks/orders/reset-position", `{"position":"mysql-bin.000001:4@mariadb:2","confirm":"orders"}`, nil, http.StatusConflict, "busy"},
			{"POST", "/api/v1/tasks/orders/reset-position", `{"position":"0-1-57,1-2-9","confirm":"orders"}`, nil, http.StatusConflict, "busy"},
			{"POST", "/api/v1/tasks/orders/reset-position", `{"position":"0-1-x","confirm":"orders"}`, nil, http.StatusBadRequest, "invalid"},
			{"POST", "/api/v1/tasks/orders/reset-position", `{"position":"mysql-bin.000001:4@","confirm":"orders"}`, nil, http.StatusBadRequest, "invalid"},
			{"POST", "/api/v1/tasks/orders/skip-event", `{"confirm":"orders"}`, nil, http.StatusConflict, "busy"},
			{"POST", "/api/v1/tasks/orders/skip-event", `{}`, nil, http.StatusBadRequest, "confirm"},
			// TLS files are read on the cores' hosts: not named through the console.
			{"POST", "/api/v1/tasks", `{"name":"k1","source":{"host":"a","user":"u"},"target":{"kind":"kafka","brokers":["127.0.0.1:9092"],"tls":{}}}`, nil, http.StatusBadRequest, "invalid"},
			{"POST", "/api/v1/tasks:validate", `{"name":"k1","source":{"host":"a","user":"u"},"target":{"kind":"kafka","brokers":["127.0.0.1:9092"],"tls":{}}}`, nil, http.StatusBadRequest, "invalid"},
			{"GET", "/api/v1/jobs/nope", "", nil, http.StatusNotFound, "not_found"},
			{"GET", "/api/v1/audit?limit=0", "", nil, http.StatusBadRequest, "invalid"},
		} {
			var b any
			if tc.body != "" {
				b = tc.body
			}
			if st, body := admin.do(tc.method, tc.path, b, tc.hdr); st != tc.status || errorCode(body) != tc.code {
				t.Errorf("%s %s: %d %s; want %d %s", tc.method, tc.path, st, body, tc.status, tc.code)
			}
		}
		// The update keeps the passwords it was shown as ***.
		st, body = admin.do("GET", "/api/v1/tasks/orders", nil, nil)
		if st != 200 || strings.Contains(body, "secret") || !strings.Contains(body, `"password":"***"`) {
			t.Fatalf("get: %d %s", st, body)
		}
		var tv struct {
			Spec json.RawMessage `json:"spec"`
		}
		_ = json.Unmarshal([]byte(body), &tv)
		edited := strings.Replace(string(tv.Spec), `"shop.*"`, `"shop.orders"`, 1)
		if st, body := admin.do("PUT", "/api/v1/tasks/orders", edited, map[string]string{"If-Match": etag}); st != 200 {
			t.Fatalf("update: %d %s", st, body)
		}
		sp, _, err := c.admin.TaskVersion(t.Context(), "orders")
		if err != nil || sp.Source.Password != "src-secret" || sp.Filter.Include[0] != "shop.orders" {
			t.Fatalf("stored after update: %+v, %v", sp, err)
		}
		if st, body := admin.do("PUT", "/api/v1/tasks/orders", edited, map[string]string{"If-Match": etag}); st != http.StatusPreconditionFailed {
			t.Fatalf("second update with the same ETag: %d %s", st, body)
		}
		c.refresh() // the snapshot holds the task running: the answer to stop must not show that
		if st, body := c.as("operator").do("POST", "/api/v1/tasks/orders/stop", "", nil); st != 200 || !strings.Contains(body, `"state":"stopped"`) {
			t.Fatalf("stop: %d %s", st, body)
		}
		if st, body := admin.do("DELETE", "/api/v1/tasks/orders", nil, nil); st != http.StatusNoContent {
			t.Fatalf("delete: %d %s", st, body)
		}
		st, body = admin.do("GET", "/api/v1/audit", nil, nil)
		var audit struct {
			Entries []struct {
				User, Action, Target, Error string
				Before, After               json.RawMessage
			}
		}
		if err := json.Unmarshal([]byte(body), &audit); err != nil || st != 200 {
			t.Fatalf("audit: %d %s", st, body)
		}
		var got []string
		for _, e := range audit.Entries {
			if e.Error == "" {
				got = append(got, e.User+" "+e.Action+" "+e.Target)
			}
		}
		want := []string{"admin task.delete task/orders", "operator task.stop task/orders", "admin task.update task/orders", "admin task.create task/orders"}
		if !slices.Equal(got, want) {
			t.Errorf("audited successes, newest first: %q, want %q", got, want)
		}
		if strings.Contains(body, "secret") {
			t.Errorf("a password in the audit log: %s", body)
		}
		if !strings.Contains(body, `"before":{"state":"running"},"after":{"state":"stopped"}`) {
			t.Errorf("stop entry without before/after: %s", body)
		}
	})
}

// TestAuditShowsFieldChanges: the audit API lists each entry's changed
// fields beside its before and after, and the audit page shows them; a
// password in a source URI is in neither.
func TestAuditShowsFieldChanges(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		c := startConsole(t, tg, nil)
		admin := c.as("admin")
		if st, body := admin.do("POST", "/api/v1/tasks", specJSON, nil); st != http.StatusCreated {
			t.Fatalf("create: %d %s", st, body)
		}
		etag := admin.last.Header.Get("ETag")
		_, body := admin.do("GET", "/api/v1/tasks/orders", nil, nil)
		var tv struct {
			Spec json.RawMessage `json:"spec"`
		}
		_ = json.Unmarshal([]byte(body), &tv)
		edited := strings.Replace(string(tv.Spec), `"shop.*"`, `"shop.orders"`, 1)
		if st, body := admin.do("PUT", "/api/v1/tasks/orders", edited, map[string]string{"If-Match": etag}); st != 200 {
			t.Fatalf("update: %d %s", st, body)
		}
		if st, body := admin.do("POST", "/api/v1/sources", `{"add":["https://collector:pa55@logs.test/app.log"]}`, nil); st != 200 {
			t.Fatalf("sources: %d %s", st, body)
		}
		st, body := admin.do("GET", "/api/v1/audit", nil, nil)
		var audit struct {
			Entries []struct {
				Action  string
				Changes []struct{ Path, Op, Text string }
			}
		}
		if err := json.Unmarshal([]byte(body), &audit); err != nil || st != 200 || len(audit.Entries) != 3 {
			t.Fatalf("audit: %d %s", st, body)
		}
		var update []string
		for _, ch := range audit.Entries[1].Changes {
			update = append(update, ch.Op+" "+ch.Text)
		}
		want := []string{"changed filter.include[0]: shop.* → shop.orders"}
		if audit.Entries[1].Action != "task.update" || !slices.Equal(update, want) {
			t.Errorf("changes of %s: %q, want %q", audit.Entries[1].Action, update, want)
		}
		if strings.Contains(body, "pa55") {
			t.Errorf("a source's password in the audit log: %s", body)
		}
		st, page := admin.do("GET", "/audit", nil, nil)
		for _, want := range []string{"filter.include[0]: shop.* → shop.orders", "add: added", "before and after"} {
			if st != 200 || !strings.Contains(page, want) {
				t.Errorf("the audit page (%d) lacks %q:\n%s", st, want, page)
			}
		}
		if strings.Contains(page, "pa55") {
			t.Errorf("a source's password on the audit page")
		}
	})
}

// TestEveryRouteChecksTheRole: each route answers 401 without a login,
// 403 forbidden below its role, and something else at its role.
func TestEveryRouteChecksTheRole(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	c.addOrders()
	c.refresh()
	snap := *c.feed.Latest()
	snap.Jobs = []JobStatus{{Name: "nightly", Job: scheduler.Job{Name: "nightly", Schedule: "@daily", Command: "true"}, Stored: true}}
	c.feed.Set(&snap)
	routes := []struct {
		method, path, body string
		role               string
	}{
		{"GET", "/api/v1/me", "", "viewer"},
		{"GET", "/api/v1/tasks", "", "viewer"},
		{"GET", "/api/v1/tasks/orders", "", "viewer"},
		{"GET", "/api/v1/tasks/orders/series?range=6h", "", "viewer"},
		{"GET", "/api/v1/jobs", "", "viewer"},
		{"GET", "/api/v1/jobs/nightly", "", "viewer"},
		{"GET", "/api/v1/jobs/nightly/runs", "", "viewer"},
		{"GET", "/api/v1/jobs/nightly/durations", "", "viewer"},
		{"GET", "/api/v1/jobs/nightly/runs/2026-11-22/output", "", "viewer"},
		{"GET", "/api/v1/collectors", "", "viewer"},
		{"GET", "/api/v1/sources", "", "viewer"},
		{"GET", "/api/v1/coord", "", "viewer"},
		{"GET", "/api/v1/services", "", "viewer"},
		{"GET", "/services", "", "viewer"},
		{"GET", "/api/v1/cores?mode=cold&group=default", "", "viewer"},
		{"GET", "/api/v1/audit", "", "viewer"},
		{"GET", "/api/v1/alerts", "", "viewer"},
		{"GET", "/alerts", "", "viewer"},
		{"GET", "/", "", "viewer"},
		{"GET", "/tasks", "", "viewer"},
		{"GET", "/tasks/orders", "", "viewer"},
		{"GET", "/jobs", "", "viewer"},
		{"GET", "/jobs/nightly", "", "viewer"},
		{"GET", "/collectors", "", "viewer"},
		{"GET", "/coord", "", "viewer"},
		{"GET", "/audit", "", "viewer"},
		{"POST", "/api/v1/tasks:validate", specJSON, "operator"},
		{"POST", "/api/v1/tasks/orders/stop", "{}", "operator"},
		{"POST", "/api/v1/tasks/orders/start", "{}", "operator"},
		{"POST", "/api/v1/tasks/orders/handover", "{}", "operator"},
		{"POST", "/api/v1/tasks/orders/switch-source", `{"to":"nowhere.test:3306"}`, "operator"},
		{"POST", "/api/v1/tasks/orders/verify", `{}`, "operator"},
		{"POST", "/api/v1/jobs/nightly/pause", "{}", "operator"},
		{"POST", "/api/v1/jobs/nightly/resume", "{}", "operator"},
		{"POST", "/api/v1/jobs/nightly/run", "{}", "operator"},
		{"POST", "/api/v1/services/app1/api.svc.example/10.0.0.1:80/block", "{}", "operator"},
		{"POST", "/api/v1/services/app1/api.svc.example/10.0.0.1:80/unblock", "{}", "operator"},
		{"POST", "/api/v1/silences", `{"matchers":{"task":"orders"},"for":"1h"}`, "operator"},
		{"DELETE", "/api/v1/silences/nope", "", "operator"},
		{"GET", "/new/task", "", "admin"},
		{"GET", "/users", "", "admin"},
		{"GET", "/api/v1/users", "", "admin"},
		{"GET", "/api/v1/znodes?path=/mysql_replicator", "", "admin"},
		{"GET", "/znodes?path=/", "", "admin"},
		{"DELETE", "/api/v1/tokens/0000000000000000", "", "admin"},
		{"POST", "/api/v1/users", `{"name":"newbie","role":"viewer","password":"long enough pw","replace":true}`, "admin"},
		{"POST", "/api/v1/tokens", `{"user":"newbie"}`, "admin"},
		{"DELETE", "/api/v1/users/nobody", "", "admin"},
		{"GET", "/tasks/orders/edit", "", "admin"},
		{"POST", "/api/v1/tasks", strings.Replace(specJSON, `"orders"`, `"second"`, 1), "admin"},
		{"PUT", "/api/v1/tasks/orders", specJSON, "admin"},
		{"POST", "/api/v1/tasks/orders/reset-position", `{"position":"mysql-bin.000001:4","confirm":"orders"}`, "admin"},
		{"POST", "/api/v1/tasks/orders/skip-event", `{"confirm":"orders"}`, "admin"},
		// A repair writes to the target.
		{"POST", "/api/v1/tasks/orders/verify", `{"repair":true}`, "admin"},
		{"POST", "/api/v1/sources", `{"add":["file:///var/log/app/*.log"]}`, "admin"},
		{"DELETE", "/api/v1/tasks/second", "", "admin"},
		{"GET", "/new/job", "", "admin"},
		{"GET", "/jobs/nightly/edit", "", "admin"},
		{"POST", "/api/v1/jobs", `{"name":"second-job","schedule":"@daily","command":"/bin/true"}`, "admin"},
		{"PUT", "/api/v1/jobs/second-job", `{"name":"second-job","schedule":"@hourly","command":"/bin/true"}`, "admin"},
		{"DELETE", "/api/v1/jobs/second-job", "", "admin"},
	}
	rank := map[string]int{"viewer": 1, "operator": 2, "admin": 3}
	anon := c.anonymous()
	users := map[string]*client{"viewer": c.as("viewer"), "operator": c.as("operator"), "admin": c.as("admin")}
	for _, rt := range routes {
		var body any
		if rt.body != "" {
			body = rt.body
		}
		if st, _ := anon.do(rt.method, rt.path, body, nil); st != http.StatusUnauthorized && st != http.StatusSeeOther {
			t.Errorf("%s %s without a login: %d, want 401 (API) or 303 to /login (page)", rt.method, rt.path, st)
		}
		for _, u := range []string{"viewer", "operator", "admin"} {
			st, resp := users[u].do(rt.method, rt.path, body, nil)
			forbidden := st == http.StatusForbidden && (errorCode(resp) == "forbidden" || strings.Contains(resp, "needs the admin role"))
			if allowed := rank[u] >= rank[rt.role]; allowed == forbidden {
				t.Errorf("%s %s as %s: %d %s; role needed %s", rt.method, rt.path, u, st, resp, rt.role)
			}
		}
	}
	// Every authenticated route of the mux is in the table above.
	covered := map[string]bool{}
	for _, rt := range routes {
		req := httptest.NewRequest(rt.method, rt.path, nil)
		_, pattern := c.srv.mux.Handler(req)
		covered[pattern] = true
	}
	for _, p := range c.srv.patterns {
		if !covered[p] && !slices.Contains(publicRoutes, p) && p != "GET /api/v1/events" {
			t.Errorf("route %s is not in the role table", p)
		}
	}
}

// publicRoutes need no login.
var publicRoutes = []string{"GET /health", "GET /login", "POST /login", "POST /logout", "GET /static/", "GET /favicon.ico", "GET /api/v1/openapi.json"}

func mustSpec(t testing.TB, js string) *core.Spec {
	t.Helper()
	sp, err := core.ParseSpec([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}
