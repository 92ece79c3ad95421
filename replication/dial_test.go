package replication

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/internal/mysqldial"
)

// fakeEndpoint is an endpoint at a mysqldial.FakeServer sending handshake.
func fakeEndpoint(t *testing.T, handshake []byte, replies ...[]byte) Endpoint {
	t.Helper()
	f, err := mysqldial.NewFakeServer(handshake, replies...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	host, port, _ := net.SplitHostPort(f.Addr())
	p, _ := strconv.Atoi(port)
	return Endpoint{Host: host, Port: p, User: "repl", Password: "secret"}
}

// A source (or a man in the middle) sending the 32-byte handshake of the
// attack: Open, as a core calls it, returns a retryable error naming the
// server instead of panicking; the task goes RETRYING with it.
func TestOpenSurvivesMalformedHandshake(t *testing.T) {
	src := fakeEndpoint(t, mysqldial.MalformedHandshake())
	_, err := Open(context.Background(), Config{Task: "t", Source: src, Target: src, Logger: slog.New(slog.DiscardHandler)})
	want := "the server at " + src.Addr() + " sent a malformed handshake"
	if !errors.Is(err, mysqldial.ErrMalformedHandshake) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open: got %v, want ErrMalformedHandshake saying %q", err, want)
	}
	if !retryable(err) {
		t.Errorf("a malformed handshake is not retryable: %v", err)
	}
}

// The binlog stream dials on its own (go-mysql's client): the same
// handshake there is an error too, and closing the syncer after it is
// safe.
func TestBinlogStreamSurvivesMalformedHandshake(t *testing.T) {
	src := fakeEndpoint(t, mysqldial.MalformedHandshake())
	cfg, err := Config{Task: "t", Source: src, Target: src}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	r := &Replicator{cfg: cfg, log: slog.New(slog.DiscardHandler), flavor: FlavorMySQL}
	for _, start := range []Position{{File: "binlog.000001", Pos: 4}, {GTID: "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5"}} {
		s := r.newSyncer()
		_, err := r.startStream(s, start)
		s.Close()
		if !errors.Is(err, mysqldial.ErrMalformedHandshake) {
			t.Errorf("start at %s: got %v, want ErrMalformedHandshake", start, err)
		}
	}
}

// connectChecks are the dry run's connect verdicts for cfg, with each
// endpoint's address replaced by its role, so that answers about
// different servers compare.
func connectChecks(t *testing.T, cfg Config) []string {
	t.Helper()
	rep, err := DryRun(context.Background(), cfg, "current")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range rep.Checks {
		d := strings.ReplaceAll(c.Detail, cfg.Source.Addr(), "SOURCE")
		out = append(out, c.Name+": "+strings.ReplaceAll(d, cfg.Target.Addr(), "TARGET"))
	}
	return out
}

// closedEndpoint is an endpoint whose port nothing listens on.
func closedEndpoint(t *testing.T) Endpoint {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return Endpoint{Host: "127.0.0.1", Port: port, User: "repl", Password: "secret"}
}

// The dry run was a port scanner: "connection refused" and "invalid
// connection" told a closed port from an open one. Now a closed port, an
// HTTP server, a server that says nothing MySQL understands and one that
// sends a malformed handshake all get the same answer.
func TestDryRunCannotTellPortsApart(t *testing.T) {
	httpSrv := httptest.NewServer(http.NotFoundHandler())
	defer httpSrv.Close()
	host, port, _ := net.SplitHostPort(httpSrv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	endpoints := map[string]Endpoint{
		"closed port":         closedEndpoint(t),
		"HTTP server":         {Host: host, Port: p, User: "repl", Password: "secret"},
		"SSH banner":          fakeEndpoint(t, []byte("SSH-2.0-OpenSSH_9.6\r\n")),
		"malformed handshake": fakeEndpoint(t, mysqldial.MalformedHandshake()),
	}
	target := closedEndpoint(t)
	var first []string
	for name, src := range endpoints {
		got := connectChecks(t, Config{Task: "t", Source: src, Target: target})
		if first == nil {
			first = got
			if want := "source connect: could not reach a MySQL server at SOURCE"; len(got) == 0 || !strings.HasPrefix(got[0], want) {
				t.Fatalf("%s: checks %q, want the first to start %q", name, got, want)
			}
			continue
		}
		if strings.Join(got, "\n") != strings.Join(first, "\n") {
			t.Errorf("%s: checks\n%s\ndiffer from\n%s", name, strings.Join(got, "\n"), strings.Join(first, "\n"))
		}
	}
}

// After a real handshake the server's own refusal is shown: a wrong
// password is worth telling apart from a wrong host.
func TestDryRunShowsAccessDeniedAfterAHandshake(t *testing.T) {
	src := fakeEndpoint(t, mysqldial.HandshakeV10("8.0.36"), mysqldial.ErrPacket(1045, "28000", "Access denied for user 'repl'@'127.0.0.1'"))
	got := connectChecks(t, Config{Task: "t", Source: src, Target: closedEndpoint(t)})
	if len(got) == 0 || !strings.Contains(got[0], "Access denied for user 'repl'") {
		t.Fatalf("checks %q: want the source's access denied", got)
	}
}
