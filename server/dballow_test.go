package server

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shepherd-dev/shepherd/core"
)

// TestDBAllowList: with --db-allow, a task spec or a dry run naming a
// database host off the list is refused with 400 and never dialled.
func TestDBAllowList(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	var dryRuns atomic.Int32
	c := startConsole(t, tg, func(cfg *Config, deps *Deps) {
		cfg.DBAllow = []string{"10.0.0.0/8", "DB1.example.com.", "192.0.2.7"}
		stub := deps.Validate
		deps.Validate = func(ctx context.Context, sp *core.Spec) (core.DryRunReport, error) {
			dryRuns.Add(1)
			return stub(ctx, sp)
		}
	})
	admin := c.as("admin")
	spec := func(src, tgt string) string {
		s := strings.Replace(specJSON, `"host":"127.0.0.1","port":3306`, `"host":"`+src+`","port":3306`, 1)
		return strings.Replace(s, `"host":"127.0.0.1","port":3307`, `"host":"`+tgt+`","port":3307`, 1)
	}
	for _, tc := range []struct{ src, tgt, field string }{
		{"127.0.0.1", "10.1.2.3", "source.host"},
		{"10.1.2.3", "db2.example.com", "target.host"},
		{"11.0.0.1", "db1.example.com", "source.host"},
		{"192.0.2.8", "10.0.0.1", "source.host"},
	} {
		for _, path := range []string{"/api/v1/tasks", "/api/v1/tasks:validate"} {
			st, body := admin.do("POST", path, spec(tc.src, tc.tgt), nil)
			if st != http.StatusBadRequest || errorCode(body) != "host_not_allowed" || !strings.Contains(body, tc.field) {
				t.Errorf("POST %s from %s to %s: %d %s, want 400 host_not_allowed naming %s", path, tc.src, tc.tgt, st, body, tc.field)
			}
		}
	}
	if n := dryRuns.Load(); n != 0 {
		t.Fatalf("%d dry runs reached a host off the list", n)
	}
	if st, body := admin.do("POST", "/api/v1/tasks:validate", spec("10.9.9.9", "db1.example.com"), nil); st != 200 || dryRuns.Load() != 1 {
		t.Fatalf("dry run between allowed hosts: %d %s", st, body)
	}
	if st, body := admin.do("POST", "/api/v1/tasks", spec("192.0.2.7", "db1.example.com"), nil); st != http.StatusCreated {
		t.Fatalf("create between allowed hosts: %d %s", st, body)
	}
	if st, body := admin.do("PUT", "/api/v1/tasks/orders", spec("127.0.0.1", "db1.example.com"), map[string]string{"If-Match": `"0"`}); st != http.StatusBadRequest || errorCode(body) != "host_not_allowed" {
		t.Fatalf("update to a host off the list: %d %s", st, body)
	}
	// A NATS or Kafka target's servers are held to the same list.
	for _, tc := range []struct{ target, field string }{
		{`{"kind":"nats","url":"nats://10.0.0.5:4222,nats://evil.example:4222","stream":"s"}`, "target.url"},
		{`{"kind":"kafka","brokers":["db1.example.com:9092","203.0.113.9:9092"]}`, "target.brokers[1]"},
	} {
		sp := strings.Replace(spec("10.1.1.1", "10.1.1.2"), `"target":{"host":"10.1.1.2","port":3307,"user":"apply","password":"tgt-secret","flavor":"mariadb"}`, `"target":`+tc.target, 1)
		if !strings.Contains(sp, tc.target) {
			t.Fatalf("spec %s lacks the target", sp)
		}
		st, body := admin.do("POST", "/api/v1/tasks", sp, nil)
		if st != http.StatusBadRequest || errorCode(body) != "host_not_allowed" || !strings.Contains(body, tc.field) {
			t.Errorf("POST a task with target %s: %d %s, want 400 host_not_allowed naming %s", tc.target, st, body, tc.field)
		}
	}
	if _, err := New(Config{DBAllow: []string{"not a host!"}}, Deps{Session: c.session, Feed: c.feed}); err == nil || !strings.Contains(err.Error(), `--db-allow "not a host!"`) {
		t.Fatalf("New with a bad --db-allow entry: %v", err)
	}
}
