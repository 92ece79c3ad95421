package tree

import (
	"crypto/sha1"
	"encoding/base64"
	"slices"
	"strings"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// Caller is who issues a request: the session and the identities its
// connection has authenticated.
type Caller struct {
	// Session is the caller's session id; 0 for the server itself (the
	// container and TTL reaper).
	Session int64
	// Auth holds the connection's identities, as ZooKeeper's authInfo:
	// {"ip", "127.0.0.1"} for every connection, {"digest", "user:hash"} after
	// addauth (see DigestID), {"super", ""} after a super digest. The
	// identity world:anyone is implicit and need not be listed.
	Auth []proto.Id
	// Super skips every ACL check, as a super digest does.
	Super bool
}

// isSuper reports whether c bypasses ACLs: the Super flag, or a "super"
// identity as ZooKeeper's DigestAuthenticationProvider adds one.
func (c *Caller) isSuper() bool {
	if c.Super {
		return true
	}
	for i := range c.Auth {
		if c.Auth[i].Scheme == "super" {
			return true
		}
	}
	return false
}

// CanRead reports whether c may read a node with acls, by the same rule as
// a read request. The server asks it before telling a watcher about an
// event (Event.ACL), as ZooKeeper does since CVE-2024-23944.
func (c *Caller) CanRead(acls []proto.ACL) bool { return c.allowed(acls, proto.PermRead) }

// allowed reports whether c holds perm (any of its bits) on a node with
// acls, by the rules of ZooKeeperServer.checkACL: an empty ACL allows
// everything, a super caller is allowed everything, otherwise an entry
// granting perm must match one of the caller's identities.
func (c *Caller) allowed(acls []proto.ACL, perm int32) bool {
	if len(acls) == 0 || c.isSuper() {
		return true
	}
	for i := range acls {
		a := &acls[i]
		if a.Perms&perm == 0 {
			continue
		}
		switch a.Id.Scheme {
		case "world":
			if a.Id.ID == "anyone" {
				return true
			}
		case "digest":
			for j := range c.Auth {
				if c.Auth[j].Scheme == "digest" && c.Auth[j].ID == a.Id.ID {
					return true
				}
			}
		case "ip":
			for j := range c.Auth {
				if c.Auth[j].Scheme == "ip" && ipMatches(c.Auth[j].ID, a.Id.ID) {
					return true
				}
			}
		}
		// Any other scheme ("auth", "super", ...) has no provider in
		// ZooKeeper's default registry and so matches nobody.
	}
	return false
}

// fixupACL validates the ACL of a create or setACL and expands "auth"
// entries, as ZooKeeper's PrepRequestProcessor.fixupACL: duplicates are
// dropped, an empty list is invalid, world:anyone is kept, "auth" becomes one
// entry per authenticated (digest) identity of the caller and is invalid
// without one, and ip and digest entries must be well formed. Any other
// scheme is invalid. An ACL that needs no change is returned as is.
func fixupACL(c *Caller, acls []proto.ACL) ([]proto.ACL, proto.ErrCode) {
	uniq := dedupACL(acls)
	if len(uniq) == 0 {
		return nil, proto.ErrInvalidACL
	}
	var out []proto.ACL // nil as long as uniq needs no expansion
	for i, a := range uniq {
		if a.Id.Scheme == "auth" {
			if out == nil {
				out = append(make([]proto.ACL, 0, len(uniq)+len(c.Auth)), uniq[:i]...)
			}
			found := false
			for _, id := range c.Auth {
				// Only the digest provider reports isAuthenticated();
				// ip identities and the super marker are skipped.
				if id.Scheme == "digest" {
					found = true
					out = append(out, proto.ACL{Perms: a.Perms, Id: id})
				}
			}
			if !found {
				return nil, proto.ErrInvalidACL
			}
			continue
		}
		if !validACLEntry(a.Id) {
			return nil, proto.ErrInvalidACL
		}
		if out != nil {
			out = append(out, a)
		}
	}
	if out == nil {
		return uniq, proto.ErrOK
	}
	return out, proto.ErrOK
}

// validACLEntry reports whether id may be stored in an ACL: world:anyone,
// or a well-formed id of a scheme ZooKeeper has a provider for.
func validACLEntry(id proto.Id) bool {
	switch id.Scheme {
	case "world":
		return id.ID == "anyone"
	case "digest":
		return validDigestID(id.ID)
	case "ip":
		return validIPExpr(id.ID)
	}
	return false
}

// dedupACL drops repeated entries, keeping the first of each; without
// repeats it returns acls itself.
func dedupACL(acls []proto.ACL) []proto.ACL {
	var out []proto.ACL
	for i, a := range acls {
		dup := slices.Contains(acls[:i], a)
		switch {
		case dup && out == nil:
			out = append(make([]proto.ACL, 0, len(acls)-1), acls[:i]...)
		case !dup && out != nil:
			out = append(out, a)
		}
	}
	if out == nil {
		return acls
	}
	return out
}

// validDigestID reports whether id is a well-formed digest id. ZooKeeper
// asks for id.split(":") to have exactly two parts, with Java's rule that
// trailing empty parts are dropped: "a:b:" passes, "a:" does not.
func validDigestID(id string) bool { return javaSplitLen(id, ':') == 2 }

// javaSplitLen returns len(s.split(sep)) in Java for a one-character
// separator: trailing empty strings are removed, and a string without the
// separator yields one part (even when empty).
func javaSplitLen(s string, sep byte) int {
	if strings.IndexByte(s, sep) < 0 {
		return 1
	}
	s = strings.TrimRight(s, string(sep))
	if s == "" {
		return 0
	}
	return strings.Count(s, string(sep)) + 1
}

// validIPExpr reports whether expr is an IPv4 address with an optional
// /bits suffix, as ZooKeeper's IPAuthenticationProvider.isValid. IPv6 is
// not supported there either.
func validIPExpr(expr string) bool {
	addr, bitsStr, hasBits := strings.Cut(expr, "/")
	if _, ok := parseIPv4(addr); !ok {
		return false
	}
	if hasBits {
		bits, ok := javaParseInt(bitsStr)
		return ok && bits >= 0 && bits <= 32
	}
	return true
}

// ipMatches reports whether the client address id falls in the ip ACL
// expression expr ("10.0.0.0/8" or an exact address).
func ipMatches(id, expr string) bool {
	addr, bitsStr, hasBits := strings.Cut(expr, "/")
	want, ok := parseIPv4(addr)
	if !ok {
		return false
	}
	bits := int64(32)
	if hasBits {
		if bits, ok = javaParseInt(bitsStr); !ok || bits < 0 || bits > 32 {
			return false
		}
	}
	got, ok := parseIPv4(id)
	if !ok {
		return false
	}
	mask := uint32(0)
	if bits > 0 {
		mask = ^uint32(0) << (32 - bits)
	}
	return got&mask == want&mask
}

// parseIPv4 parses a dotted quad the way ZooKeeper does: exactly four parts,
// each a Java integer in 0..255 (so "+1" and "007" are accepted).
func parseIPv4(s string) (uint32, bool) {
	var v uint32
	for i := 0; i < 4; i++ {
		part := s
		if i < 3 {
			var found bool
			part, s, found = strings.Cut(s, ".")
			if !found {
				return 0, false
			}
		} else if strings.IndexByte(s, '.') >= 0 {
			return 0, false
		}
		n, ok := javaParseInt(part)
		if !ok || n < 0 || n > 255 {
			return 0, false
		}
		v = v<<8 | uint32(n)
	}
	return v, true
}

// javaParseInt parses s as Java's Integer.parseInt does for ASCII input: an
// optional sign and at least one decimal digit, within the int range.
func javaParseInt(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
		if s == "" {
			return 0, false
		}
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n > 1<<31 {
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	if n > 1<<31-1 {
		return 0, false
	}
	return n, true
}

// DigestID returns the digest-scheme id for a user and password, as
// ZooKeeper's DigestAuthenticationProvider.generateDigest computes it:
// "user:" followed by the base64 SHA-1 of "user:password". The server adds
// {"digest", DigestID(user, password)} to a connection on addauth; ACL
// entries name the same string.
func DigestID(user, password string) string { return DigestOf(user + ":" + password) }

// DigestOf is the digest identity of an addauth "digest" payload as the
// client sent it, normally "user:password". ZooKeeper accepts any payload:
// the id is named after the part before the first colon (all of it when
// there is none) and hashes the whole payload.
func DigestOf(idPassword string) string {
	sum := sha1.Sum([]byte(idPassword))
	// ZooKeeper names the id after the part before the first colon.
	name, _, _ := strings.Cut(idPassword, ":")
	return name + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// redactDigests hides the hashes of digest entries, for a getACL caller
// that has READ but not ADMIN permission: ZooKeeper 3.8 rewrites each id
// with the regular expression ":.*" -> ":x".
func redactDigests(acls []proto.ACL) []proto.ACL {
	out := make([]proto.ACL, len(acls))
	for i, a := range acls {
		if a.Id.Scheme == "digest" {
			a.Id.ID = replaceColonTail(a.Id.ID)
		}
		out[i] = a
	}
	return out
}

// replaceColonTail applies Java's id.replaceAll(":.*", ":x"): every colon
// and the rest of its line become ":x" ('.' stops at line terminators).
func replaceColonTail(s string) string {
	if strings.IndexByte(s, ':') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != ':' {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString(":x")
		i++
		for i < len(s) {
			if n := lineTerminatorLen(s[i:]); n > 0 {
				break
			}
			i++
		}
	}
	return b.String()
}

// lineTerminatorLen returns the byte length of the Java line terminator
// (\n, \r, U+0085, U+2028, U+2029) at the start of s, or 0.
func lineTerminatorLen(s string) int {
	switch {
	case s[0] == '\n' || s[0] == '\r':
		return 1
	case strings.HasPrefix(s, "\u0085"):
		return 2
	case strings.HasPrefix(s, "\u2028"), strings.HasPrefix(s, "\u2029"):
		return 3
	}
	return 0
}

// aclList is an interned, immutable ACL shared by every node that has it,
// as ZooKeeper's ReferenceCountedACLCache shares them.
type aclList struct {
	acls []proto.ACL
	key  string
	refs int
}

// aclCache interns ACL lists. Lists are never modified once interned, so
// frozen snapshots may keep pointers to them while the tree moves on.
type aclCache struct {
	byKey map[string]*aclList
	buf   []byte
}

func newACLCache() *aclCache { return &aclCache{byKey: make(map[string]*aclList)} }

// acquire returns the interned list equal to acls, adding a reference.
func (c *aclCache) acquire(acls []proto.ACL) *aclList {
	c.buf = appendACLKey(c.buf[:0], acls)
	if l, ok := c.byKey[string(c.buf)]; ok {
		l.refs++
		return l
	}
	l := &aclList{acls: append([]proto.ACL(nil), acls...), key: string(c.buf), refs: 1}
	c.byKey[l.key] = l
	return l
}

// release drops a reference, forgetting the list when none is left.
func (c *aclCache) release(l *aclList) {
	l.refs--
	if l.refs <= 0 {
		delete(c.byKey, l.key)
	}
}

// appendACLKey appends an unambiguous encoding of acls.
func appendACLKey(b []byte, acls []proto.ACL) []byte {
	e := proto.NewEncoder(b)
	proto.EncodeACLs(e, acls)
	return e.Bytes()
}
