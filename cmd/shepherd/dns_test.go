package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

func TestDNSFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--zone: required"},
		{[]string{"--zone", "svc.example.", "--strategy", "random"}, `--strategy: dns: strategy "random"`},
		{[]string{"--zone", "svc.example.", "--fail-after", "0"}, "--fail-after 0"},
		{[]string{"--zone", "svc.example.", "--ttl", "0s"}, "--ttl 0s: want 1s to 1h"},
	} {
		app := &cli.App{Name: "shepherd", Commands: []*cli.Command{roleCommand(dnsRole())}, Writer: os.Stderr}
		err := app.Run(append([]string{"shepherd", "dns", "--zk", "127.0.0.1:1"}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("shepherd dns %s: %v, want an error with %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestDNSOffInUpByDefault: without a config `shepherd up` runs every role
// but the DNS server, which runs only with a dns section.
func TestDNSOffInUpByDefault(t *testing.T) {
	for _, r := range roles() {
		if got, want := runsInUp(r, nil), r.name != "dns"; got != want {
			t.Errorf("%s without a config: runs %v, want %v", r.name, got, want)
		}
		if runsInUp(r, map[string]any{"core": nil}) != (r.name == "core") {
			t.Errorf("%s with a config of a core section only: runs %v", r.name, !(r.name == "core"))
		}
	}
	if !runsInUp(dnsRole(), map[string]any{"dns": map[string]any{"zone": "svc.example."}}) {
		t.Error("dns with its section: not run")
	}
}

// TestUpServesDNS: `shepherd up` started as a real process with a dns
// section answers, to dig and to Go's resolver, the addresses ctl
// registers with its admin credential, and serves the DNS metrics on
// its one HTTP listener.
func TestUpServesDNS(t *testing.T) {
	digBin, err := exec.LookPath("dig")
	testpeer.Require(t, "dig", err == nil, fmt.Sprintf("dig not found (Debian package bind9-dnsutils): %v", err))
	bin := buildShepherd(t)
	zk := fmt.Sprintf("127.0.0.1:%d", testpeer.FreePort(t))
	web := fmt.Sprintf("127.0.0.1:%d", testpeer.FreePort(t))
	dnsAddr := fmt.Sprintf("127.0.0.1:%d", testpeer.FreePort(t))
	cfg := writeConfig(t, "shepherd.yaml", fmt.Sprintf("http-listen: %s\ncoord: {listen: %s}\ndns: {zone: svc.example., listen: %q, strategy: one}\n", web, zk, dnsAddr))
	data := filepath.Join(t.TempDir(), "data")
	startProcess(t, bin, "up", "--config", cfg, "--data-dir", data)
	waitHTTP(t, "http://"+web+"/metrics", "shepherd_dns_cache_loaded 1")

	authFile := filepath.Join(data, "coord", "admin.auth")
	out, err := exec.Command(bin, "ctl", "--zk", zk, "--auth-file", authFile,
		"service", "register", "--addr", "10.1.2.3:8080", "--ttl", "1h", "app1", "api.svc.example").CombinedOutput()
	if err != nil {
		t.Fatalf("ctl service register: %v\n%s", err, out)
	}
	host, port, _ := net.SplitHostPort(dnsAddr)
	coordtest.WaitFor(t, time.Minute, "dig answers the registered address", func() error {
		out, err := exec.Command(digBin, "@"+host, "-p", port, "+short", "+time=2", "+tries=1", "api.svc.example.", "A").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "10.1.2.3" {
			return fmt.Errorf("dig: %q %v", out, err)
		}
		return nil
	})
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, dnsAddr)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, srvs, err := r.LookupSRV(ctx, "", "", "api.svc.example.")
	if err != nil || len(srvs) != 1 || srvs[0].Port != 8080 {
		t.Fatalf("SRV from up: %+v %v", srvs, err)
	}
	waitHTTP(t, "http://"+web+"/metrics", `shepherd_dns_queries_total{qtype="A",rcode="NOERROR"}`, "shepherd_dns_scanner_leading 1")
}
