package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestAttackIfMatchAnyVersion: If-Match "-1" was read as ZooKeeper's
// "any version" and overwrote a concurrent edit. Only an ETag the console
// sent is a version; anything else is 412 and changes nothing.
func TestAttackIfMatchAnyVersion(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	c.addOrders()
	admin := c.as("admin")
	edited := strings.Replace(specJSON, `"shop.*"`, `"shop.orders"`, 1)
	for _, tag := range []string{`"-1"`, `-1`, `*`, `"+0"`, `"00"`, `W/"-1"`, `"0x0"`, `"1e0"`} {
		st, body := admin.do("PUT", "/api/v1/tasks/orders", edited, map[string]string{"If-Match": tag})
		if st != http.StatusPreconditionFailed || errorCode(body) != "version_conflict" {
			t.Errorf("PUT with If-Match %s: %d %s, want 412 version_conflict", tag, st, body)
		}
		if st, body := admin.do("DELETE", "/api/v1/tasks/orders", nil, map[string]string{"If-Match": tag}); st != http.StatusPreconditionFailed {
			t.Errorf("DELETE with If-Match %s: %d %s, want 412", tag, st, body)
		}
	}
	sp, _, err := c.admin.TaskVersion(t.Context(), "orders")
	if err != nil || sp.Filter.Include[0] != "shop.*" {
		t.Fatalf("the task changed: %+v, %v", sp, err)
	}
	if st, body := admin.do("PUT", "/api/v1/tasks/orders", edited, map[string]string{"If-Match": `"0"`}); st != http.StatusOK {
		t.Fatalf("PUT with the current version: %d %s", st, body)
	}
}
