package server

import (
	"net/http"
	"time"
)

// hostCookieName is the session cookie's name where the console is
// reached over TLS. Browsers accept a __Host- cookie only from a secure
// origin, with Secure, Path=/ and no Domain, so neither a sibling
// subdomain nor a plain-HTTP page on the path can plant or overwrite the
// session (cookie tossing). Without TLS the cookie keeps its plain name,
// which browsers would refuse to store with the prefix.
const hostCookieName = "__Host-" + cookieName

// secure reports whether r reached the console over TLS: served here,
// or ended at a proxy in front (--secure-cookies).
func (s *Server) secure(r *http.Request) bool {
	return s.cfg.TLSCert != "" || s.cfg.SecureCookies || r.TLS != nil
}

// sessionCookieName is the name the session cookie has on r.
func (s *Server) sessionCookieName(r *http.Request) string {
	if s.secure(r) {
		return hostCookieName
	}
	return cookieName
}

// sessionCookie is the session cookie holding value until exp; an empty
// value deletes it. Login and logout set it with the same attributes, as
// a browser deletes a __Host- cookie only with them.
func (s *Server) sessionCookie(r *http.Request, value string, exp time.Time) *http.Cookie {
	c := &http.Cookie{Name: s.sessionCookieName(r), Value: value, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.Expires = exp
	}
	return c
}
