package recipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"

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

// ParseTrustedWriter parses one trusted writer: "digest:user:hash", the
// identity of another team's credential as `shepherd ctl digest
// user:password` prints it. Only digest identities may be trusted: they
// are the only ones Shepherd's processes hold, and trusting world:anyone
// or an ip: identity would trust what an unauthenticated session wrote
// (--insecure-open-acl is the opt-out for that).
func ParseTrustedWriter(s string) (zk.ACL, error) {
	id, ok := strings.CutPrefix(s, "digest:")
	if user, hash, _ := strings.Cut(id, ":"); !ok || user == "" || hash == "" {
		return zk.ACL{}, fmt.Errorf("%w: trusted writer %q: want digest:user:hash (the hash, not the password: shepherd ctl digest user:password prints it)", ErrBadCredential, s)
	}
	return zk.ACL{Perms: zk.PermAll, Scheme: "digest", ID: id}, nil
}

// policyACLs derives the ACLs of a Session from its Options: nodes get
// cdrwa for the credential and each trusted writer, plus READ for each
// reader; secrets the credential's cdrwa alone. Without a credential both
// are world:anyone cdrwa, the open cluster ZooKeeper clients get by
// default.
func policyACLs(cred *Credential, writers, readers []zk.ACL) (node, secret []zk.ACL) {
	if cred == nil {
		return zk.WorldACL(zk.PermAll), zk.WorldACL(zk.PermAll)
	}
	secret = zk.DigestACL(zk.PermAll, cred.User, cred.Password)
	node = append([]zk.ACL(nil), secret...)
	for _, w := range writers {
		if w.ID != secret[0].ID {
			node = append(node, zk.ACL{Perms: zk.PermAll, Scheme: "digest", ID: w.ID})
		}
	}
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

// writerPerms are the permissions one of which a trusted identity must
// hold on a node for the node to count as written by it: a node nobody
// trusted may write (world:anyone:r alone, say) was written by someone
// else and then narrowed.
const writerPerms = zk.PermWrite | zk.PermAdmin

// CheckTrusted checks that the node at p was written by a trusted
// identity and that no one else could have written it, before a caller
// acts on its content (runs a command it names, connects where it says,
// reads a file it lists). Trust is provenance: on p and on each of its
// ancestors up to and including base (the root of the caller's subtree,
// e.g. /scheduler), the ACL must grant WRITE or ADMIN to a trusted
// identity — the Session's own digest identity or one of
// Options.TrustedWriters — and grant CREATE, DELETE, WRITE or ADMIN to
// no one else. world:anyone, ip:, another user, an ACL that merely names
// our identity on a node under a parent anyone may create in (ZooKeeper
// lets any client create a node with any ACL), and a node narrowed to
// world:anyone:r or to a foreign identity after it was written, all fail.
// Without a credential nothing is trusted: there is no identity to have
// written it.
//
// It returns nil, or an error wrapping ErrUntrusted that names the
// offending node and entry and the fix; zk.ErrNoNode if p or an ancestor
// does not exist. With Options.InsecureOpenACL it logs the refusal it
// overrides as a warning and returns nil.
func (s *Session) CheckTrusted(ctx context.Context, base, p string) error {
	return s.CheckTrustedAll(ctx, base, []string{p})[0]
}

// maxACLReadsInFlight bounds the ACL reads CheckTrustedAll has sent and
// not yet had answered.
const maxACLReadsInFlight = 128

// CheckTrustedAll is CheckTrusted of each of paths, all below base: its
// i-th error is what CheckTrusted(ctx, base, paths[i]) returns. The ACL
// of each node is read once, however many of the paths it is an ancestor
// of, and the reads are sent together, pipelined on the Session's
// connection, instead of one round trip after another: listing 1,000
// tasks reads 1,002 ACLs in one batch rather than 3,000 in turn. (A
// ZooKeeper multi-read carries getData and getChildren, not getACL.)
func (s *Session) CheckTrustedAll(ctx context.Context, base string, paths []string) []error {
	errs := make([]error, len(paths))
	// The nodes to read: each path and its ancestors up to base.
	var nodes []string
	seen := map[string]bool{}
	for i, p := range paths {
		if p != base && !strings.HasPrefix(p, strings.TrimSuffix(base, "/")+"/") {
			errs[i] = fmt.Errorf("recipe: check trust of %s: not below %s", p, base)
			continue
		}
		for q := p; !seen[q]; q = path.Dir(q) {
			seen[q] = true
			nodes = append(nodes, q)
			if q == base || q == "/" {
				break
			}
		}
	}
	acls := s.readACLs(ctx, nodes)
	for i, p := range paths {
		if errs[i] == nil {
			errs[i] = s.trustedFrom(acls, base, p)
		}
	}
	return errs
}

// aclRead is the answer to one GetACL.
type aclRead struct {
	acl []zk.ACL
	err error
}

// readACLs reads the ACL of each node, at most maxACLReadsInFlight at a
// time.
func (s *Session) readACLs(ctx context.Context, nodes []string) map[string]aclRead {
	reads := make([]aclRead, len(nodes))
	if len(nodes) == 1 {
		reads[0].acl, _, reads[0].err = s.Retrying().GetACL(ctx, nodes[0])
	} else {
		sem := make(chan struct{}, maxACLReadsInFlight)
		var wg sync.WaitGroup
		for i, n := range nodes {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				reads[i].acl, _, reads[i].err = s.Retrying().GetACL(ctx, n)
			})
		}
		wg.Wait()
	}
	out := make(map[string]aclRead, len(nodes))
	for i, n := range nodes {
		out[n] = reads[i]
	}
	return out
}

// trustedFrom is CheckTrusted of p below base, from the ACLs read of p
// and its ancestors: the first refusal from p up is the one reported.
func (s *Session) trustedFrom(acls map[string]aclRead, base, p string) error {
	for q := p; ; q = path.Dir(q) {
		r := acls[q]
		why := ""
		switch {
		case errors.Is(r.err, zk.ErrNoAuth):
			// Only another identity may read its ACL: not ours.
			why = "lets this process read neither it nor its ACL (" + r.err.Error() + ")"
		case r.err != nil:
			return fmt.Errorf("recipe: check trust of %s: %w", p, r.err)
		default:
			why = s.distrust(r.acl)
		}
		if why != "" {
			err := s.untrustedError(p, q, why)
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

// distrust says why acl does not show a node written by a trusted
// identity alone, or "" when it does.
func (s *Session) distrust(acl []zk.ACL) string {
	written := false
	for _, a := range acl {
		switch {
		case a.Perms&untrustedPerms == 0:
		case !s.trustedWriter(a):
			why := fmt.Sprintf("grants %s to %s:%s", permString(a.Perms), a.Scheme, a.ID)
			if a.Scheme == "digest" && strings.HasSuffix(a.ID, ":x") {
				// ZooKeeper hides the hash from a session without ADMIN.
				why += " (its hash hidden: this process needs ADMIN on the node to tell whose identity that is; the policy ACL gives it and each trusted writer cdrwa)"
			}
			return why
		case a.Perms&writerPerms != 0:
			written = true
		}
	}
	if !written {
		return fmt.Sprintf("grants WRITE or ADMIN to no trusted identity (its ACL: %s)", aclString(acl))
	}
	return ""
}

// trustedWriter reports whether a names the Session's own digest
// identity or one of Options.TrustedWriters.
func (s *Session) trustedWriter(a zk.ACL) bool {
	if a.Scheme != "digest" {
		return false
	}
	if s.cred != nil && a.ID == s.credID {
		return true
	}
	for _, w := range s.opts.TrustedWriters {
		if a.ID == w.ID {
			return true
		}
	}
	return false
}

// aclString spells acl as zkCli's setAcl takes it.
func aclString(acl []zk.ACL) string {
	if len(acl) == 0 {
		return "empty"
	}
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = a.Scheme + ":" + a.ID + ":" + permString(a.Perms)
	}
	return strings.Join(parts, ",")
}

func (s *Session) untrustedError(p, q, why string) error {
	who := "this process's identity " + s.Identity()
	if n := len(s.opts.TrustedWriters); n > 0 {
		who += fmt.Sprintf(" and its %d trusted writers (--trusted-writers)", n)
	}
	if s.cred == nil {
		who = "this process, which has no credential (--auth or --auth-file)"
	}
	where := p
	if q != p {
		where = fmt.Sprintf("%s: its ancestor %s", p, q)
	}
	fix := "run `shepherd ctl --auth-file <admin.auth> secure` to apply the ACL policy " +
		"(a node whose ACL that credential may not change needs ZooKeeper's superDigest identity; docs/security.md)"
	if s.cred == nil {
		fix = "give this process the credential (--auth-file <admin.auth>) and " + fix
	}
	return fmt.Errorf("%w: %s %s, but only %s may write Shepherd's nodes, so an unauthenticated or foreign session could have written it; "+
		"refusing to act on it. Fix: %s, or accept open ACLs with --insecure-open-acl", ErrUntrusted, where, why, who, fix)
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

// Subtree is the root of one of the subtrees a process acts on, e.g.
// /scheduler. Nothing below a root is trusted unless the root is
// (CheckTrusted walks up to it), so whoever creates a root first decides
// whether the subtree can ever be trusted.
type Subtree struct {
	Path string
	// Secret roots (the console's accounts) get SecretACL, not NodeACL:
	// viewers may not read what is below them.
	Secret bool
}

// SubtreeACL is the ACL the root of st gets when it is created:
// SecretACL for a secret root, NodeACL otherwise.
func (s *Session) SubtreeACL(st Subtree) []zk.ACL {
	if st.Secret {
		return s.SecretACL()
	}
	return s.NodeACL()
}

// EnsureSubtree makes sure the root of st exists and passes
// CheckTrusted, before the process acts on anything below it. A missing
// root is created, with its missing parents, with the policy ACL, so
// that no other session can create it first with an ACL of its own (the
// pre-create attack). An existing root that fails CheckTrusted is its
// error (ErrUntrusted, or a warning and nil with InsecureOpenACL).
// created tells whether this call made the root.
//
// Without a credential it does nothing and returns nil: the nodes it
// would create would be world-writable, and a process without a
// credential refuses everything it finds anyway (the open cluster).
func (s *Session) EnsureSubtree(ctx context.Context, st Subtree) (created bool, err error) {
	if s.cred == nil {
		return false, nil
	}
	acl := s.SubtreeACL(st)
	err = s.Retry(ctx, func() error {
		ok, _, err := s.Exists(ctx, st.Path)
		if err != nil || ok {
			return err
		}
		if dir := path.Dir(st.Path); dir != "/" { // /shepherd of /shepherd/console
			if err := s.EnsurePath(ctx, dir); err != nil {
				return err
			}
		}
		_, err = s.Create(ctx, st.Path, nil, zk.FlagPersistent, acl)
		if errors.Is(err, zk.ErrNodeExists) { // made meanwhile, by us or not: checked below
			return nil
		}
		created = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("recipe: create subtree root %s: %w", st.Path, err)
	}
	return created, s.CheckTrusted(ctx, st.Path, st.Path)
}
