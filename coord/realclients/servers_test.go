package realclients

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// server is one running ZooKeeper-protocol server.
type server interface {
	// Addr is the client address, host:port.
	Addr() string
	// Restart stops the server and starts it again on the same port with
	// the same data directory, as an operator's restart would.
	Restart(t testing.TB)
}

// serverKind starts a fresh server of one implementation for a test.
type serverKind struct {
	name  string
	start func(t *testing.T) server
}

// kinds are the implementations every scenario runs on. ZooKeeper comes
// first: it is the reference the other is judged by.
var kinds = []serverKind{
	{name: "zookeeper", start: startZooKeeper},
	{name: "shepherd", start: startShepherd},
}

// zkTickTime makes ZooKeeper's session timeout bounds (2 and 20 ticks)
// match shepherd's defaults, so clients negotiate the same timeouts.
const zkTickTime = 2 * time.Second

// startZooKeeper starts Apache ZooKeeper 3.8 with TTL nodes enabled:
// shepherd always accepts them, and the scenarios create one.
func startZooKeeper(t *testing.T) server {
	t.Helper()
	return testpeer.StartZooKeeperWith(t, testpeer.ZKOptions{
		TickTime:    zkTickTime,
		ExtraConfig: map[string]string{"extendedTypesEnabled": "true"},
	})
}

// logBuffer collects a server's structured log so a failing test can show
// it without flooding passing runs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newTestLogger returns a logger whose output is printed if t fails.
func newTestLogger(t *testing.T, name string) *slog.Logger {
	lb := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log:\n%s", name, lb.String())
		}
	})
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
