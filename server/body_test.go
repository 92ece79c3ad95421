package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/core"
)

// TestAttackNonJSONContentType: a cookie-authenticated text/plain POST
// (what a form of another site can send) was accepted. Every change to
// the API now needs its body declared application/json: 415 otherwise,
// also on routes that read no body.
func TestAttackNonJSONContentType(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	c.addOrders()
	admin := c.as("admin")
	second := strings.Replace(specJSON, `"orders"`, `"second"`, 1)
	for _, tc := range []struct {
		method, path, body, ct string
	}{
		{"POST", "/api/v1/tasks/orders/stop", "x", "text/plain"},
		{"POST", "/api/v1/tasks/orders/stop", "", "text/plain;charset=UTF-8"},
		{"POST", "/api/v1/tasks", second, "text/plain"},
		{"POST", "/api/v1/tasks", second, "application/x-www-form-urlencoded"},
		{"POST", "/api/v1/tasks", second, ""},
		{"POST", "/api/v1/tasks:validate", second, "multipart/form-data; boundary=x"},
		{"DELETE", "/api/v1/tasks/orders", "x", "text/plain"},
	} {
		st, body := admin.do(tc.method, tc.path, tc.body, map[string]string{"Content-Type": tc.ct})
		if st != http.StatusUnsupportedMediaType || errorCode(body) != "unsupported_media_type" {
			t.Errorf("%s %s as %q: %d %s, want 415", tc.method, tc.path, tc.ct, st, body)
		}
	}
	sp, _, err := c.admin.TaskVersion(t.Context(), "orders")
	if err != nil || sp.State != core.DesiredRunning {
		t.Fatalf("orders after the refused requests: %+v, %v", sp, err)
	}
	if _, _, err := c.admin.TaskVersion(t.Context(), "second"); err == nil {
		t.Fatal("a task was created from a non-JSON body")
	}
	if st, body := admin.do("POST", "/api/v1/tasks", second, map[string]string{"Content-Type": "application/json; charset=utf-8"}); st != http.StatusCreated {
		t.Fatalf("JSON with a charset: %d %s", st, body)
	}
}

// TestAttackLaxJSON: trailing data after the JSON was ignored, and port
// 3306.9 was stored as 3306. Bodies are now one JSON value, of the
// fields' types.
func TestAttackLaxJSON(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	admin := c.as("admin")
	for name, body := range map[string]string{
		"trailing object":    specJSON + `{"name":"other"}`,
		"trailing garbage":   specJSON + ` x`,
		"fractional port":    strings.Replace(specJSON, `"port":3306`, `"port":3306.9`, 1),
		"port as text":       strings.Replace(specJSON, `"port":3306`, `"port":"3306"`, 1),
		"exponent port":      strings.Replace(specJSON, `"port":3306`, `"port":3.306e3`, 1),
		"unknown field":      strings.Replace(specJSON, `"start"`, `"strat"`, 1),
		"two documents yaml": "name: orders\n---\nname: other\n",
	} {
		for _, path := range []string{"/api/v1/tasks", "/api/v1/tasks:validate"} {
			if st, resp := admin.do("POST", path, body, nil); st != http.StatusBadRequest {
				t.Errorf("%s to %s: %d %s, want 400", name, path, st, resp)
			}
		}
	}
	if st, body := admin.do("POST", "/api/v1/users", `{"name":"eve","role":"viewer","password":"long enough password"} {}`, nil); st != http.StatusBadRequest {
		t.Errorf("user with trailing data: %d %s, want 400", st, body)
	}
	if _, _, err := c.admin.TaskVersion(t.Context(), "orders"); err == nil {
		t.Fatal("a task was stored from a refused body")
	}
	if st, body := admin.do("POST", "/api/v1/tasks", specJSON+"\n", nil); st != http.StatusCreated {
		t.Fatalf("one JSON value and a newline: %d %s", st, body)
	}
}
