package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestAttackZnodePathBytes: a NUL in the browser's path gave 500. A path
// ZooKeeper would refuse is the caller's mistake: 400, naming it.
func TestAttackZnodePathBytes(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	admin := c.as("admin")
	for _, p := range []string{"/a%00b", "/%00", "/a%01", "/a%7F", "/a%ff", "/a/", "/a//b", "/a/./b", "/" + strings.Repeat("a", 1100)} {
		st, body := admin.do("GET", "/api/v1/znodes?path="+p, nil, nil)
		if st != http.StatusBadRequest || errorCode(body) != "invalid" {
			t.Errorf("GET znode %s: %d %s, want 400 invalid", p, st, body)
		}
	}
	if st, body := admin.do("GET", "/api/v1/znodes?path=/", nil, nil); st != http.StatusOK {
		t.Fatalf("GET znode /: %d %s", st, body)
	}
}
