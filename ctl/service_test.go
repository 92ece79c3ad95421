package ctl

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/shepherd-dev/shepherd/dns"
)

// TestServiceVerbs: register (with a TTL and held by ctl's session),
// heartbeat, list and list --json (the registry's one status read),
// block, unblock and deregister, each change in the audit log; an
// anonymous registration is refused with the fix.
func TestServiceVerbs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		out := mustCtlAuth(t, connect, "service", "register", "--addr", "10.0.0.1:8080", "--weight", "3", "--meta", "dc=east", "--ttl", "5s", "app1", "api.svc.example")
		if !strings.Contains(out, "registered 10.0.0.1:8080 in app1/api.svc.example") {
			t.Fatalf("register: %s", out)
		}
		mustCtlAuth(t, connect, "service", "heartbeat", "--addr", "10.0.0.1:8080", "app1", "api.svc.example")

		// Held by ctl's session until it is interrupted.
		sigs := make(chan os.Signal, 1)
		held := startCtl(t, Env{Signals: sigs}, connect, withAuth([]string{"service", "register", "--addr", "10.0.0.2:8080", "app1", "api.svc.example"})...)
		held.waitLines(t, 1)
		mustCtlAuth(t, connect, "service", "block", "--addr", "10.0.0.1:8080", "--reason", "maintenance", "app1", "api.svc.example")

		out = mustCtlAuth(t, connect, "service", "list")
		for _, want := range []string{"app1  api.svc.example  10.0.0.1:8080  3", "ttl 5s", "blocked  maintenance by digest:", "10.0.0.2:8080  1       session  served"} {
			if !strings.Contains(out, want) {
				t.Errorf("list lacks %q:\n%s", want, out)
			}
		}
		var services []dns.ServiceStatus
		if err := json.Unmarshal([]byte(mustCtlAuth(t, connect, "--json", "service", "list")), &services); err != nil {
			t.Fatal(err)
		}
		if len(services) != 1 || services[0].Served != 1 || len(services[0].Addresses) != 2 || services[0].Addresses[0].Blocked == nil || services[0].Addresses[0].Meta["dc"] != "east" {
			t.Fatalf("list --json: %+v", services)
		}

		mustCtlAuth(t, connect, "service", "unblock", "--addr", "10.0.0.1:8080", "app1", "api.svc.example")
		if r := runCtlAuth(t, connect, "service", "unblock", "--addr", "10.0.0.1:8080", "app1", "api.svc.example"); r.code != 1 || !strings.Contains(r.stderr, "not blocked") {
			t.Errorf("unblock twice: %v", r)
		}
		sigs <- syscall.SIGTERM
		if r := <-held.done; r.code != 0 {
			t.Errorf("held registration after SIGTERM: %v", r)
		}
		mustCtlAuth(t, connect, "service", "deregister", "--addr", "10.0.0.1:8080", "app1", "api.svc.example")
		if err := json.Unmarshal([]byte(mustCtlAuth(t, connect, "--json", "service", "list")), &services); err != nil || len(services) != 1 || len(services[0].Addresses) != 0 {
			t.Fatalf("list after deregistering both: %+v %v", services, err)
		}

		var actions, failed []string
		for _, e := range auditEntries(t, connect) {
			if !strings.HasPrefix(e.Target, "service/") {
				continue
			}
			entry := e.Action + " " + strings.TrimPrefix(e.Target, "service/app1/api.svc.example/") + " " + e.Via
			if e.Error != "" {
				failed = append(failed, entry)
			} else {
				actions = append(actions, entry)
			}
		}
		slices.Sort(actions)
		want := []string{
			"service.block 10.0.0.1:8080 ctl", "service.deregister 10.0.0.1:8080 ctl", "service.deregister 10.0.0.2:8080 ctl",
			"service.register 10.0.0.1:8080 ctl", "service.register 10.0.0.2:8080 ctl", "service.unblock 10.0.0.1:8080 ctl",
		}
		if !slices.Equal(actions, want) || !slices.Equal(failed, []string{"service.unblock 10.0.0.1:8080 ctl"}) {
			t.Errorf("audited %q and failed %q; want %q and the second unblock failed", actions, failed, want)
		}

		r := runCtl(t, connect, "service", "register", "--addr", "10.6.6.6:80", "--ttl", "5s", "app1", "api.svc.example")
		if r.code != 1 || !strings.Contains(r.stderr, "not authenticated") && !strings.Contains(r.stderr, "trusted writer") {
			t.Errorf("anonymous register: %v", r)
		}
		for _, args := range [][]string{
			{"service", "register", "--addr", "host:80", "app1", "x.example"},
			{"service", "register", "--addr", "10.0.0.1:80", "App_1", "x.example"},
			{"service", "register", "--addr", "10.0.0.1:80", "--weight", "0", "app1", "x.example"},
			{"service", "register", "--addr", "10.0.0.1:80", "--check", "udp", "app1", "x.example"},
			{"service", "block", "app1", "x.example"},
		} {
			if r := runCtlAuth(t, connect, args...); r.code != 2 {
				t.Errorf("ctl %s: %v; want a usage error", strings.Join(args, " "), r)
			}
		}
	})
}
