package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord"
	"github.com/shepherd-dev/shepherd/ctl"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

func runServerArgs(ctx context.Context, args ...string) error {
	app := &cli.App{Name: "shepherd", Commands: []*cli.Command{roleCommand(serverRole())}, Writer: io.Discard}
	return app.RunContext(ctx, append([]string{"shepherd", "server"}, args...))
}

func TestServerFlagErrors(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(conf, []byte("listen: 127.0.0.1:0\ntrusted-proxies: 10.0.0.5\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--auth", "a:b", "--zk", "127.0.0.1:1/x//y"}, "bad connect string"},
		{[]string{"--trusted-proxies", "10.0.0.5", "--zk", "127.0.0.1:1"}, "--trusted-proxies"},
		{[]string{"--zk", "127.0.0.1:1"}, "pass --auth-file"},
		{[]string{"--config", conf}, `unknown key "bogus"`},
		{[]string{"--auth", "a:b", "--auth-file", "/nonexistent"}, "--auth and --auth-file both given"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := runServerArgs(ctx, tc.args...)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("shepherd server %s: %v, want an error with %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestServerCommandServesTheConsole: `shepherd server` against a
// `shepherd coord`, with the first admin made by `ctl user add`: health,
// login, and the cluster read through its poller.
func TestServerCommandServesTheConsole(t *testing.T) {
	cfg := coord.DefaultConfig()
	cfg.Listen, cfg.DataDir, cfg.NoSync, cfg.Logger = "127.0.0.1:0", t.TempDir(), true, slog.New(slog.DiscardHandler)
	cfg.FourLetterWords = []string{"srvr"}
	zk, err := coord.NewServer(cfg)
	if err == nil {
		err = zk.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Close()
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("correct horse battery\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if code := ctl.Run(ctx, ctl.Env{Stderr: os.Stderr}, []string{"--zk", zk.Addr(), "--auth", coordtest.Auth, "user", "add", "--role", "viewer", "--password-file", pw, "vera"}); code != 0 {
		t.Fatalf("ctl user add: exit %d", code)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- runServerArgs(sctx, "--zk", zk.Addr(), "--auth", coordtest.Auth, "--listen", addr, "--refresh", "500ms")
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("shepherd server: %v", err)
		}
	}()
	jar, _ := cookiejar.New(nil)
	// The login runs bcrypt at its default cost, which takes seconds
	// under -race on a loaded machine: the bound is generous, as the
	// test is about what the console answers, not how fast.
	hc := &http.Client{Jar: jar, Timeout: time.Minute}
	base := "http://" + addr
	coordtest.WaitFor(t, 30*time.Second, "the console to answer", func() error {
		res, err := hc.Get(base + "/health")
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("health %d", res.StatusCode)
		}
		return nil
	})
	res, err := hc.Post(base+"/login", "application/json", strings.NewReader(`{"user":"vera","password":"correct horse battery"}`))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("login: %v %v", res, err)
	}
	res.Body.Close()
	coordtest.WaitFor(t, 30*time.Second, "the coordination server's health in the snapshot", func() error {
		res, err := hc.Get(base + "/api/v1/coord")
		if err != nil {
			return err
		}
		defer res.Body.Close()
		var body struct {
			Servers []struct {
				Addr string
				OK   bool
			}
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || len(body.Servers) != 1 || !body.Servers[0].OK {
			return fmt.Errorf("status %d, %+v, %v", res.StatusCode, body, err)
		}
		return nil
	})
}
