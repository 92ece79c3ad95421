package coord

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"

	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/coord/proto"
)

// testConfig is a fast-ticking config in dir: session timeouts of a few
// hundred milliseconds let expiry tests finish quickly.
func testConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.TickTime = 100 * time.Millisecond
	cfg.FourLetterWords = []string{"*"}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("SHEPHERD_TEST_LOG") != "" {
		cfg.Logger = slog.Default()
	}
	return cfg
}

func startServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func connect(t testing.TB, addr string, timeout time.Duration) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, timeout, zk.WithDialer(recipe.Dialer()), zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				go func() {
					for range events {
					}
				}()
				return c
			}
		case <-deadline:
			t.Fatalf("no session with %s after 10s", addr)
		}
	}
}

// quietLogger keeps go-zookeeper's reconnect chatter out of test output.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// checkFor polls fn until it returns nil or total elapses (NATS's helper).
func checkFor(t testing.TB, total, poll time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	var err error
	for time.Now().Before(deadline) {
		if err = fn(); err == nil {
			return
		}
		time.Sleep(poll)
	}
	t.Fatalf("condition not met after %v: %v", total, err)
}

// rawClient speaks the wire protocol directly, for what real clients
// hide: exact error codes, optional handshake fields, malformed input.
type rawClient struct {
	t    testing.TB
	nc   net.Conn
	xid  int32
	resp proto.ConnectResponse
}

func dialRaw(t testing.TB, addr string, cr proto.ConnectRequest) *rawClient {
	t.Helper()
	return dialRawWith(t, &net.Dialer{}, addr, cr)
}

// dialRawWith is dialRaw through d, e.g. with socket options set before
// the connection is made.
func dialRawWith(t testing.TB, d *net.Dialer, addr string, cr proto.ConnectRequest) *rawClient {
	t.Helper()
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	rc := &rawClient{t: t, nc: nc}
	rc.write(proto.Encode(&cr))
	b, err := rc.read()
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if err := proto.Decode(b, &rc.resp); err != nil {
		t.Fatalf("decode connect response: %v", err)
	}
	return rc
}

func (rc *rawClient) write(b []byte) {
	rc.t.Helper()
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(b)))
	rc.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.nc.Write(append(l[:], b...)); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

func (rc *rawClient) read() ([]byte, error) {
	rc.nc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a liveness bound: a loaded machine is slow
	var l [4]byte
	if _, err := io.ReadFull(rc.nc, l[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(l[:]))
	_, err := io.ReadFull(rc.nc, b)
	return b, err
}

// call sends op with body and returns the reply header and the body bytes,
// skipping watch notifications.
func (rc *rawClient) call(op proto.OpCode, body proto.Record) (proto.ReplyHeader, *proto.Decoder) {
	rc.t.Helper()
	rc.xid++
	e := proto.NewEncoder(nil)
	(&proto.RequestHeader{Xid: rc.xid, Type: op}).Encode(e)
	if body != nil {
		body.Encode(e)
	}
	rc.write(e.Bytes())
	for {
		b, err := rc.read()
		if err != nil {
			rc.t.Fatalf("%v reply: %v", op, err)
		}
		d := proto.NewDecoder(b)
		var h proto.ReplyHeader
		h.Decode(d)
		if h.Xid == proto.XidNotification {
			continue
		}
		if h.Xid != rc.xid {
			rc.t.Fatalf("%v: reply xid %d, want %d", op, h.Xid, rc.xid)
		}
		return h, d
	}
}

func mustDecode(t testing.TB, d *proto.Decoder, r proto.Record) {
	t.Helper()
	r.Decode(d)
	if err := d.Err(); err != nil {
		t.Fatalf("decode %T: %v", r, err)
	}
}

// fourLetter returns the server's answer to word, a refusal included.
func fourLetter(t testing.TB, addr, word string) string {
	t.Helper()
	ans, err := coordhealth.Ask(context.Background(), addr, word)
	if err != nil && !errors.Is(err, coordhealth.ErrNotAllowed) {
		t.Fatalf("%s: %v", word, err)
	}
	return ans
}
