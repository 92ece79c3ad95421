package server

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shepherd-dev/shepherd/server/auth"
)

// cookieName is the session cookie.
const cookieName = "shepherd_session"

// principal is who makes a request.
type principal struct {
	User string
	Role auth.Role
	Via  string // "ui": session cookie; "api": token
}

var errUnauthenticated = errorf(http.StatusUnauthorized, "unauthenticated", "log in, or send Authorization: Bearer <token> (shepherd ctl token create)")

// authenticate finds the principal of a request: the trusted proxy's
// header, a Bearer token or the session cookie.
func (s *Server) authenticate(r *http.Request) (principal, error) {
	if name := s.proxyUser(r); name != "" {
		u, err := s.users.User(r.Context(), name)
		if errors.Is(err, auth.ErrNoUser) {
			return principal{}, errorf(http.StatusForbidden, "forbidden", "the proxy names user "+strconv.Quote(name)+", who has no account here: shepherd ctl user add")
		}
		if err != nil {
			return principal{}, err
		}
		return principal{User: u.Name, Role: u.Role, Via: "proxy"}, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return principal{}, errUnauthenticated
		}
		u, err := s.users.Token(r.Context(), strings.TrimSpace(tok))
		if errors.Is(err, auth.ErrBadToken) {
			return principal{}, errorf(http.StatusUnauthorized, "unauthenticated", "invalid or revoked API token")
		}
		if err != nil {
			return principal{}, err
		}
		return principal{User: u.Name, Role: u.Role, Via: "api"}, nil
	}
	c, err := r.Cookie(s.sessionCookieName(r))
	if err != nil {
		return principal{}, errUnauthenticated
	}
	u, err := s.users.VerifySession(r.Context(), c.Value)
	if errors.Is(err, auth.ErrBadLogin) {
		return principal{}, errUnauthenticated
	}
	if err != nil {
		return principal{}, err
	}
	return principal{User: u.Name, Role: u.Role, Via: "ui"}, nil
}

// proxyUser is the user named by the trusted proxy header, if the
// request comes from a trusted proxy; "" otherwise (a client cannot name
// itself by sending the header).
func (s *Server) proxyUser(r *http.Request) string {
	if s.cfg.TrustedProxyHeader == "" {
		return ""
	}
	name := strings.TrimSpace(r.Header.Get(s.cfg.TrustedProxyHeader))
	if name == "" {
		return ""
	}
	addr, err := netip.ParseAddr(clientAddr(r))
	if err != nil {
		return ""
	}
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(addr.Unmap()) {
			return name
		}
	}
	return ""
}

// handler is a route's body; an error it returns is the answer.
type handler func(w http.ResponseWriter, r *http.Request, p principal) error

// handle installs h at pattern for principals of role need or above.
// Mutating methods are refused in read-only mode.
func (s *Server) handle(pattern string, need auth.Role, h handler) {
	s.patterns = append(s.patterns, pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := s.deps.Now()
		p, err := s.authenticate(r)
		if err != nil {
			if !strings.HasPrefix(r.URL.Path, "/api/") && r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+safeNext(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			writeError(w, r, err)
			return
		}
		switch {
		case !p.Role.Allows(need):
			err = errorf(http.StatusForbidden, "forbidden", "this needs the "+string(need)+" role; "+p.User+" is "+string(p.Role))
		case s.cfg.ReadOnly && mutating(r.Method):
			err = errorf(http.StatusForbidden, "read_only", "this console is read-only (--read-only)")
		default:
			err = h(w, r, p)
		}
		if err != nil {
			writeError(w, r, err)
		}
		s.metrics.observe(r.Pattern, s.deps.Now().Sub(start))
	})
}

func mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// safeNext keeps a post-login redirect on this site: a path, not a URL.
func safeNext(next string) string {
	bad := func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsFunc(next, bad) {
		return "/"
	}
	return next
}

// clientAddr is the peer's IP (not a forwarded header: those are the
// client's to choose).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

type loginRequest struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// login checks a user name and password (JSON or form) and sets the
// session cookie. Failures are rate limited per client and per user.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var req loginRequest
	form := !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
	if form {
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		if err := r.ParseForm(); err != nil {
			writeError(w, r, errorf(http.StatusBadRequest, "invalid", "login form: "+err.Error()))
			return
		}
		req.User, req.Password = r.PostFormValue("user"), r.PostFormValue("password")
	} else if err := readJSON(w, r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	keys := []string{"addr:" + clientAddr(r), "user:" + req.User}
	if wait := s.limiter.blocked(keys...); wait > 0 {
		w.Header().Set("Retry-After", retryAfter(wait))
		s.loginFailed(w, r, form, errorf(http.StatusTooManyRequests, "rate_limited", "too many failed logins: wait "+retryAfter(wait)+"s"))
		return
	}
	u, err := s.users.Login(r.Context(), req.User, []byte(req.Password))
	if errors.Is(err, auth.ErrBadLogin) {
		s.limiter.fail(keys...)
		s.metrics.loginFailures.Inc()
		s.loginFailed(w, r, form, errorf(http.StatusUnauthorized, "bad_login", "wrong user name or password"))
		return
	}
	if err != nil {
		s.log.Error("login: reading the user failed", "user", req.User, "err", err)
		s.loginFailed(w, r, form, err)
		return
	}
	key, err := s.users.SessionKey(r.Context())
	if err != nil {
		s.log.Error("login: the session key is unusable", "err", err)
		s.loginFailed(w, r, form, err)
		return
	}
	exp := s.deps.Now().Add(s.cfg.SessionTTL)
	http.SetCookie(w, s.sessionCookie(r, auth.SignSession(key, u, exp), exp))
	s.log.Info("login", "user", u.Name, "role", u.Role, "remote", clientAddr(r))
	if form {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"user": u.Name, "role": string(u.Role)})
}

func (s *Server) loginFailed(w http.ResponseWriter, r *http.Request, form bool, err error) {
	if !form {
		writeError(w, r, err)
		return
	}
	ae := classify(err)
	w.WriteHeader(ae.Status)
	s.pages.render(w, r, "login", pageData{Title: "Log in", Error: ae.Message, Next: safeNext(r.URL.Query().Get("next"))})
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, s.sessionCookie(r, "", time.Time{}))
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func retryAfter(d time.Duration) string {
	return itoa(int(d.Seconds()) + 1)
}

// limiter counts failed logins per key in fixed windows. It holds at
// most maxKeys keys: when full, the oldest windows go first, so a flood
// of addresses cannot grow it (it can only make them forget sooner).
type limiter struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	now    func() time.Time
	fails  map[string]*window
}

type window struct {
	start time.Time
	n     int
}

const maxKeys = 10000

func newLimiter(max int, w time.Duration, now func() time.Time) *limiter {
	return &limiter{max: max, window: w, now: now, fails: map[string]*window{}}
}

// blocked returns how long until the most limited key may try again.
func (l *limiter) blocked(keys ...string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var wait time.Duration
	for _, k := range keys {
		if w := l.fails[k]; w != nil && now.Sub(w.start) < l.window && w.n >= l.max {
			wait = max(wait, l.window-now.Sub(w.start))
		}
	}
	return wait
}

func (l *limiter) fail(keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.fails) >= maxKeys {
		for k, w := range l.fails {
			if now.Sub(w.start) >= l.window {
				delete(l.fails, k)
			}
		}
		for k := range l.fails { // still full: forget arbitrary ones
			if len(l.fails) < maxKeys {
				break
			}
			delete(l.fails, k)
		}
	}
	for _, k := range keys {
		w := l.fails[k]
		if w == nil || now.Sub(w.start) >= l.window {
			w = &window{start: now}
			l.fails[k] = w
		}
		w.n++
	}
}
