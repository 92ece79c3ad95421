package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// replay is a client that sends value as its session cookie, as a
// thief who copied it would.
func replay(c *console, value string) *client {
	cl := c.anonymous()
	cl.header.Set("Cookie", cookieName+"="+value)
	return cl
}

// cookieOf is the session cookie a login set.
func cookieOf(t *testing.T, cl *client) string {
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
