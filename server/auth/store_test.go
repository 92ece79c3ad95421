package auth

import (
	"context"
	"errors"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/crypto/bcrypt"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

var targets []*coordtest.Target

func TestMain(m *testing.M) {
	os.Exit(coordtest.Run(m, "auth", 100*time.Millisecond, &targets))
}

func dial(t *testing.T, connect, auth string) *recipe.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := recipe.Dial(ctx, connect, recipe.Options{SessionTimeout: 2 * time.Second, Auth: auth})
	if err != nil {
		t.Fatalf("dial %s: %v", connect, err)
	}
	t.Cleanup(s.Close)
	return s
}

func newStore(t *testing.T, s *recipe.Session, now func() time.Time) *Store {
	return NewStore(s, Options{BcryptCost: bcrypt.MinCost, Now: now})
}

func TestUsersLoginTokensAndCookies(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := context.Background()
		connect := tg.Chroot(t, "auth")
		s := dial(t, connect, coordtest.Auth)
		clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		st := newStore(t, s, func() time.Time { return clock })

		if err := st.AddUser(ctx, "alice", Admin, []byte("short"), false); !errors.Is(err, ErrInvalid) {
			t.Fatalf("a 5-byte password: got %v, want ErrInvalid", err)
		}
		if err := st.AddUser(ctx, "alice", Admin, []byte("correct horse"), false); err != nil {
			t.Fatal(err)
		}
		if err := st.AddUser(ctx, "alice", Viewer, []byte("correct horse"), false); !errors.Is(err, ErrUserExists) {
			t.Fatalf("second add without replace: got %v, want ErrUserExists", err)
		}
		if _, err := st.Login(ctx, "alice", []byte("wrong horse")); !errors.Is(err, ErrBadLogin) {
			t.Fatalf("wrong password: got %v", err)
		}
		if _, err := st.Login(ctx, "mallory", []byte("correct horse")); !errors.Is(err, ErrBadLogin) {
			t.Fatalf("unknown user: got %v", err)
		}
		u, err := st.Login(ctx, "alice", []byte("correct horse"))
		if err != nil || u.Role != Admin {
			t.Fatalf("login: %+v, %v", u, err)
		}
		// The record holds a bcrypt hash, never the password, and only
		// the credential may read it.
		data, _, err := s.Get(ctx, st.userPath("alice"))
		if err != nil || strings.Contains(string(data), "correct horse") || !strings.Contains(string(data), "$2a$") {
			t.Fatalf("stored user record: %s, %v", data, err)
		}
		if _, _, err := dial(t, connect, "").Get(ctx, st.userPath("alice")); !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("anonymous read of the user record: got %v, want ErrNoAuth", err)
		}

		// Cookies: accepted by another console (another Store, same key
		// and session nodes), refused when tampered, expired, logged out,
		// or after a password change: at once, on the other console too.
		other := newStore(t, dial(t, connect, coordtest.Auth), func() time.Time { return clock })
		c, err := st.CreateSession(ctx, u, clock.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := other.VerifySession(ctx, c); err != nil || got.Name != "alice" {
			t.Fatalf("cookie on another console: %+v, %v", got, err)
		}
		for _, bad := range []string{c + "x", strings.Replace(c, "v2.", "v2.Ym9i", 1), "v2.YWxpY2U.aaaaaaaaaaaaaaaa.99999999999.AAAA", ""} {
			if _, err := other.VerifySession(ctx, bad); err == nil {
				t.Fatalf("tampered cookie %q accepted", bad)
			}
		}
		expired, err := st.CreateSession(ctx, u, clock.Add(-time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.VerifySession(ctx, expired); err == nil {
			t.Fatal("expired cookie accepted")
		}
		loggedOut, err := st.CreateSession(ctx, u, clock.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.EndSession(ctx, loggedOut); err != nil {
			t.Fatal(err)
		}
		if _, err := st.VerifySession(ctx, loggedOut); !errors.Is(err, ErrBadLogin) {
			t.Fatalf("a logged-out cookie: got %v, want ErrBadLogin", err)
		}
		if _, err := st.VerifySession(ctx, c); err != nil {
			t.Fatalf("logging out one session ended another: %v", err)
		}
		if err := st.AddUser(ctx, "alice", Admin, []byte("new battery staple"), true); err != nil {
			t.Fatal(err)
		}
		if _, err := other.VerifySession(ctx, c); err == nil {
			t.Fatal("a cookie from before the password change was accepted")
		}
		if names, _ := st.children(ctx, st.sessionsDir("alice")); len(names) != 0 {
			t.Fatalf("sessions left after the password change: %v", names)
		}

		// Tokens: shown once, only a digest stored, revocable, gone with the user.
		tok, ti, err := st.CreateToken(ctx, "alice", "ci")
		if err != nil {
			t.Fatal(err)
		}
		data, _, _ = s.Get(ctx, st.tokenPath(ti.ID))
		if strings.Contains(string(data), tok[len(tokenPrefix)+17:]) {
			t.Fatalf("token secret stored in clear: %s", data)
		}
		if got, err := other.Token(ctx, tok); err != nil || got.Name != "alice" {
			t.Fatalf("token: %+v, %v", got, err)
		}
		altered := tok[:len(tok)-1] + map[bool]string{true: "B", false: "A"}[strings.HasSuffix(tok, "A")]
		if _, err := other.Token(ctx, altered); !errors.Is(err, ErrBadToken) {
			t.Fatalf("altered token: got %v", err)
		}
		if err := st.RemoveUser(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := newStore(t, s, nil).Token(ctx, tok); !errors.Is(err, ErrBadToken) {
			t.Fatalf("token of a removed user: got %v", err)
		}
	})
}

// TestAttackForgedUserRecord: an anonymous session that pre-creates the
// console's tree (as a fresh ensemble lets anyone) and writes itself an
// admin record gets nothing: the console refuses the record as untrusted.
func TestAttackForgedUserRecord(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := context.Background()
		connect := tg.Chroot(t, "authattack")
		anon := dial(t, connect, "")
		hash, _ := bcrypt.GenerateFromPassword([]byte("attacker-pw"), bcrypt.MinCost)
		if err := anon.EnsurePath(ctx, Root+"/users"); err != nil {
			t.Fatal(err)
		}
		rec := `{"version":1,"name":"eve","role":"admin","hash":"` + string(hash) + `"}`
		if _, err := anon.Create(ctx, Root+"/users/eve", []byte(rec), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		st := newStore(t, dial(t, connect, coordtest.Auth), nil)
		if _, err := st.Login(ctx, "eve", []byte("attacker-pw")); !errors.Is(err, recipe.ErrUntrusted) {
			t.Fatalf("login with a forged record: got %v, want ErrUntrusted", err)
		}
		if _, err := st.SessionKey(ctx); !errors.Is(err, recipe.ErrUntrusted) {
			t.Fatalf("session key below a world-writable root: got %v, want ErrUntrusted", err)
		}
	})
}

// TestSessionsAreBounded: a user's expired sessions are deleted at its
// next login, and a user keeps at most maxSessions, the oldest going
// first: logging in again and again cannot grow the tree.
func TestSessionsAreBounded(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := context.Background()
		s := dial(t, tg.Chroot(t, "sessions"), coordtest.Auth)
		clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		st := newStore(t, s, func() time.Time { return clock })
		if err := st.AddUser(ctx, "alice", Viewer, []byte("correct horse"), false); err != nil {
			t.Fatal(err)
		}
		u, err := st.User(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		short, err := st.CreateSession(ctx, u, clock.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(2 * time.Minute)
		var first string
		for i := range maxSessions + 3 {
			c, err := st.CreateSession(ctx, u, clock.Add(time.Hour+time.Duration(i)*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = c
			}
		}
		names, err := st.children(ctx, st.sessionsDir("alice"))
		if err != nil || len(names) != maxSessions {
			t.Fatalf("%d sessions kept (%v), want %d", len(names), err, maxSessions)
		}
		for _, n := range names {
			if expiryOf(n) <= clock.Unix() {
				t.Errorf("expired session %s kept (the one of %s)", n, short)
			}
		}
		if _, err := st.VerifySession(ctx, first); !errors.Is(err, ErrBadLogin) {
			t.Errorf("the oldest session, beyond the bound, was accepted: %v", err)
		}
	})
}

// TestAttackPlantedAdminNarrowed is issue 23's planted admin: before the
// first `ctl user add`, an anonymous session creates the console's tree,
// an admin record with a hash it knows and an API token for it, then
// narrows every ACL it made to world:anyone:r, so that no one else may
// write them either. The console refuses the login and the token with
// the reason, and the real admin's `ctl user add` fails with a message
// that says what to do, instead of a bare NoAuth.
func TestAttackPlantedAdminNarrowed(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		connect := tg.Chroot(t, "authplant")
		anon := dial(t, connect, "")
		hash, _ := bcrypt.GenerateFromPassword([]byte("attacker-pw"), bcrypt.MinCost)
		const tokenID, secret = "0123456789abcdef", "planted-secret"
		planted := []struct{ path, data string }{
			{Root + "/users/mallory", `{"version":1,"name":"mallory","role":"admin","hash":"` + string(hash) + `"}`},
			{Root + "/tokens/" + tokenID, `{"version":1,"id":"` + tokenID + `","user":"mallory","digest":"` + digest(secret) + `"}`},
		}
		for _, n := range planted {
			if err := anon.EnsurePath(ctx, path.Dir(n.path)); err != nil {
				t.Fatal(err)
			}
			if _, err := anon.Create(ctx, n.path, []byte(n.data), 0, nil); err != nil {
				t.Fatal(err)
			}
		}
		// Children first: the parents still let the attacker change them.
		for _, p := range []string{planted[0].path, planted[1].path, Root + "/users", Root + "/tokens", Root, path.Dir(Root)} {
			if _, err := anon.SetACL(ctx, p, zk.WorldACL(zk.PermRead), -1); err != nil {
				t.Fatalf("narrow %s: %v", p, err)
			}
		}

		st := newStore(t, dial(t, connect, coordtest.Auth), nil)
		wantRefusal := func(what string, err error, node string) {
			t.Helper()
			if !errors.Is(err, recipe.ErrUntrusted) || !strings.Contains(err.Error(), node) ||
				!strings.Contains(err.Error(), "grants WRITE or ADMIN to no trusted identity (its ACL: world:anyone:r)") {
				t.Errorf("%s: %v\nwant ErrUntrusted naming %s and its world:anyone:r ACL", what, err, node)
			}
		}
		_, err := st.Login(ctx, "mallory", []byte("attacker-pw"))
		wantRefusal("login as the planted admin", err, planted[0].path)
		_, err = st.Token(ctx, tokenPrefix+tokenID+"_"+secret)
		wantRefusal("the planted token", err, planted[1].path)

		err = st.AddUser(ctx, "alice", Admin, []byte("correct horse battery"), false)
		wantRefusal("the real admin's user add", err, Root+"/users")
		if err != nil && !strings.Contains(err.Error(), "Fix: ") {
			t.Errorf("user add: %v, want the fix in the message", err)
		}
	})
}

// The unknown-user hash is made at the first login of an unknown user,
// not when a process starts or a Store is made (every shepherd process
// links this package), and at the store's cost, so that an unknown user
// takes as long as a wrong password.
func TestUnknownUserHashMadeOnFirstUseAtStoreCost(t *testing.T) {
	st := NewStore(nil, Options{BcryptCost: bcrypt.MinCost + 1})
	if st.dummy != nil {
		t.Fatal("NewStore made the unknown-user hash; it must wait for the first unknown user")
	}
	h := st.dummyHash()
	if cost, err := bcrypt.Cost(h); err != nil || cost != bcrypt.MinCost+1 {
		t.Fatalf("unknown-user hash: cost %d, %v; want the store's cost %d", cost, err, bcrypt.MinCost+1)
	}
	if again := st.dummyHash(); &again[0] != &h[0] {
		t.Fatal("the unknown-user hash was made twice")
	}
}
