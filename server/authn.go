package server

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
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
	if !s.trustedProxy(peerAddr(r)) {
		return ""
	}
	return name
}

// trustedProxy reports whether addr is one of --trusted-proxies.
func (s *Server) trustedProxy(addr string) bool {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
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
			s.noteRefusal(r, p, err)
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
			s.noteRefusal(r, p, err)
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

// peerAddr is the IP of the connection's other end.
func peerAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// remoteAddr is the client's address, as the login limiter, the logs
// and the audit see it. It is the peer, unless the peer is a trusted
// proxy: then X-Forwarded-For is read from its right end (what the
// nearest proxy appended), skipping trusted proxies, and the first
// other address is the client. Everything left of it was written by
// the client and is never believed. Without --trusted-proxies the
// header is ignored: any client could name any address in it.
func (s *Server) remoteAddr(r *http.Request) string {
	hop := peerAddr(r)
	if !s.trustedProxy(hop) {
		return hop
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		ip, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return hop // a proxy of ours wrote nonsense: count it as the client
		}
		hop = ip.Unmap().String()
		if !s.trustedProxy(hop) {
			return hop
		}
	}
	return hop
}

type loginRequest struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// login checks a user name and password (JSON or form), records a
// session and sets its cookie. Failures are rate limited (see limiter).
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
	u, err := s.checkPassword(w, r, req)
	if err != nil {
		s.loginFailed(w, r, form, err)
		return
	}
	exp := s.deps.Now().Add(s.cfg.SessionTTL)
	value, err := s.users.CreateSession(r.Context(), u, exp)
	if err != nil {
		s.log.Error("login: the session could not be recorded", "user", u.Name, "err", err)
		s.loginFailed(w, r, form, err)
		return
	}
	http.SetCookie(w, s.sessionCookie(r, value, exp))
	s.log.Info("login", "user", u.Name, "role", u.Role, "remote", s.remoteAddr(r))
	if form {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"user": u.Name, "role": string(u.Role)})
}

// errBadLogin is the one answer to a wrong user name or password: it
// does not say which (no oracle of the names that exist).
var errBadLogin = errorf(http.StatusUnauthorized, "bad_login", "wrong user name or password")

// checkPassword checks a login's password after taking its place in the
// limiter, and records the outcome there, in the log and in the
// security stream.
func (s *Server) checkPassword(w http.ResponseWriter, r *http.Request, req loginRequest) (auth.User, error) {
	remote := s.remoteAddr(r)
	user := req.User
	if auth.CheckName(user) != nil {
		user = "(invalid)" // not a name anyone has: one key, bounded in size
	}
	at, wait := s.limiter.reserve(user, remote)
	if wait > 0 {
		s.metrics.loginFailures.Inc()
		w.Header().Set("Retry-After", retryAfter(wait))
		return auth.User{}, errRateLimited(wait)
	}
	u, err := s.users.Login(r.Context(), req.User, []byte(req.Password))
	switch {
	case errors.Is(err, auth.ErrBadLogin):
		locked := at.failed()
		s.metrics.loginFailures.Inc()
		claimed := principal{User: user}
		s.securityEvent(r, claimed, "login.failed", "wrong user name or password")
		for _, l := range locked {
			s.securityEvent(r, claimed, "login.locked", "too many failed logins ("+l.Key+"): locked for "+l.For.String())
		}
		return auth.User{}, errBadLogin
	case err != nil:
		at.abandoned()
		s.log.Error("login: reading the user failed", "user", user, "remote", remote, "err", err)
		s.noteRefusal(r, principal{User: user}, err)
		return auth.User{}, err
	}
	at.succeeded()
	return u, nil
}

// errRateLimited is the answer to a login refused by the limiter.
func errRateLimited(wait time.Duration) error {
	return errorf(http.StatusTooManyRequests, "rate_limited", "too many failed logins: wait "+retryAfter(wait)+"s")
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

// logout ends the session of the request's cookie on every console
// (its node is deleted) and clears the cookie. If the session could not
// be ended, the answer says so: the cookie would still work elsewhere.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, s.sessionCookie(r, "", time.Time{}))
	if c, err := r.Cookie(s.sessionCookieName(r)); err == nil {
		u, err := s.users.EndSession(r.Context(), c.Value)
		switch {
		case err == nil:
			s.log.Info("logout", "user", u.Name, "remote", s.remoteAddr(r))
		case !errors.Is(err, auth.ErrBadLogin): // a cookie already dead needs no ending
			s.log.Error("logout: the session could not be ended", "remote", s.remoteAddr(r), "err", err)
			writeError(w, r, errorf(http.StatusServiceUnavailable, "unavailable", "the session could not be ended ("+err.Error()+"): it still works until it expires; log out again"))
			return
		}
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func retryAfter(d time.Duration) string {
	return itoa(int(d.Seconds()) + 1)
}
