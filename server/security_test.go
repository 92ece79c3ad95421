package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// TestAttackCrossOriginPost: a page on another origin makes the victim's
// browser POST with the victim's cookie; the console refuses it, for the
// API and the login alike, and never answers with CORS headers.
func TestAttackCrossOriginPost(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	c.addOrders()
	victim := c.as("admin")
	for _, hdr := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		{"Sec-Fetch-Site": "same-site", "Origin": "https://sub.evil.example"},
		{"Sec-Fetch-Site": "", "Origin": "https://evil.example"}, // an older browser: Origin against Host
	} {
		for _, path := range []string{"/api/v1/tasks/orders/stop", "/login", "/api/v1/tasks"} {
			st, body := victim.do("POST", path, "{}", hdr)
			if st != http.StatusForbidden || errorCode(body) != "cross_origin" {
				t.Errorf("cross-origin POST %s with %v: %d %s; want 403 cross_origin", path, hdr, st, body)
			}
		}
	}
	sp, _, err := c.admin.TaskVersion(t.Context(), "orders")
	if err != nil || sp.State != core.DesiredRunning {
		t.Fatalf("the task after the attack: %+v, %v; want it still running", sp, err)
	}
	// Same-origin still works, and no answer carries CORS headers.
	st, _ := victim.do("POST", "/api/v1/tasks/orders/stop", "{}", map[string]string{"Origin": c.http.URL})
	if st != http.StatusOK {
		t.Fatalf("same-origin stop: %d", st)
	}
	victim.do("GET", "/api/v1/tasks", nil, map[string]string{"Origin": "https://evil.example"})
	for k := range victim.last.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Errorf("CORS header %s sent", k)
		}
	}
	if csp := victim.last.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || victim.last.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("security headers: CSP %q, X-Frame-Options %q", csp, victim.last.Header.Get("X-Frame-Options"))
	}
}

// TestSessionCookieAttributes: the cookie is HttpOnly and SameSite=Strict,
// and Secure when the console is told it is behind TLS.
func TestSessionCookieAttributes(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, func(cfg *Config, _ *Deps) { cfg.SecureCookies = true })
	cl := c.anonymous()
	cl.do("POST", "/login", map[string]string{"user": "viewer", "password": testPassword}, nil)
	cookies := cl.last.Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || !cookies[0].Secure {
		t.Fatalf("session cookie: %+v", cookies)
	}
}

// TestAttackPasswordGuessing: a guesser spreading over user names (two
// guesses each, under the per-account limit) is limited by its address
// after four times the per-account limit, even with the right password,
// for the window. (One account from one address, from many addresses,
// and at once: login_test.go.)
func TestAttackPasswordGuessing(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	c := startConsole(t, tg, func(_ *Config, d *Deps) { d.Now = now })
	cl := c.anonymous()
	for i := range 20 {
		user := []string{"admin", "viewer", "nobody", "operator", "root"}[i%5] + itoa(i%10/5)
		if st, body := cl.do("POST", "/login", map[string]string{"user": user, "password": "guess"}, nil); st != http.StatusUnauthorized || errorCode(body) != "bad_login" {
			t.Fatalf("guess %d: %d %s", i, st, body)
		}
	}
	st, body := cl.do("POST", "/login", map[string]string{"user": "admin", "password": testPassword}, nil)
	if st != http.StatusTooManyRequests || cl.last.Header.Get("Retry-After") == "" {
		t.Fatalf("login after 20 failures: %d %s; want 429 with Retry-After", st, body)
	}
	clock = clock.Add(time.Minute)
	if st, body := cl.do("POST", "/login", map[string]string{"user": "admin", "password": testPassword}, nil); st != http.StatusOK {
		t.Fatalf("login after the window: %d %s", st, body)
	}
}

// TestTokensAndReadOnlyMode: a Bearer token acts with its user's role;
// a revoked or forged one is refused; --read-only refuses changes even
// to an admin.
func TestTokensAndReadOnlyMode(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, func(cfg *Config, _ *Deps) { cfg.ReadOnly = true })
	store := auth.NewStore(c.session, auth.Options{})
	tok, ti, err := store.CreateToken(context.Background(), "operator", "test")
	if err != nil {
		t.Fatal(err)
	}
	api := c.anonymous()
	api.header.Set("Authorization", "Bearer "+tok)
	if st, body := api.do("GET", "/api/v1/me", nil, nil); st != 200 || !strings.Contains(body, `"role":"operator"`) || !strings.Contains(body, `"via":"api"`) {
		t.Fatalf("me with a token: %d %s", st, body)
	}
	if st, body := api.do("POST", "/api/v1/tasks", specJSON, nil); st != http.StatusForbidden || errorCode(body) != "forbidden" {
		t.Fatalf("operator token creating a task: %d %s", st, body)
	}
	if st, body := c.as("admin").do("POST", "/api/v1/tasks", specJSON, nil); st != http.StatusForbidden || errorCode(body) != "read_only" {
		t.Fatalf("admin in read-only mode: %d %s", st, body)
	}
	if err := store.RevokeToken(context.Background(), ti.ID); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{tok, "shp_0000000000000000_forged", "Basic YWRtaW46eA=="} {
		api.header.Set("Authorization", "Bearer "+bad)
		if st, _ := api.do("GET", "/api/v1/me", nil, nil); st != http.StatusUnauthorized {
			t.Errorf("token %q: %d, want 401", bad, st)
		}
	}
}

// TestViewerSeesNoControls: pages for a viewer hold no action, form or
// edit link, and never a password; an operator's hold the actions.
func TestViewerSeesNoControls(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	c.addOrders()
	c.refresh()
	for _, path := range []string{"/", "/tasks", "/tasks/orders"} {
		_, page := c.as("viewer").do("GET", path, nil, nil)
		for _, control := range []string{"data-action", "reset-form", "New task", "/edit", "secret"} {
			if strings.Contains(page, control) {
				t.Errorf("viewer's %s holds %q", path, control)
			}
		}
	}
	if _, page := c.as("operator").do("GET", "/tasks/orders", nil, nil); !strings.Contains(page, `id="action-stop"`) || strings.Contains(page, "reset-form") {
		t.Errorf("operator's task page: want stop, no reset-position:\n%s", page)
	}
}

// TestEventsStreamSendsNewSnapshots: /api/v1/events sends the snapshot
// at once and, as each new one comes, what changed in it.
func TestEventsStreamSendsNewSnapshots(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	cl := c.as("viewer")
	req, _ := http.NewRequestWithContext(t.Context(), "GET", c.http.URL+"/api/v1/events", nil)
	res, err := cl.hc.Do(req)
	if err != nil || res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %v %v", res, err)
	}
	defer res.Body.Close()
	type event struct {
		name string
		data []byte
	}
	events := make(chan event, 4)
	go func() {
		sc := bufio.NewScanner(res.Body)
		var name string
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				name = n
			}
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- event{name, []byte(data)}
			}
		}
		close(events)
	}()
	next := func() event {
		select {
		case e := <-events:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
			return event{}
		}
	}
	var l live
	if e := next(); e.name != "snapshot" || json.Unmarshal(e.data, &l) != nil || len(l.Tasks) != 0 {
		t.Fatalf("first event: %s %s", e.name, e.data)
	}
	c.addOrders()
	c.refresh()
	var d liveDelta
	if e := next(); e.name != "delta" || json.Unmarshal(e.data, &d) != nil || len(d.Tasks.Set) != 1 || d.Tasks.Set[0].Name != "orders" ||
		d.Tasks.Set[0].Desired != "running" || d.Tasks.Set[0].State != "NOT RUNNING" {
		t.Fatalf("event after a task was added: %s %s", e.name, e.data)
	}
}

// TestOpenAPIListsEveryRoute: the document names every route the mux
// serves, with its method, and nothing else.
func TestOpenAPIListsEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi.json: %v (version %q)", err, doc.OpenAPI)
	}
	documented := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	srv := &Server{mux: http.NewServeMux()}
	srv.pages = &pages{}
	srv.routes()
	served := map[string]bool{}
	for _, p := range srv.patterns {
		if strings.HasPrefix(p, "GET /api/") || !strings.HasPrefix(p, "GET ") || p == "GET /health" {
			served[p] = true
		}
	}
	for p := range served {
		if !documented[p] {
			t.Errorf("%s is served but not in openapi.json", p)
		}
	}
	for p := range documented {
		if !served[p] {
			t.Errorf("%s is in openapi.json but not served", p)
		}
	}
}

// TestUsersPageShowsNoSecrets: the admins' users page and API list users
// and tokens without a hash or a token's secret; a revocation through the
// API works at once and is audited.
func TestUsersPageShowsNoSecrets(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	tok, ti, err := auth.NewStore(c.session, auth.Options{}).CreateToken(context.Background(), "viewer", "dashboard")
	if err != nil {
		t.Fatal(err)
	}
	secret := tok[strings.LastIndex(tok, "_")+1:]
	admin := c.as("admin")
	for _, path := range []string{"/users", "/api/v1/users"} {
		st, body := admin.do("GET", path, nil, nil)
		if st != 200 || !strings.Contains(body, ti.ID) || !strings.Contains(body, "operator") || strings.Contains(body, "$2a$") || strings.Contains(body, secret) {
			t.Errorf("GET %s: %d\n%s", path, st, body)
		}
	}
	if st, body := admin.do("DELETE", "/api/v1/tokens/"+ti.ID, nil, nil); st != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", st, body)
	}
	api := c.anonymous()
	api.header.Set("Authorization", "Bearer "+tok)
	if st, _ := api.do("GET", "/api/v1/me", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("revoked token: %d, want 401", st)
	}
	if _, body := admin.do("GET", "/api/v1/audit", nil, nil); !strings.Contains(body, `"action":"token.revoke","target":"token/`+ti.ID) {
		t.Errorf("revocation not audited: %s", body)
	}
}

// TestTrustedProxyHeader: the user a trusted proxy names is logged in
// with its stored role; the same header from an address not trusted is
// ignored, and a name with no account is refused.
func TestTrustedProxyHeader(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	for _, tc := range []struct {
		proxies    string
		user       string
		status     int
		wantInBody string
	}{
		{"127.0.0.0/8", "operator", http.StatusOK, `"via":"proxy"`},
		{"127.0.0.0/8", "mallory", http.StatusForbidden, "no account here"},
		{"10.0.0.0/8", "admin", http.StatusUnauthorized, "unauthenticated"},
	} {
		c := startConsole(t, tg, func(cfg *Config, _ *Deps) {
			cfg.TrustedProxyHeader = "X-Forwarded-User"
			cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix(tc.proxies)}
		})
		cl := c.anonymous()
		if st, body := cl.do("GET", "/api/v1/me", nil, map[string]string{"X-Forwarded-User": tc.user}); st != tc.status || !strings.Contains(body, tc.wantInBody) {
			t.Errorf("proxies %s, user %s: %d %s; want %d with %q", tc.proxies, tc.user, st, body, tc.status, tc.wantInBody)
		}
	}
}

// TestAttackStoredPasswordExfiltration: an operator, who may test a
// task's connection but not read its passwords, tries to make the console
// send the stored password to a server of theirs (the placeholder *** with
// another host), or a file of the console's host (passwordFile). Both are
// refused; the same host gets the stored password for the test.
func TestAttackStoredPasswordExfiltration(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	var tested []string
	c := startConsole(t, tg, func(_ *Config, d *Deps) {
		d.Validate = func(ctx context.Context, sp *core.Spec) (core.DryRunReport, error) {
			tested = append(tested, sp.Source.Host+"/"+sp.Source.Password)
			return core.DryRunReport{OK: true}, nil
		}
	})
	c.addOrders()
	op := c.as("operator")
	redacted := strings.ReplaceAll(strings.ReplaceAll(specJSON, "src-secret", "***"), "tgt-secret", "***")
	for _, body := range []string{
		elsewhere(redacted),
		strings.Replace(redacted, `"user":"repl"`, `"user":"other"`, 1),
		strings.Replace(specJSON, `"password":"src-secret"`, `"passwordFile":"/etc/shadow"`, 1),
	} {
		if st, resp := op.do("POST", "/api/v1/tasks:validate", body, nil); st != http.StatusBadRequest || errorCode(resp) != "invalid" {
			t.Errorf("validate %s: %d %s; want 400 invalid", body, st, resp)
		}
	}
	if st, resp := c.as("admin").do("PUT", "/api/v1/tasks/orders", elsewhere(redacted), map[string]string{"If-Match": `"0"`}); st != http.StatusBadRequest {
		t.Errorf("update moving the stored password to another host: %d %s", st, resp)
	}
	if st, resp := op.do("POST", "/api/v1/tasks:validate", redacted, nil); st != 200 {
		t.Fatalf("validate of the stored servers: %d %s", st, resp)
	}
	if len(tested) != 1 || tested[0] != "127.0.0.1/src-secret" {
		t.Errorf("dry runs made: %q; want one, on the stored host with the stored password", tested)
	}
}

// elsewhere moves a spec's source to another host.
func elsewhere(spec string) string {
	return strings.Replace(spec, `"host":"127.0.0.1","port":3306`, `"host":"evil.example","port":3306`, 1)
}

// TestLoginRedirectStaysOnSite: the page a login returns to is a path of
// the console, never another site.
func TestLoginRedirectStaysOnSite(t *testing.T) {
	for next, want := range map[string]string{
		"/tasks/orders?x=1":    "/tasks/orders?x=1",
		"//evil.example/":      "/",
		"/\t/evil.example":     "/",
		"/\\evil.example":      "/",
		"https://evil.example": "/",
		"":                     "/",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

// TestZnodeBrowserHidesWhatOnlyTheCredentialReads: the browser shows the
// tree's structure to admins, and the data of world-readable nodes only:
// never a password hash, the session key, nor a task's password.
func TestZnodeBrowserHidesWhatOnlyTheCredentialReads(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	c.addOrders()
	if _, err := c.session.Create(t.Context(), "/public", []byte("hello"), 0, zk.WorldACL(zk.PermRead|zk.PermWrite)); err != nil {
		t.Fatal(err)
	}
	admin := c.as("admin")
	admin.do("GET", "/api/v1/me", nil, nil) // the login made the session key
	for path, want := range map[string]string{
		"/shepherd/console/users/admin":  "not world-readable",
		"/shepherd/console/session-key":  "not world-readable",
		"/mysql_replicator/tasks/orders": "not world-readable",
		"/public":                        `"data":"hello"`,
		"/shepherd/console/users":        `"children":["admin","operator","viewer"]`,
	} {
		st, body := admin.do("GET", "/api/v1/znodes?path="+path, nil, nil)
		if st != 200 || !strings.Contains(body, want) || strings.Contains(body, "$2a$") || strings.Contains(body, "secret") {
			t.Errorf("GET znode %s: %d %s; want %q and no secret", path, st, body, want)
		}
	}
	for path, status := range map[string]int{"/nope": 404, "relative": 400, "/a/../b": 400} {
		if st, _ := admin.do("GET", "/api/v1/znodes?path="+path, nil, nil); st != status {
			t.Errorf("GET znode %s: %d, want %d", path, st, status)
		}
	}
}

// TestAdminManagesUsersThroughTheAPI: an admin adds a user (who can then
// log in with its role), makes it a token shown once, cannot remove its
// own account, and removes the user, ending its logins; no password
// reaches the audit log.
func TestAdminManagesUsersThroughTheAPI(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	admin := c.as("admin")
	if st, body := admin.do("POST", "/api/v1/users", `{"name":"dana","role":"operator","password":"short"}`, nil); st != http.StatusBadRequest {
		t.Fatalf("a short password: %d %s", st, body)
	}
	if st, body := admin.do("POST", "/api/v1/users", `{"name":"dana","role":"operator","password":"dana's long passphrase"}`, nil); st != http.StatusCreated {
		t.Fatalf("add user: %d %s", st, body)
	}
	dana := c.anonymous()
	if st, body := dana.do("POST", "/login", `{"user":"dana","password":"dana's long passphrase"}`, nil); st != 200 || !strings.Contains(body, `"role":"operator"`) {
		t.Fatalf("dana's login: %d %s", st, body)
	}
	st, body := admin.do("POST", "/api/v1/tokens", `{"user":"dana","note":"ci"}`, nil)
	var tok struct{ Token, ID string }
	if err := json.Unmarshal([]byte(body), &tok); st != http.StatusCreated || err != nil || !strings.HasPrefix(tok.Token, "shp_") {
		t.Fatalf("create token: %d %s", st, body)
	}
	if st, body := admin.do("DELETE", "/api/v1/users/admin", nil, nil); st != http.StatusConflict {
		t.Fatalf("removing oneself: %d %s", st, body)
	}
	if st, body := admin.do("DELETE", "/api/v1/users/dana", nil, nil); st != http.StatusNoContent {
		t.Fatalf("remove dana: %d %s", st, body)
	}
	if st, _ := dana.do("POST", "/login", `{"user":"dana","password":"dana's long passphrase"}`, nil); st != http.StatusUnauthorized {
		t.Errorf("login of a removed user: %d", st)
	}
	api := c.anonymous()
	api.header.Set("Authorization", "Bearer "+tok.Token)
	if st, _ := api.do("GET", "/api/v1/me", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("token of a removed user: %d", st)
	}
	_, audit := admin.do("GET", "/api/v1/audit", nil, nil)
	if strings.Contains(audit, "passphrase") || strings.Contains(audit, tok.Token) || !strings.Contains(audit, `"action":"user.add"`) {
		t.Errorf("audit log: %s", audit)
	}
}
