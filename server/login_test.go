package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/crypto/bcrypt"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// TestAttackConcurrentGuesses: 50 wrong passwords sent at once from one
// client. Every password check is held until each request has either
// reached it or been answered, so a limiter that checks before and
// counts after would let all 50 through; at most the limit may reach
// bcrypt, and the others are refused without it.
func TestAttackConcurrentGuesses(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	const guesses = 50
	entered := make(chan struct{}, guesses)
	release := make(chan struct{})
	c := startConsole(t, tg, func(_ *Config, d *Deps) {
		d.ComparePassword = func(hash, pw []byte) error {
			entered <- struct{}{}
			<-release
			return bcrypt.CompareHashAndPassword(hash, pw)
		}
	})
	answered := make(chan int, guesses)
	var wg sync.WaitGroup
	for range guesses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := 0 // stays 0 if the request fails (do's Fatalf ends this goroutine)
			defer func() { answered <- st }()
			st, _ = c.anonymous().do("POST", "/login", map[string]string{"user": "admin", "password": "guess"}, nil)
		}()
	}
	checked, refused := 0, 0
	for checked+refused < guesses {
		select {
		case <-entered:
			checked++
		case st := <-answered:
			if st != http.StatusTooManyRequests {
				t.Errorf("an answer before any check ended: %d, want 429", st)
			}
			refused++
		}
	}
	close(release)
	wg.Wait()
	close(answered)
	for st := range answered {
		if st != http.StatusUnauthorized {
			t.Errorf("a checked guess answered %d, want 401", st)
		}
	}
	if checked > 5 {
		t.Fatalf("%d of %d concurrent guesses reached bcrypt, want at most the limit of 5", checked, guesses)
	}
}

// proxied is a client behind the trusted proxy (the console trusts
// loopback), whose address the proxy sends in X-Forwarded-For.
func proxied(c *console, addr string) *client {
	cl := c.anonymous()
	cl.header.Set("X-Forwarded-For", addr)
	return cl
}

func login(cl *client, user, password string) (int, string) {
	cl.c.t.Helper()
	return cl.do("POST", "/login", map[string]string{"user": user, "password": password}, nil)
}

// TestAttackVictimLockout: an attacker's wrong passwords lock the
// attacker's address out of the account, not the account: its owner,
// from another address, still logs in. Lockouts that follow last twice
// as long; a wrong password says nothing about whether the user
// exists; and a client that is not a trusted proxy cannot pick its
// address with X-Forwarded-For.
func TestAttackVictimLockout(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	c := startConsole(t, tg, func(cfg *Config, d *Deps) {
		d.Now = func() time.Time { return clock }
		cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	attacker, victim := proxied(c, "203.0.113.7"), proxied(c, "198.51.100.20")
	_, wrongUser := login(attacker, "nobody", "guess")
	_, wrongPassword := login(attacker, "admin", "guess")
	if wrongUser != wrongPassword || errorCode(wrongPassword) != "bad_login" {
		t.Fatalf("unknown user answered %s, wrong password %s: want the same bad_login", wrongUser, wrongPassword)
	}
	for range 4 {
		login(attacker, "admin", "guess")
	}
	if st, body := login(attacker, "admin", testPassword); st != http.StatusTooManyRequests || attacker.last.Header.Get("Retry-After") != "61" {
		t.Fatalf("the attacker's address after 5 failures: %d %s (Retry-After %q); want 429 for 61s", st, body, attacker.last.Header.Get("Retry-After"))
	}
	if st, body := login(victim, "admin", testPassword); st != http.StatusOK {
		t.Fatalf("the victim from another address: %d %s; want 200", st, body)
	}
	if st, body := login(attacker, "operator", testPassword); st != http.StatusOK {
		t.Fatalf("another account from the attacker's address: %d %s; want 200", st, body)
	}

	// The second lockout in a row lasts two windows.
	clock = clock.Add(time.Minute)
	for range 5 {
		login(attacker, "admin", "guess")
	}
	clock = clock.Add(time.Minute)
	if st, _ := login(attacker, "admin", testPassword); st != http.StatusTooManyRequests {
		t.Fatalf("one window into the second lockout: %d, want 429", st)
	}
	clock = clock.Add(time.Minute)
	if st, body := login(attacker, "admin", testPassword); st != http.StatusOK {
		t.Fatalf("after the second lockout: %d %s", st, body)
	}

	// Without trust in the peer, X-Forwarded-For is the client's own
	// words: changing it does not escape a lockout.
	direct := startConsole(t, tg, func(_ *Config, d *Deps) { d.Now = func() time.Time { return clock } })
	for i := range 6 {
		st, _ := login(proxied(direct, "192.0.2."+itoa(i)), "admin", "guess")
		if want := map[bool]int{true: http.StatusUnauthorized, false: http.StatusTooManyRequests}[i < 5]; st != want {
			t.Fatalf("guess %d with a forged X-Forwarded-For: %d, want %d", i, st, want)
		}
	}
}

// TestAttackDistributedGuessing: guesses from many addresses at many
// accounts, one each, so that no (user, address) or address limit is
// reached, are bounded by the global ceiling.
func TestAttackDistributedGuessing(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, func(cfg *Config, _ *Deps) {
		cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		cfg.LoginGlobalFailures = 8
	})
	for i := range 9 {
		st, body := login(proxied(c, "192.0.2."+itoa(i)), "user"+itoa(i), "guess")
		if want := map[bool]int{true: http.StatusUnauthorized, false: http.StatusTooManyRequests}[i < 8]; st != want {
			t.Fatalf("guess %d (its own address and user): %d %s, want %d", i, st, body, want)
		}
	}
}

// replay is a client that sends value as its session cookie, as a
// thief who copied it would.
func replay(c *console, value string) *client {
	cl := c.anonymous()
	cl.header.Set("Cookie", cookieName+"="+value)
	return cl
}

// cookieOf is the session cookie a login set.
func cookieOf(t testing.TB, cl *client) string {
	t.Helper()
	for _, ck := range cl.last.Cookies() {
		if ck.Name == cookieName && ck.Value != "" {
			return ck.Value
		}
	}
	t.Fatalf("no session cookie in %v", cl.last.Header["Set-Cookie"])
	return ""
}

// TestLogoutEndsTheSession: after logout the cookie's value, replayed,
// is refused (on this console and another), while the user's other
// session goes on.
func TestLogoutEndsTheSession(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	laptop, phone := c.as("operator"), c.as("operator")
	stolen := cookieOf(t, laptop)
	if st, body := laptop.do("POST", "/logout", nil, map[string]string{"Content-Type": "application/json"}); st != http.StatusNoContent {
		t.Fatalf("logout: %d %s", st, body)
	}
	other := startConsoleOn(t, c)
	for name, cons := range map[string]*console{"this console": c, "another console": other} {
		if st, body := replay(cons, stolen).do("GET", "/api/v1/me", nil, nil); st != http.StatusUnauthorized {
			t.Errorf("a logged-out cookie replayed on %s: %d %s; want 401", name, st, body)
		}
	}
	if st, body := phone.do("GET", "/api/v1/me", nil, nil); st != http.StatusOK {
		t.Errorf("the user's other session after one logout: %d %s", st, body)
	}
}

// TestPasswordChangeEndsSessions: a password changed elsewhere (ctl, on
// another console's session) ends the user's sessions here at once,
// although this console's clock stands still and its cache of the user
// never ages.
func TestPasswordChangeEndsSessions(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	clock := time.Now() // the cookie jar drops cookies that expired by its own clock
	c := startConsole(t, tg, func(_ *Config, d *Deps) { d.Now = func() time.Time { return clock } })
	op := c.as("operator")
	if st, _ := op.do("GET", "/api/v1/me", nil, nil); st != http.StatusOK {
		t.Fatalf("before the change: %d", st)
	}
	ctl := auth.NewStore(dial(t, c.connect, coordtest.Auth), auth.Options{BcryptCost: bcrypt.MinCost})
	if err := ctl.AddUser(context.Background(), "operator", auth.Operator, []byte("a brand new passphrase"), true); err != nil {
		t.Fatal(err)
	}
	if st, body := op.do("GET", "/api/v1/me", nil, nil); st != http.StatusUnauthorized {
		t.Fatalf("a session from before the password change: %d %s; want 401", st, body)
	}
}

// syncBuffer is a log destination handlers write to concurrently.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records are the logged records with msg.
func (b *syncBuffer) records(msg string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(b.buf.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// securityEntries reads the security stream as an admin.
func securityEntries(t *testing.T, admin *client) []map[string]any {
	t.Helper()
	st, body := admin.do("GET", "/api/v1/audit?stream=security&limit=1000", nil, nil)
	var out struct{ Entries []map[string]any }
	if err := json.Unmarshal([]byte(body), &out); st != http.StatusOK || err != nil {
		t.Fatalf("security stream: %d %s", st, body)
	}
	return out.Entries
}

// TestSecurityEventsAreRecorded: a failed login, a lockout, a 403 (a
// role too low, a cross-origin POST) and a node nobody trusted wrote
// each go to the log, with user, remote, route and reason, and to the
// security stream, which admins alone read.
func TestSecurityEventsAreRecorded(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	logs := &syncBuffer{}
	c := startConsole(t, tg, func(cfg *Config, d *Deps) {
		d.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		cfg.LoginFailures = 1
	})
	login(c.anonymous(), "nobody", "guess")
	viewer := c.as("viewer")
	if st, _ := viewer.do("POST", "/api/v1/tasks", specJSON, nil); st != http.StatusForbidden {
		t.Fatalf("a viewer creating a task: %d", st)
	}
	if st, _ := viewer.do("GET", "/api/v1/audit?stream=security", nil, nil); st != http.StatusForbidden {
		t.Fatalf("a viewer reading the security stream: %d", st)
	}
	if st, _ := viewer.do("POST", "/api/v1/tasks/orders/stop", nil, map[string]string{"Sec-Fetch-Site": "cross-site"}); st != http.StatusForbidden {
		t.Fatalf("a cross-origin POST: %d", st)
	}
	// A user record planted with an open ACL, as before the first `ctl
	// user add` on an unsecured ensemble.
	hash, _ := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	rec := `{"version":1,"name":"eve","role":"admin","hash":"` + string(hash) + `"}`
	if _, err := c.session.Create(context.Background(), auth.Root+"/users/eve", []byte(rec), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if st, _ := login(c.anonymous(), "eve", testPassword); st != http.StatusInternalServerError {
		t.Fatalf("login with a planted record: %d", st)
	}

	want := []struct{ action, user, route, reason string }{
		{"untrusted_node", "eve", "POST /login", "untrusted"},
		{"cross_origin", "", "POST /api/v1/tasks/orders/stop", "cross-site"},
		{"forbidden", "viewer", "GET /api/v1/audit", "security stream needs the admin role"},
		{"forbidden", "viewer", "POST /api/v1/tasks", "needs the admin role"},
		{"login.locked", "nobody", "POST /login", "locked for 1m0s"},
		{"login.failed", "nobody", "POST /login", "wrong user name or password"},
	}
	got := securityEntries(t, c.as("admin"))
	if len(got) != len(want) {
		t.Fatalf("security stream: %v; want %d entries", got, len(want))
	}
	for i, w := range want {
		e := got[i]
		if e["action"] != w.action || e["user"] != w.user && !(w.user == "" && e["user"] == nil) || e["target"] != w.route ||
			e["remote"] != "127.0.0.1" || !strings.Contains(e["reason"].(string), w.reason) {
			t.Errorf("security entry %d: %v; want %+v from 127.0.0.1", i, e, w)
		}
	}
	logged := logs.records("security event")
	if len(logged) != len(want) {
		t.Fatalf("%d security events logged, want %d: %v", len(logged), len(want), logged)
	}
	for i, rec := range logged {
		w := want[len(want)-1-i]
		if rec["event"] != w.action || rec["user"] != w.user || rec["remote"] != "127.0.0.1" || rec["route"] != w.route || !strings.Contains(rec["reason"].(string), w.reason) {
			t.Errorf("logged security event %d: %v; want %+v", i, rec, w)
		}
	}
}

// TestAttackAuditFlood: an operator's flood of failing actions does not
// push an admin's earlier entries out of the audit log, and keeps about
// its own quota of entries.
func TestAttackAuditFlood(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, func(cfg *Config, _ *Deps) { cfg.AuditKeep, cfg.AuditPerActor = 40, 8 })
	admin := c.as("admin")
	for _, body := range []string{`{"add":["file:///var/log/a.log"]}`, `{"add":["file:///var/log/b.log"]}`, `{"remove":["file:///var/log/a.log"]}`} {
		if st, out := admin.do("POST", "/api/v1/sources", body, nil); st != http.StatusOK {
			t.Fatalf("change sources: %d %s", st, out)
		}
	}
	op := c.as("operator")
	for range 200 {
		if st, _ := op.do("POST", "/api/v1/tasks/nope/handover", nil, nil); st < 400 {
			t.Fatalf("handover of a task that does not exist: %d", st)
		}
	}
	st, body := admin.do("GET", "/api/v1/audit?limit=1000", nil, nil)
	var out struct {
		Entries []struct{ User, Action string }
	}
	if err := json.Unmarshal([]byte(body), &out); st != http.StatusOK || err != nil {
		t.Fatalf("audit: %d %s", st, body)
	}
	count := map[string]int{}
	for _, e := range out.Entries {
		count[e.User]++
	}
	// Trimming runs at every 16th entry: up to 15 beyond the quota.
	if count["admin"] != 3 || count["operator"] < 8 || count["operator"] > 8+15 {
		t.Fatalf("entries by user after the flood: %v; want admin's 3 and 8 to 23 of the operator's", count)
	}
}

// BenchmarkAuthenticate: what authenticating a request costs, by how it
// is authenticated: a session cookie (a MAC and one exists of its
// session node), and an API token (a cached user and one read of the
// token node).
//
//	SHEPHERD_IT=1 go test -run '^$' -bench BenchmarkAuthenticate ./server/
func BenchmarkAuthenticate(b *testing.B) {
	tg := targets[0]
	tg.Require(b)
	c := startConsole(b, tg, nil)
	cookie := cookieOf(b, c.as("viewer"))
	tok, _, err := auth.NewStore(c.session, auth.Options{}).CreateToken(context.Background(), "viewer", "bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, header, value string }{
		{"cookie", "Cookie", cookieName + "=" + cookie},
		{"token", "Authorization", "Bearer " + tok},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r, _ := http.NewRequest("GET", "/api/v1/me", nil)
			r.Header.Set(bc.header, bc.value)
			for b.Loop() {
				if _, err := c.srv.authenticate(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
