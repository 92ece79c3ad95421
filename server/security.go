package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/server/audit"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// The audit streams: one format, two directories, one reader (GET
// /api/v1/audit?stream=…, the audit page).
const (
	// streamAudit: every mutating action, for viewers and above.
	streamAudit = "audit"
	// streamSecurity: failed logins, lockouts, 403s, untrusted nodes,
	// for admins: a failed login's user field is sometimes a password
	// typed in the wrong box.
	streamSecurity = "security"
)

// auditDir is the node below which a stream's entries are kept.
func auditDir(stream string) string { return auth.Root + "/" + stream }

// streamRoles are the streams and the role that may read each.
var streamRoles = map[string]auth.Role{"": auth.Viewer, streamAudit: auth.Viewer, streamSecurity: auth.Admin}

// readStream is the log of a stream name ("" is the audit stream) that
// a user of role may read.
func (s *Server) readStream(role auth.Role, name string) (*audit.Log, error) {
	need, ok := streamRoles[name]
	switch {
	case !ok:
		return nil, errorf(http.StatusBadRequest, "invalid", "stream "+strconv.Quote(name)+": want audit or security")
	case !role.Allows(need):
		return nil, errorf(http.StatusForbidden, "forbidden", "the "+name+" stream needs the "+string(need)+" role")
	case name == streamSecurity:
		return s.security, nil
	}
	return s.audit, nil
}

// maxEventText bounds what a client's headers or path put into an
// event: they are the client's to choose.
const maxEventText = 512

func clip(s string) string {
	if len(s) > maxEventText {
		return s[:maxEventText] + "…"
	}
	return s
}

// securityEvent records a refused or suspicious request in the log
// (keys user, remote, route, reason) and in the security stream. p is
// who made it, or for a login who it claimed to be (p.Via empty: not
// authenticated, so retention charges the client's address, not a name
// anyone can type).
func (s *Server) securityEvent(r *http.Request, p principal, kind, reason string) {
	remote := s.remoteAddr(r)
	route := r.Pattern
	if route == "" {
		route = r.Method + " " + clip(r.URL.Path)
	}
	reason = clip(reason)
	s.log.Warn("security event", "event", kind, "user", p.User, "remote", remote, "route", route, "reason", reason)
	actor := p.User
	if p.Via == "" {
		actor = "remote:" + addrKey(remote)
	}
	e := audit.Entry{Time: s.deps.Now().UTC(), User: p.User, Role: string(p.Role), Via: p.Via, Remote: remote,
		Action: kind, Target: route, Reason: reason, Actor: actor}
	if err := s.security.Write(context.WithoutCancel(r.Context()), e); err != nil {
		s.log.Error("security event not written", "event", kind, "user", p.User, "remote", remote, "err", err)
	}
}

// noteRefusal raises the security event of a request's error, if it is
// one: a 403 or a node nobody trusted wrote.
func (s *Server) noteRefusal(r *http.Request, p principal, err error) {
	if errors.Is(err, recipe.ErrUntrusted) {
		s.securityEvent(r, p, "untrusted_node", err.Error())
		return
	}
	if ae := classify(err); ae.Status == http.StatusForbidden {
		s.securityEvent(r, p, "forbidden", ae.Code+": "+ae.Message)
	}
}
