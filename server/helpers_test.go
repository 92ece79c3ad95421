package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/replication"
	"github.com/shepherd-dev/shepherd/server/auth"
)

var targets []*coordtest.Target

func TestMain(m *testing.M) {
	if connect := os.Getenv(childEnv); connect != "" {
		os.Exit(runChild(connect))
	}
	os.Exit(coordtest.Run(m, "server", 100*time.Millisecond, &targets))
}

// testPassword is every test user's password.
const testPassword = "correct horse battery"

// console is a console under test with its users admin, operator and
// viewer.
type console struct {
	t       testing.TB
	srv     *Server
	http    *httptest.Server
	feed    *cluster.Fixed
	session *recipe.Session
	admin   *core.Admin
	connect string // with the console's chroot
}

func dial(t testing.TB, connect, cred string) *recipe.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := recipe.Dial(ctx, connect, recipe.Options{SessionTimeout: 2 * time.Second, Auth: cred, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("dial %s: %v", connect, err)
	}
	t.Cleanup(s.Close)
	return s
}

// startConsole starts a console on a fresh chroot of tg.
func startConsole(t testing.TB, tg *coordtest.Target, edit func(*Config, *Deps)) *console {
	t.Helper()
	connect := tg.Chroot(t, "server")
	s := dial(t, connect, coordtest.Auth)
	store := auth.NewStore(s, auth.Options{BcryptCost: bcrypt.MinCost})
	for _, u := range []struct {
		name string
		role auth.Role
	}{{"admin", auth.Admin}, {"operator", auth.Operator}, {"viewer", auth.Viewer}} {
		if err := store.AddUser(context.Background(), u.name, u.role, []byte(testPassword), false); err != nil {
			t.Fatal(err)
		}
	}
	return newConsole(t, connect, s, edit)
}

// startConsoleOn starts another console of c's cluster: its users, its
// session nodes, on a session of its own.
func startConsoleOn(t testing.TB, c *console) *console {
	t.Helper()
	return newConsole(t, c.connect, dial(t, c.connect, coordtest.Auth), nil)
}

// newConsole starts a console on session s of connect.
func newConsole(t testing.TB, connect string, s *recipe.Session, edit func(*Config, *Deps)) *console {
	t.Helper()
	feed := cluster.NewFixed(&Snapshot{ReadAt: time.Now().UTC()})
	cfg := Config{}
	deps := Deps{Session: s, Feed: feed, Logger: slog.New(slog.DiscardHandler), BcryptCost: bcrypt.MinCost,
		Validate: func(ctx context.Context, sp *core.Spec) (core.DryRunReport, error) {
			return core.DryRunReport{OK: true, Checks: []replication.Check{{Name: "stub", OK: true, Detail: "no servers in this test"}}, Tables: []string{}}, nil
		}}
	if edit != nil {
		edit(&cfg, &deps)
	}
	srv, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &console{t: t, srv: srv, http: hs, feed: feed, session: s, admin: core.NewAdmin(s, ""), connect: connect}
}

// addOrders defines the task of specJSON ("orders").
func (c *console) addOrders() {
	c.t.Helper()
	if err := c.admin.AddTask(context.Background(), mustSpec(c.t, specJSON), false); err != nil {
		c.t.Fatal(err)
	}
}

// refresh sets the feed's snapshot to the tasks as read now.
func (c *console) refresh() {
	c.t.Helper()
	tasks, err := c.admin.Tasks(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	old := c.feed.Latest()
	next := *old
	next.ReadAt, next.Tasks = time.Now().UTC(), tasks
	c.feed.Set(&next)
}

// client is one logged-in (or anonymous) browser or API client.
type client struct {
	c      *console
	hc     *http.Client
	header http.Header
	last   *http.Response // of the last request
}

func (c *console) anonymous() *client {
	jar, _ := cookiejar.New(nil)
	return &client{c: c, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, header: http.Header{}}
}

// as logs in as user (a browser: same-origin fetches).
func (c *console) as(user string) *client {
	c.t.Helper()
	cl := c.anonymous()
	cl.header.Set("Sec-Fetch-Site", "same-origin")
	st, body := cl.do("POST", "/login", map[string]string{"user": user, "password": testPassword}, nil)
	if st != http.StatusOK {
		c.t.Fatalf("login as %s: %d %s", user, st, body)
	}
	return cl
}

// do sends a request; body is JSON-encoded unless a string or nil.
func (cl *client) do(method, path string, body any, hdr map[string]string) (int, string) {
	cl.c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, cl.c.http.URL+path, rd)
	if err != nil {
		cl.c.t.Fatal(err)
	}
	for k, v := range cl.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := cl.hc.Do(req)
	if err != nil {
		cl.c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	cl.last = res
	return res.StatusCode, string(data)
}

// errorCode is the code of an API error body.
func errorCode(body string) string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &e)
	return e.Error.Code
}
