package recipe

import (
	"errors"
	"os"
	"path/filepath"
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
