package recipe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

func TestParseCredential(t *testing.T) {
	for _, c := range []struct {
		in       string
		user, pw string
		err      string
	}{
		{in: "ops:secret", user: "ops", pw: "secret"},
		{in: "digest:ops:secret", user: "ops", pw: "secret"},
		{in: "ops:se:cret", user: "ops", pw: "se:cret"},
		{in: "digest:pw", user: "digest", pw: "pw"},
		{in: "digest:digest:pw", user: "digest", pw: "pw"},
		{in: "nocolon", err: "without a colon"},
		{in: ":pw", err: "empty user"},
		{in: "ops:", err: "empty password"},
		{in: "ops:a\nb", err: "line break"},
	} {
		got, err := ParseCredential(c.in)
		switch {
		case c.err != "":
			if !errors.Is(err, ErrBadCredential) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseCredential(%q) = %v, %v; want an error about %q", c.in, got, err, c.err)
			}
			if err != nil && strings.Contains(err.Error(), "cret") {
				t.Errorf("ParseCredential(%q): error %q shows the password", c.in, err)
			}
		case err != nil || got.User != c.user || got.Password != c.pw:
			t.Errorf("ParseCredential(%q) = %+v, %v; want %s:%s", c.in, got, err, c.user, c.pw)
		}
	}
}

func TestReadCredentialFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, data string
		mode       os.FileMode
		err        string
	}{
		{name: "ok", data: "shepherd:pw\n", mode: 0o600},
		{name: "crlf", data: "shepherd:pw\r\n", mode: 0o400},
		{name: "bare", data: "digest:shepherd:pw", mode: 0o600},
		{name: "group", data: "shepherd:pw\n", mode: 0o640, err: "chmod 600"},
		{name: "world", data: "shepherd:pw\n", mode: 0o604, err: "chmod 600"},
		{name: "two-lines", data: "shepherd:pw\nx\n", mode: 0o600, err: "line break"},
		{name: "long", data: strings.Repeat("x", maxCredentialFile+1), mode: 0o600, err: "longer than"},
	} {
		got, err := ReadCredentialFile(write(c.name, c.data, c.mode))
		switch {
		case c.err != "":
			if !errors.Is(err, ErrBadCredential) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: got %v, %v; want an error about %q", c.name, got, err, c.err)
			}
		case err != nil || got != (Credential{User: "shepherd", Password: "pw"}):
			t.Errorf("%s: got %+v, %v; want shepherd:pw", c.name, got, err)
		}
	}
	if _, err := ReadCredentialFile(filepath.Join(dir, "missing")); !errors.Is(err, ErrBadCredential) {
		t.Errorf("missing file: %v, want ErrBadCredential", err)
	}
}

func TestParseReadACL(t *testing.T) {
	id := Credential{User: "viewer", Password: "pw"}.ID()
	for in, want := range map[string]zk.ACL{
		"digest:" + id: {Perms: zk.PermRead, Scheme: "digest", ID: id},
		"world:anyone": {Perms: zk.PermRead, Scheme: "world", ID: "anyone"},
	} {
		if got, err := ParseReadACL(in); err != nil || got != want {
			t.Errorf("ParseReadACL(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "digest", "digest:viewer", "world:"} {
		if got, err := ParseReadACL(in); !errors.Is(err, ErrBadCredential) {
			t.Errorf("ParseReadACL(%q) = %+v, %v; want ErrBadCredential", in, got, err)
		}
	}
}

// TestCheckTrusted is the trust rule against each server: nodes created
// by the credential's sessions pass; nodes an anonymous session created
// or could rewrite, including one it created with an explicit ACL naming
// the trusted identity, are refused, unless InsecureOpenACL.
func TestCheckTrusted(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		chroot := tg.Addr + testPath(t)
		// The anonymous session comes first: it creates the chroot with
		// ZooKeeper's default open ACL, as the root of a fresh ensemble is.
		anon := dial(t, chroot, Options{})
		owner := Credential{User: "shepherd", Password: "pw"}
		viewer := Credential{User: "viewer", Password: "vpw"}
		trusted := dial(t, chroot, Options{Auth: owner.Auth(), ReadACL: []zk.ACL{{Scheme: "digest", ID: viewer.ID(), Perms: zk.PermAll}}})
		insecure := dial(t, chroot, Options{Auth: owner.Auth(), InsecureOpenACL: true})
		noCred := dial(t, chroot, Options{InsecureOpenACL: false})
		viewing := dial(t, chroot, Options{Auth: viewer.Auth()})

		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(trusted.EnsurePath(ctx, "/sec/jobs"))
		_, err := trusted.Create(ctx, "/sec/jobs/a", []byte("x"), 0, nil)
		must(err)
		must(anon.EnsurePath(ctx, "/open/jobs"))
		_, err = anon.Create(ctx, "/open/jobs/a", []byte("x"), 0, nil)
		must(err)
		// The forgery: an anonymous node whose ACL names the trusted
		// identity alone, under a parent anyone may create in.
		_, err = anon.Create(ctx, "/open/jobs/forged", []byte("x"), 0, zk.DigestACL(zk.PermAll, owner.User, owner.Password))
		must(err)

		if err := trusted.CheckTrusted(ctx, "/sec", "/sec/jobs/a"); err != nil {
			t.Errorf("trusted node refused: %v", err)
		}
		for _, p := range []string{"/open/jobs/a", "/open/jobs/forged"} {
			err := trusted.CheckTrusted(ctx, "/open", p)
			if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "world:anyone") || !strings.Contains(err.Error(), "ctl") {
				t.Errorf("CheckTrusted(%s) = %v, want ErrUntrusted naming world:anyone and the fix", p, err)
			}
			if err := insecure.CheckTrusted(ctx, "/open", p); err != nil {
				t.Errorf("with InsecureOpenACL, CheckTrusted(%s) = %v, want nil", p, err)
			}
		}
		if err := noCred.CheckTrusted(ctx, "/open", "/open/jobs/a"); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "no credential") {
			t.Errorf("without a credential, CheckTrusted = %v, want ErrUntrusted saying there is no credential", err)
		}
		// A base that is not an ancestor is a programming error, not a pass.
		if err := trusted.CheckTrusted(ctx, "/sec", "/open/jobs/a"); err == nil || errors.Is(err, ErrUntrusted) {
			t.Errorf("CheckTrusted outside base = %v, want a plain error", err)
		}

		// The anonymous session can neither add nor rewrite trusted nodes.
		if _, err := anon.Create(ctx, "/sec/jobs/evil", nil, 0, nil); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous create under a trusted parent: %v, want ErrNoAuth", err)
		}
		if _, err := anon.Set(ctx, "/sec/jobs/a", []byte("evil"), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous set of a trusted node: %v, want ErrNoAuth", err)
		}
		// The viewer reads nodes, but not secrets, and writes nothing.
		if _, _, err := viewing.Get(ctx, "/sec/jobs/a"); err != nil {
			t.Errorf("viewer get: %v", err)
		}
		if _, err := viewing.Set(ctx, "/sec/jobs/a", []byte("v"), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("viewer set: %v, want ErrNoAuth (its --read-acl entry is READ whatever perms were given)", err)
		}
		_, err = trusted.Create(ctx, "/sec/secret", []byte("pw"), 0, trusted.SecretACL())
		must(err)
		for name, s := range map[string]*Session{"viewer": viewing, "anonymous": anon} {
			if _, _, err := s.Get(ctx, "/sec/secret"); !errors.Is(err, zk.ErrNoAuth) {
				t.Errorf("%s get of a secret: %v, want ErrNoAuth", name, err)
			}
		}
		if err := trusted.CheckTrusted(ctx, "/sec", "/sec/secret"); err != nil {
			t.Errorf("secret node refused: %v", err)
		}
	})
}

// TestTrustIsProvenance is the trust rule, one ACL pair per row, against
// each server: a node (and its ancestor up to base) must grant WRITE or
// ADMIN to this process's identity or a trusted writer, and more than
// READ to no one else. The rows marked planted are issue 23's attack: an
// anonymous session writes a node, then narrows its ACL to
// world:anyone:r or a foreign digest, which the rule of "nobody else may
// write it" alone let through.
func TestTrustIsProvenance(t *testing.T) {
	own := Credential{User: "shepherd", Password: "pw"}
	team := Credential{User: "team-b", Password: "bpw"}
	stranger := Credential{User: "mallory", Password: "mpw"}
	digest := func(c Credential, perms int32) zk.ACL { return zk.ACL{Perms: perms, Scheme: "digest", ID: c.ID()} }
	world := func(perms int32) zk.ACL { return zk.ACL{Perms: perms, Scheme: "world", ID: "anyone"} }
	ownAll := []zk.ACL{digest(own, zk.PermAll)}
	rows := []struct {
		name           string
		base, node     []zk.ACL
		trustedWriters []zk.ACL
		want           string // "" for trusted, else a part of the refusal
	}{
		{name: "own digest cdrwa", base: ownAll, node: ownAll},
		{name: "own digest admin only, world read", base: ownAll, node: []zk.ACL{digest(own, zk.PermAdmin), world(zk.PermRead)}},
		{name: "trusted writer", base: ownAll, node: []zk.ACL{digest(team, zk.PermAll), digest(own, zk.PermAll)},
			trustedWriters: []zk.ACL{digest(team, zk.PermAll)}},
		{name: "trusted writer beside own", base: []zk.ACL{digest(own, zk.PermAll), digest(team, zk.PermCreate)}, node: ownAll,
			trustedWriters: []zk.ACL{digest(team, zk.PermAll)}},
		// Without ADMIN a session sees digest ids with their hash hidden
		// (ZooKeeper 3.8, and the bundled server), so it cannot tell a
		// trusted identity from another of the same user name.
		{name: "own digest write only: hash hidden", base: ownAll, node: []zk.ACL{digest(own, zk.PermWrite|zk.PermRead)},
			want: "grants rw to digest:shepherd:x (its hash hidden"},
		{name: "trusted writer, own read only: hash hidden", base: ownAll, node: []zk.ACL{digest(team, zk.PermAll), digest(own, zk.PermRead)},
			trustedWriters: []zk.ACL{digest(team, zk.PermAll)}, want: "grants cdrwa to digest:team-b:x (its hash hidden"},
		{name: "planted: world:anyone:r only", base: ownAll, node: []zk.ACL{world(zk.PermRead)},
			want: "grants WRITE or ADMIN to no trusted identity (its ACL: world:anyone:r)"},
		{name: "planted: foreign digest only", base: ownAll, node: []zk.ACL{digest(stranger, zk.PermAll)},
			want: "lets this process read neither it nor its ACL"},
		{name: "planted: foreign digest, world read", base: ownAll, node: []zk.ACL{digest(stranger, zk.PermAll), world(zk.PermRead)},
			want: "grants cdrwa to digest:mallory:x"},
		{name: "own read only", base: ownAll, node: []zk.ACL{digest(own, zk.PermRead)},
			want: "grants WRITE or ADMIN to no trusted identity"},
		{name: "own create only", base: ownAll, node: []zk.ACL{digest(own, zk.PermCreate|zk.PermRead)},
			want: "grants cr to digest:shepherd:x"},
		{name: "extra world write", base: ownAll, node: []zk.ACL{digest(own, zk.PermAll), world(zk.PermWrite | zk.PermRead)},
			want: "grants rw to world:anyone"},
		{name: "writer not trusted", base: ownAll, node: []zk.ACL{digest(own, zk.PermAll), digest(team, zk.PermAll)},
			want: "grants cdrwa to digest:" + team.ID()},
		{name: "ancestor untrusted", base: []zk.ACL{world(zk.PermRead)}, node: ownAll,
			want: "its ancestor"},
		{name: "ancestor world-creatable", base: []zk.ACL{digest(own, zk.PermAll), world(zk.PermCreate | zk.PermRead)}, node: ownAll,
			want: "its ancestor"},
	}
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		chroot := tg.Addr + testPath(t)
		// The anonymous session plants every row, as an attacker can:
		// ZooKeeper lets a client create a node with any ACL, and then
		// change the ACL of a node that grants it ADMIN.
		anon := dial(t, chroot, Options{})
		for i, r := range rows {
			base := fmt.Sprintf("/row%d", i)
			if _, err := anon.Create(ctx, base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("%s: create %s: %v", r.name, base, err)
			}
			if _, err := anon.Create(ctx, base+"/node", []byte("x"), 0, r.node); err != nil {
				t.Fatalf("%s: create %s/node: %v", r.name, base, err)
			}
			if _, err := anon.SetACL(ctx, base, r.base, -1); err != nil {
				t.Fatalf("%s: set the ACL of %s: %v", r.name, base, err)
			}
			s := dial(t, chroot, Options{Auth: own.Auth(), TrustedWriters: r.trustedWriters})
			err := s.CheckTrusted(ctx, base, base+"/node")
			switch {
			case r.want == "" && err != nil:
				t.Errorf("%s: CheckTrusted = %v, want trusted", r.name, err)
			case r.want != "" && (!errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), r.want) ||
				!strings.Contains(err.Error(), base+"/node") || !strings.Contains(err.Error(), "ctl --auth-file <admin.auth> secure")):
				t.Errorf("%s: CheckTrusted = %v\nwant ErrUntrusted naming %s/node, %q and the fix", r.name, err, base, r.want)
			}
			// The opt-out turns every refusal into a warning.
			insecure := dial(t, chroot, Options{Auth: own.Auth(), TrustedWriters: r.trustedWriters, InsecureOpenACL: true})
			if err := insecure.CheckTrusted(ctx, base, base+"/node"); err != nil {
				t.Errorf("%s: with InsecureOpenACL, CheckTrusted = %v, want nil", r.name, err)
			}
		}
	})
}

// TestCheckTrustedAll: checking many nodes in one batch gives, for each,
// what checking it alone gives (trusted, refused for itself or for an
// ancestor, missing, not below base), in the order asked, and takes a few
// round trips for all of them rather than one per node and ancestor: with
// every reply delayed by a round-trip time, 60 nodes are checked in less
// than the 60 round trips one check after another would need at least.
func TestCheckTrustedAll(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 60*time.Second)
		root := testPath(t)
		anon := dial(t, tg.Addr+root, Options{})
		own := Credential{User: "shepherd", Password: "pw"}
		trusted := dial(t, tg.Addr+root, Options{Auth: own.Auth()})
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		const n = 60
		must(trusted.EnsurePath(ctx, "/base/tasks"))
		var paths []string
		for i := range n {
			p := fmt.Sprintf("/base/tasks/t%02d", i)
			_, err := trusted.Create(ctx, p, []byte("x"), 0, nil)
			must(err)
			paths = append(paths, p)
		}
		// t07 written by anyone; t13 missing; t21 under an open parent;
		// one path outside base.
		_, err := trusted.SetACL(ctx, "/base/tasks/t07", zk.WorldACL(zk.PermAll), -1)
		must(err)
		must(trusted.Delete(ctx, "/base/tasks/t13", -1))
		must(trusted.EnsurePath(ctx, "/base/open"))
		_, err = trusted.SetACL(ctx, "/base/open", zk.WorldACL(zk.PermAll), -1)
		must(err)
		_, err = anon.Create(ctx, "/base/open/t21", []byte("x"), 0, zk.DigestACL(zk.PermAll, own.User, own.Password))
		must(err)
		paths[21] = "/base/open/t21"
		paths = append(paths, "/elsewhere/t")

		same := func(got, want error) bool {
			if got == nil || want == nil {
				return got == want
			}
			return got.Error() == want.Error()
		}
		errs := trusted.CheckTrustedAll(ctx, "/base", paths)
		if len(errs) != len(paths) {
			t.Fatalf("CheckTrustedAll of %d paths: %d errors", len(paths), len(errs))
		}
		for i, p := range paths {
			if want := trusted.CheckTrusted(ctx, "/base", p); !same(errs[i], want) {
				t.Errorf("CheckTrustedAll for %s: %v\nwant what CheckTrusted says: %v", p, errs[i], want)
			}
		}
		for _, c := range []struct {
			i    int
			want string
		}{{7, "/base/tasks/t07 grants cdrwa to world:anyone"}, {21, "/base/open/t21: its ancestor /base/open grants cdrwa to world:anyone"}} {
			if !errors.Is(errs[c.i], ErrUntrusted) || !strings.Contains(errs[c.i].Error(), c.want) {
				t.Errorf("%s: %v, want ErrUntrusted: %s", paths[c.i], errs[c.i], c.want)
			}
		}
		if !errors.Is(errs[13], zk.ErrNoNode) {
			t.Errorf("missing %s: %v, want ErrNoNode", paths[13], errs[13])
		}
		if errs[n] == nil || errors.Is(errs[n], ErrUntrusted) {
			t.Errorf("a path outside base: %v, want a plain error", errs[n])
		}
		for i, err := range errs[:n] {
			if i != 7 && i != 13 && i != 21 && err != nil {
				t.Errorf("%s: %v, want trusted", paths[i], err)
			}
		}

		// The reads go out together: with every reply held back, the
		// requests for many paths reach the server, where reads made one
		// at a time would stop at the first. Bytes, not a stopwatch: each
		// getACL request is at least 20 bytes, and the pings a session
		// sends meanwhile are 16.
		proxy := newFaultProxy(t, tg.Addr)
		slow := dial(t, proxy.Addr()+root, Options{Auth: own.Auth()})
		proxy.StallReplies()
		before := proxy.up.passed.Load()
		done := make(chan []error, 1)
		go func() { done <- slow.CheckTrustedAll(ctx, "/base", paths) }()
		const together = 20 // requests in flight at once, at least
		coordtest.WaitFor(t, 10*time.Second, "the reads sent together", func() error {
			if sent := proxy.up.passed.Load() - before; sent < together*20 {
				return fmt.Errorf("%d bytes of requests sent while no reply came back", sent)
			}
			return nil
		})
		proxy.Release()
		slowErrs := <-done
		for i := range paths {
			if !same(slowErrs[i], errs[i]) {
				t.Errorf("through the proxy, %s: %v, want %v", paths[i], slowErrs[i], errs[i])
			}
		}
	})
}

// TestTrustWithoutCredential: a process without a credential trusts
// nothing, not even a node no one may write: there is no identity that
// could have written it (the open cluster; --insecure-open-acl is the
// opt-out).
func TestTrustWithoutCredential(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		chroot := tg.Addr + testPath(t)
		anon := dial(t, chroot, Options{})
		if _, err := anon.Create(ctx, "/ro", nil, 0, zk.WorldACL(zk.PermRead)); err != nil {
			t.Fatal(err)
		}
		if err := anon.CheckTrusted(ctx, "/ro", "/ro"); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "no credential") {
			t.Errorf("without a credential, CheckTrusted of a world:anyone:r node = %v, want ErrUntrusted saying there is no credential", err)
		}
		insecure := dial(t, chroot, Options{InsecureOpenACL: true})
		if err := insecure.CheckTrusted(ctx, "/ro", "/ro"); err != nil {
			t.Errorf("without a credential, with InsecureOpenACL: %v, want nil", err)
		}
	})
}

// TestEnsureSubtree: a missing root is created with the policy ACL (the
// secret one for a secret root), so nobody else can create it first; an
// existing root nobody trusted wrote is refused; without a credential
// nothing is created.
func TestEnsureSubtree(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 30*time.Second)
		chroot := tg.Addr + testPath(t)
		anon := dial(t, chroot, Options{})
		viewer := zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}
		s := dial(t, chroot, Options{Auth: "shepherd:pw", ReadACL: []zk.ACL{viewer}})

		for _, st := range []Subtree{{Path: "/jobs"}, {Path: "/team/accounts", Secret: true}} {
			created, err := s.EnsureSubtree(ctx, st)
			if err != nil || !created {
				t.Fatalf("EnsureSubtree(%+v) = %v, %v; want created", st, created, err)
			}
			want := s.NodeACL()
			if st.Secret {
				want = s.SecretACL()
			}
			if acl, _, err := s.GetACL(ctx, st.Path); err != nil || !slices.Equal(acl, want) {
				t.Errorf("%s: ACL %v, %v; want %v", st.Path, acl, err, want)
			}
			if _, err := anon.Create(ctx, st.Path+"/planted", nil, 0, zk.WorldACL(zk.PermRead)); !errors.Is(err, zk.ErrNoAuth) {
				t.Errorf("anonymous create below %s: %v, want ErrNoAuth", st.Path, err)
			}
			if created, err := s.EnsureSubtree(ctx, st); err != nil || created {
				t.Errorf("second EnsureSubtree(%+v) = %v, %v; want an existing, trusted root", st, created, err)
			}
		}

		if _, err := anon.Create(ctx, "/planted", nil, 0, zk.WorldACL(zk.PermRead)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EnsureSubtree(ctx, Subtree{Path: "/planted"}); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "/planted") {
			t.Errorf("EnsureSubtree of a planted root = %v, want ErrUntrusted naming it", err)
		}
		if created, err := anon.EnsureSubtree(ctx, Subtree{Path: "/open"}); err != nil || created {
			t.Errorf("EnsureSubtree without a credential = %v, %v; want nothing done", created, err)
		}
		if ok, _, _ := anon.Exists(ctx, "/open"); ok {
			t.Errorf("EnsureSubtree without a credential created /open")
		}
	})
}

func TestParseTrustedWriter(t *testing.T) {
	id := Credential{User: "team-b", Password: "pw"}.ID()
	if got, err := ParseTrustedWriter("digest:" + id); err != nil || got != (zk.ACL{Perms: zk.PermAll, Scheme: "digest", ID: id}) {
		t.Errorf("ParseTrustedWriter(digest:%s) = %+v, %v", id, got, err)
	}
	for _, in := range []string{"", "digest:team-b", "digest::hash", "world:anyone", "ip:127.0.0.1", "team-b:pw"} {
		if got, err := ParseTrustedWriter(in); !errors.Is(err, ErrBadCredential) || !strings.Contains(err.Error(), "ctl digest") {
			t.Errorf("ParseTrustedWriter(%q) = %+v, %v; want ErrBadCredential saying how to get the id", in, got, err)
		}
	}
	// A trusted writer may write below what this process creates.
	acl, _ := policyACLs(&Credential{User: "shepherd", Password: "pw"}, []zk.ACL{{Perms: zk.PermRead, Scheme: "digest", ID: id}}, nil)
	if len(acl) != 2 || acl[1] != (zk.ACL{Perms: zk.PermAll, Scheme: "digest", ID: id}) {
		t.Errorf("policy ACL with a trusted writer: %v, want the writer's cdrwa after the credential's", acl)
	}
}
