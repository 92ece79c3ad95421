package recipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Errors of the security policy.
var (
	// ErrBadCredential: a credential or ACL argument that cannot be used.
	ErrBadCredential = errors.New("recipe: bad credential")
	// ErrUntrusted: a node that a session without the trusted identity
	// could have written, so nothing it says may be acted on.
	ErrUntrusted = errors.New("recipe: untrusted node")
)

// Credential is a digest identity, as ZooKeeper's `addauth digest
// user:password` takes it.
type Credential struct {
	User     string
	Password string
}

// ParseCredential parses "user:password" or "digest:user:password" (the
// form zkCli's addauth and `shepherd ctl --auth` take). The user ends at
// the first colon, as in ZooKeeper; the password may contain colons. A
// value starting with "digest:" and holding another colon is read as the
// scheme prefix, so a user literally named "digest" must use the prefix:
// "digest:digest:password".
func ParseCredential(s string) (Credential, error) {
	if rest, ok := strings.CutPrefix(s, "digest:"); ok && strings.Contains(rest, ":") {
		s = rest
	}
	user, pw, ok := strings.Cut(s, ":")
	switch {
	case !ok:
		return Credential{}, fmt.Errorf("%w: want user:password or digest:user:password, got %d bytes without a colon", ErrBadCredential, len(s))
	case user == "":
		return Credential{}, fmt.Errorf("%w: empty user in %q", ErrBadCredential, redact(s))
	case pw == "":
		return Credential{}, fmt.Errorf("%w: empty password for user %q", ErrBadCredential, user)
	case strings.ContainsAny(s, "\r\n"):
		return Credential{}, fmt.Errorf("%w: user %q: a line break in the credential", ErrBadCredential, user)
	}
	return Credential{User: user, Password: pw}, nil
}

// redact hides the password of a user:password value in messages.
func redact(s string) string {
	if user, _, ok := strings.Cut(s, ":"); ok {
		return user + ":***"
	}
	return "***"
}

// maxCredentialFile bounds what ReadCredentialFile reads: one short line.
const maxCredentialFile = 4096

// ReadCredentialFile reads a credential file: one line user:password
// (or digest:user:password), a trailing newline allowed — the format of
// the admin.auth that `shepherd coord` writes in its data directory. A
// file that group or others may read is refused, as ssh refuses such a
// private key: the password would not be secret.
func ReadCredentialFile(name string) (Credential, error) {
	f, err := os.Open(name)
	if err != nil {
		return Credential{}, fmt.Errorf("%w: %v", ErrBadCredential, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Credential{}, fmt.Errorf("%w: %v", ErrBadCredential, err)
	}
	if !fi.Mode().IsRegular() {
		return Credential{}, fmt.Errorf("%w: %s is not a regular file", ErrBadCredential, name)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return Credential{}, fmt.Errorf("%w: %s is readable or writable by group or others (mode %04o): run chmod 600 %s",
			ErrBadCredential, name, perm, name)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCredentialFile+1))
	if err != nil {
		return Credential{}, fmt.Errorf("%w: read %s: %v", ErrBadCredential, name, err)
	}
	if len(data) > maxCredentialFile {
		return Credential{}, fmt.Errorf("%w: %s is longer than %d bytes: want one line user:password", ErrBadCredential, name, maxCredentialFile)
	}
	line := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	c, err := ParseCredential(line)
	if err != nil {
		return Credential{}, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// String is the credential without its password: "digest:user".
func (c Credential) String() string { return "digest:" + c.User }

// Auth is the credential as Options.Auth takes it.
func (c Credential) Auth() string { return c.User + ":" + c.Password }

// ID is the identity ZooKeeper records in a digest ACL entry for this
// credential: user:base64(sha1(user:password)).
func (c Credential) ID() string { return zk.DigestACL(0, c.User, c.Password)[0].ID }

// ParseReadACL parses one read-only identity: "digest:user:hash" as
// zkCli's setAcl names it (the hash of `shepherd ctl digest user:password`
// or ZooKeeper's DigestAuthenticationProvider), or another scheme:id such
// as "sasl:viewer" or "world:anyone". It is granted READ only.
func ParseReadACL(s string) (zk.ACL, error) {
	scheme, id, ok := strings.Cut(s, ":")
	if !ok || scheme == "" || id == "" {
		return zk.ACL{}, fmt.Errorf("%w: read ACL %q: want scheme:id, e.g. digest:viewer:<base64 sha1> or world:anyone", ErrBadCredential, s)
	}
	if scheme == "digest" && !strings.Contains(id, ":") {
		return zk.ACL{}, fmt.Errorf("%w: read ACL %q: want digest:user:hash (the hash, not the password: shepherd ctl digest user:password prints it)", ErrBadCredential, s)
	}
	return zk.ACL{Perms: zk.PermRead, Scheme: scheme, ID: id}, nil
}

// policyACLs derives the ACLs of a Session from its Options: nodes get
// the credential's cdrwa plus READ for each reader; secrets the
// credential's cdrwa alone. Without a credential both are world:anyone
// cdrwa, the open cluster ZooKeeper clients get by default.
func policyACLs(cred *Credential, readers []zk.ACL) (node, secret []zk.ACL) {
	if cred == nil {
		return zk.WorldACL(zk.PermAll), zk.WorldACL(zk.PermAll)
	}
	secret = zk.DigestACL(zk.PermAll, cred.User, cred.Password)
	node = append([]zk.ACL(nil), secret...)
	for _, r := range readers {
		r.Perms = zk.PermRead
		node = append(node, r)
	}
	return node, secret
}

// Secured reports whether the Session has a credential: the nodes it
// creates are then writable by that identity alone.
func (s *Session) Secured() bool { return s.cred != nil }

// Identity is the Session's credential without its password
// ("digest:user"), or "" without one.
func (s *Session) Identity() string {
	if s.cred == nil {
		return ""
	}
	return s.cred.String()
}

// NodeACL is the ACL the Session gives the nodes it creates (Options.ACL
// or the policy derived from the credential).
func (s *Session) NodeACL() []zk.ACL { return s.opts.ACL }

// SecretACL is the ACL of a node holding a secret, such as a task spec
// with an inline password: the credential's identity alone, no reader.
// Without a credential it is the open ACL: there is no one to restrict
// it to (the open-cluster warning says so).
func (s *Session) SecretACL() []zk.ACL { return s.secretACL }

// untrustedPerms are the permissions that let a session change what a
// node says (WRITE, ADMIN to rewrite its ACL) or replace it and its
// siblings (CREATE, DELETE on its parent). Only READ may be given to
// anyone.
const untrustedPerms = zk.PermCreate | zk.PermDelete | zk.PermWrite | zk.PermAdmin

// CheckTrusted checks that no session without the Session's identity
// could have written the node at p, before a caller acts on its content
// (runs a command it names, connects where it says, reads a file it
// lists). The rule: on p and on each of its ancestors up to and
// including base (the root of the caller's subtree, e.g. /scheduler),
// every ACL entry granting more than READ names this Session's digest
// identity. world:anyone, ip:, another user, and an ACL that merely
// names our identity on a node under a parent anyone may create in
// (ZooKeeper lets any client create a node with any ACL) all fail.
//
// It returns nil, or an error wrapping ErrUntrusted that names the
// offending node and entry and the fix; zk.ErrNoNode if p or an ancestor
// does not exist. With Options.InsecureOpenACL it logs the refusal it
// overrides as a warning and returns nil.
func (s *Session) CheckTrusted(ctx context.Context, base, p string) error {
	if p != base && !strings.HasPrefix(p, strings.TrimSuffix(base, "/")+"/") {
		return fmt.Errorf("recipe: check trust of %s: not below %s", p, base)
	}
	for q := p; ; q = path.Dir(q) {
		acl, _, err := s.Retrying().GetACL(ctx, q)
		if err != nil {
			return fmt.Errorf("recipe: check trust of %s: %w", p, err)
		}
		if bad, ok := s.untrustedEntry(acl); ok {
			err := s.untrustedError(p, q, bad)
			if !s.opts.InsecureOpenACL {
				return err
			}
			s.log.Warn("INSECURE: acting on a node an unauthenticated session could have written, because of --insecure-open-acl",
				"path", p, "refusal", err.Error())
			return nil
		}
		if q == base || q == "/" {
			return nil
		}
	}
}

// untrustedEntry returns the first entry of acl granting more than READ
// to an identity other than the Session's.
func (s *Session) untrustedEntry(acl []zk.ACL) (zk.ACL, bool) {
	for _, a := range acl {
		if a.Perms&untrustedPerms == 0 {
			continue
		}
		if s.cred != nil && a.Scheme == "digest" && a.ID == s.credID {
			continue
		}
		return a, true
	}
	return zk.ACL{}, false
}

func (s *Session) untrustedError(p, q string, bad zk.ACL) error {
	who := "this process's identity " + s.Identity()
	if s.cred == nil {
		who = "this process, which has no credential (--auth or --auth-file)"
	}
	where := p
	if q != p {
		where = fmt.Sprintf("%s: its ancestor %s", p, q)
	}
	fix := "run `shepherd ctl --auth-file <admin.auth> secure` to apply the ACL policy (docs/security.md)"
	if s.cred == nil {
		fix = "give this process the credential (--auth-file <admin.auth>) and " + fix
	}
	return fmt.Errorf("%w: %s grants %s to %s:%s, not only to %s, so an unauthenticated or foreign session could have written it; "+
		"refusing to act on it. Fix: %s, or accept open ACLs with --insecure-open-acl", ErrUntrusted, where, permString(bad.Perms), bad.Scheme, bad.ID, who, fix)
}

// PermString spells perms as zkCli does: a subset of "cdrwa".
func PermString(perms int32) string { return permString(perms) }

// permString spells perms as zkCli does: a subset of "cdrwa".
func permString(perms int32) string {
	var b strings.Builder
	for _, p := range []struct {
		bit int32
		c   byte
	}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
		if perms&p.bit != 0 {
			b.WriteByte(p.c)
		}
	}
	return b.String()
}
