package coord

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestAdminRoots: the roots exist, the admin credential's alone, before
// the first client connects, so an anonymous client can neither create
// them first nor plant a node below them; they survive a restart, and a
// restart leaves existing nodes (and their ACLs) as they are.
func TestAdminRoots(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.AdminRoots = []string{"/scheduler", "/shepherd/console"}
	srv := startServer(t, cfg)

	line, err := os.ReadFile(filepath.Join(dir, "admin.auth"))
	if err != nil {
		t.Fatal(err)
	}
	user, pw, _ := strings.Cut(strings.TrimSpace(string(line)), ":")
	want := zk.DigestACL(zk.PermAll, user, pw)

	anon := connect(t, srv.Addr(), 10*time.Second)
	for _, p := range []string{"/scheduler", "/shepherd", "/shepherd/console"} {
		if _, err := anon.Create(p+"/planted", nil, 0, zk.WorldACL(zk.PermRead)); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous create below %s: %v, want ErrNoAuth", p, err)
		}
	}
	admin := connect(t, srv.Addr(), 10*time.Second)
	if err := admin.AddAuth("digest", []byte(user+":"+pw)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/scheduler", "/shepherd", "/shepherd/console"} {
		if acl, _, err := admin.GetACL(p); err != nil || !slices.Equal(acl, want) {
			t.Errorf("%s: ACL %v, %v; want %v", p, acl, err, want)
		}
	}
	if _, err := admin.Create("/shepherd/console/users", nil, 0, want); err != nil {
		t.Fatalf("admin create below a root: %v", err)
	}
	// An operator's change to a root is kept across a restart.
	if _, err := admin.SetACL("/scheduler", append(want, zk.WorldACL(zk.PermRead)...), -1); err != nil {
		t.Fatal(err)
	}
	srv.Close()

	srv = startServer(t, cfg)
	admin = connect(t, srv.Addr(), 10*time.Second)
	if err := admin.AddAuth("digest", []byte(user+":"+pw)); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := admin.Exists("/shepherd/console/users"); err != nil || !ok {
		t.Errorf("after a restart, /shepherd/console/users: %v, %v; want it kept", ok, err)
	}
	if acl, _, err := admin.GetACL("/scheduler"); err != nil || len(acl) != 2 {
		t.Errorf("after a restart, /scheduler ACL %v, %v; want the operator's two entries kept", acl, err)
	}
}

// TestAdminRootsBadCredential: a credential file that is not one line
// user:password stops the server with the file named, rather than
// creating roots nobody can use.
func TestAdminRootsBadCredential(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.AdminRoots = []string{"/scheduler"}
	if err := os.WriteFile(filepath.Join(dir, "admin.auth"), []byte("nocolon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewServer(cfg); !errors.Is(err, ErrDataDir) || !strings.Contains(err.Error(), "admin.auth") {
		t.Errorf("NewServer with a bad admin.auth: %v, want ErrDataDir naming the file", err)
	}
}
