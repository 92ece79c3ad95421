package replication

import (
	"context"
	"errors"
	"log/slog"
	"net"
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
