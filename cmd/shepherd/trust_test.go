package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/ctl"
	"github.com/shepherd-dev/shepherd/dns"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/scheduler"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// freePort returns a loopback address nothing listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startCoordCommand runs `shepherd coord` in-process on a fresh data
// directory until the test ends, and returns its address and the admin
// credential file it wrote.
func startCoordCommand(t *testing.T) (addr, authFile string) {
	t.Helper()
	addr, dir := freePort(t), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	app := &cli.App{Name: "shepherd", Commands: []*cli.Command{coordCommand()}, Writer: io.Discard}
	go func() {
		done <- app.RunContext(ctx, []string{"shepherd", "coord", "--listen", addr, "--data-dir", dir})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shepherd coord: %v", err)
		}
	})
	coordtest.WaitFor(t, 30*time.Second, "shepherd coord to listen", func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	})
	return addr, filepath.Join(dir, "admin.auth")
}

// startBareCoord is a coordination server without Shepherd's roots, as a
// fresh Apache ZooKeeper ensemble (or a data directory older than
// AdminRoots) is.
func startBareCoord(t *testing.T) string {
	t.Helper()
	cfg := coord.DefaultConfig()
	cfg.Listen, cfg.DataDir, cfg.NoSync, cfg.Logger = "127.0.0.1:0", t.TempDir(), true, slog.New(slog.DiscardHandler)
	srv, err := coord.NewServer(cfg)
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.Addr()
}

func dialTest(t *testing.T, connect string, opts recipe.Options) *recipe.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts.Logger = coordtest.Logger(t)
	s, err := recipe.Dial(ctx, connect, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", connect, err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestCoordLeavesNoWindow is issue 23's planted admin and planted job on
// a fresh `shepherd coord`, before any Shepherd process or `ctl user
// add`: the subtree roots exist from the first moment, the admin
// credential's alone, so an anonymous client can plant nothing below
// them; their ACL is the policy `ctl secure` applies (it has nothing to
// change); and the real admin's `ctl user add` works.
func TestCoordLeavesNoWindow(t *testing.T) {
	addr, authFile := startCoordCommand(t)
	ctx := coordtest.Context(t, time.Minute)
	anon := dialTest(t, addr, recipe.Options{})
	var planted []string
	for _, root := range adminRoots() {
		planted = append(planted, root+"/planted")
	}
	for _, p := range append(planted, auth.Root+"/users", scheduler.JobsPath) {
		_, err := anon.Create(ctx, p, []byte("x"), 0, zk.WorldACL(zk.PermRead))
		if !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous create of %s on a fresh shepherd coord: %v, want ErrNoAuth", p, err)
		}
	}
	if ok, _, err := anon.Exists(ctx, auth.Root+"/users"); err != nil || ok {
		t.Errorf("%s/users: exists %v, %v; want nothing planted", auth.Root, ok, err)
	}

	var out strings.Builder
	env := ctl.Env{Stdout: &out, Stderr: os.Stderr}
	if code := ctl.Run(ctx, env, []string{"--zk", addr, "--auth-file", authFile, "secure", "--dry-run"}); code != 0 || out.String() != "dry run: 0 nodes would change\n" {
		t.Errorf("ctl secure --dry-run on a fresh shepherd coord: exit %d, %q; want nothing to change", code, out.String())
	}
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("correct horse battery\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := ctl.Run(ctx, ctl.Env{Stderr: os.Stderr}, []string{"--zk", addr, "--auth-file", authFile, "user", "add", "--role", "admin", "--password-file", pw, "alice"}); code != 0 {
		t.Errorf("the real admin's ctl user add: exit %d", code)
	}
}

// plantNarrowed creates root (and p below it, if not root) from an
// anonymous session, then narrows their ACLs to world:anyone:r: a root
// nobody trusted wrote.
func plantNarrowed(t *testing.T, ctx context.Context, anon *recipe.Session, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := anon.EnsurePath(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range slices.Backward(paths) {
		if _, err := anon.SetACL(ctx, p, zk.WorldACL(zk.PermRead), -1); err != nil {
			t.Fatalf("narrow %s: %v", p, err)
		}
	}
}

// TestRolesRefuseAPlantedRoot: where an anonymous client created a
// role's subtree root first (a server without Shepherd's roots, as a
// fresh ZooKeeper ensemble) and narrowed it to world:anyone:r, the role
// refuses to start, naming the root and the fix, rather than run on a
// tree nothing below which can be trusted.
func TestRolesRefuseAPlantedRoot(t *testing.T) {
	addr := startBareCoord(t)
	ctx := coordtest.Context(t, time.Minute)
	anon := dialTest(t, addr, recipe.Options{})
	plantNarrowed(t, ctx, anon, "/shepherd", auth.Root, auth.Root+"/users")
	plantNarrowed(t, ctx, anon, scheduler.Root, scheduler.JobsPath)
	plantNarrowed(t, ctx, anon, dns.Root, dns.Root+"/app1")
	authFile := coordtest.AuthFile(t)
	for _, c := range []struct {
		r    role
		root string
	}{{schedulerRole(), scheduler.Root}, {serverRole(), auth.Root}, {dnsRole(), dns.Root}} {
		app := &cli.App{Name: "shepherd", Commands: []*cli.Command{roleCommand(c.r)}, Writer: io.Discard}
		args := []string{"shepherd", c.r.name, "--zk", addr, "--auth-file", authFile, "--http-listen", ""}
		switch c.r.name {
		case "server":
			args = append(args, "--listen", "127.0.0.1:0")
		case "dns":
			args = append(args, "--listen", "127.0.0.1:0", "--zone", "svc.example.")
		}
		err := app.RunContext(ctx, args)
		if !errors.Is(err, recipe.ErrUntrusted) || !strings.Contains(err.Error(), "untrusted node: "+c.root+" grants WRITE or ADMIN to no trusted identity") ||
			!strings.Contains(err.Error(), "Fix: ") {
			t.Errorf("shepherd %s on a planted %s: %v\nwant ErrUntrusted naming the root and the fix", c.r.name, c.root, err)
		}
	}
}

// TestRoleCreatesItsRoots: a role's first dial creates its missing
// subtree roots with the policy ACL, before it does anything else, so
// that on an Apache ZooKeeper ensemble the window closes at the first
// Shepherd process.
func TestRoleCreatesItsRoots(t *testing.T) {
	addr := startBareCoord(t)
	authFile := coordtest.AuthFile(t)
	ctx, cancel := context.WithCancel(coordtest.Context(t, time.Minute))
	done := make(chan error, 1)
	app := &cli.App{Name: "shepherd", Commands: []*cli.Command{roleCommand(schedulerRole())}, Writer: io.Discard}
	go func() {
		done <- app.RunContext(ctx, []string{"shepherd", "scheduler", "--zk", addr, "--auth-file", authFile, "--http-listen", "", "--log-dir", t.TempDir()})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shepherd scheduler: %v", err)
		}
	}()
	cred, _ := recipe.ParseCredential(coordtest.Auth)
	owner := dialTest(t, addr, recipe.Options{Auth: coordtest.Auth})
	for _, st := range scheduler.Subtrees() {
		coordtest.WaitFor(t, 30*time.Second, st.Path+" created with the policy", func() error {
			acl, _, err := owner.GetACL(ctx, st.Path)
			if err != nil {
				return err
			}
			if want := zk.DigestACL(zk.PermAll, cred.User, cred.Password); !slices.Equal(acl, want) {
				return fmt.Errorf("ACL %v, want %v", acl, want)
			}
			return nil
		})
	}
}
