package monitor

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/mysqldial"
)

// A source sending the 32-byte handshake of the attack: the monitor's
// reading fails with the reason instead of panicking the monitor.
func TestReadSourceSurvivesMalformedHandshake(t *testing.T) {
	f, err := mysqldial.NewFakeServer(mysqldial.MalformedHandshake())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	host, port, _ := net.SplitHostPort(f.Addr())
	p, _ := strconv.Atoi(port)
	r := ReadSource(context.Background(), core.Endpoint{Host: host, Port: p, User: "monitor"}, "secret", time.Now())
	if want := "the server at " + f.Addr() + " sent a malformed handshake"; !strings.Contains(r.Err, want) {
		t.Fatalf("ReadSource: Err %q, want it to say %q", r.Err, want)
	}
}
