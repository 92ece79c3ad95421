package server

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/core"
)

// TestDryRunAnswersAlikeForClosedAndNonMySQLPorts: the console's "test
// connection" (the real dry run) says the same of a closed port and of an
// HTTP server's port, so it cannot be used to scan a network.
func TestDryRunAnswersAlikeForClosedAndNonMySQLPorts(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, func(_ *Config, deps *Deps) { deps.Validate = core.MySQL{}.DryRun })
	operator := c.as("operator")
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	ports := closedPorts(t, 2)
	closed, closedTarget := ports[0], ports[1]
	webPort := web.Listener.Addr().(*net.TCPAddr).Port
	answer := func(port int) string {
		t.Helper()
		body := strings.Replace(specJSON, `"port":3306`, `"port":`+strconv.Itoa(port), 1)
		body = strings.Replace(body, `"port":3307`, `"port":`+strconv.Itoa(closedTarget), 1)
		st, resp := operator.do("POST", "/api/v1/tasks:validate", body, nil)
		if st != 200 {
			t.Fatalf("validate with the source at port %d: %d %s", port, st, resp)
		}
		return strings.ReplaceAll(resp, ":"+strconv.Itoa(port), ":PORT")
	}
	fromClosed, fromWeb := answer(closed), answer(webPort)
	if fromClosed != fromWeb {
		t.Fatalf("the dry run tells a closed port from an HTTP server:\nclosed: %s\nHTTP:   %s", fromClosed, fromWeb)
	}
	if !strings.Contains(fromClosed, "could not reach a MySQL server at 127.0.0.1:PORT") {
		t.Fatalf("answer %s: want the generic could not reach", fromClosed)
	}
}

// closedPorts are n distinct loopback ports nothing listens on.
func closedPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}
