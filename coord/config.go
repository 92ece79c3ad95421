package coord

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shepherd-dev/shepherd/coord/wal"
)

// Config is everything `shepherd coord` can be told. The zero value is not
// valid; start from DefaultConfig, which works on a laptop.
type Config struct {
	// Listen is the client address, host:port. Port 0 picks a free port
	// (tests); Server.Addr reports the real one.
	Listen string
	// DataDir holds snapshots, and the transaction log unless DataLogDir is set.
	DataDir string
	// DataLogDir, if set, holds the transaction log (ZooKeeper's dataLogDir):
	// put it on its own disk so fsyncs do not queue behind snapshot writes.
	DataLogDir string
	// TickTime is ZooKeeper's basic time unit; session timeout bounds default
	// to 2 and 20 ticks.
	TickTime          time.Duration
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// SnapCount is how many transactions are logged between snapshots.
	SnapCount int
	// MaxClientConns limits concurrent connections from one IP; 0 is no limit.
	MaxClientConns int
	// MaxRequestBytes is the largest packet accepted (ZooKeeper's
	// jute.maxbuffer). A larger one closes that connection. It may not
	// exceed MaxRequestBytesLimit: a write must fit in one log record.
	MaxRequestBytes int
	// MaxQueuedBytes bounds what one connection may owe a client that does
	// not read its replies: the encoded bytes of every reply queued for it
	// and not yet written to its socket, whether still waiting for its
	// batch's fsync or already in the send queue, plus a small charge per
	// reply for the server's bookkeeping. A connection that would owe more
	// is closed: one slow client must not hold the memory of the server
	// hostage. ZooKeeper has no such bound (its queue grows until the JVM
	// runs out of heap); the default, 64 MiB, is 64 replies of the largest
	// default znode. It may not be below MaxRequestBytes plus 1 KiB, the
	// size of the largest reply.
	MaxQueuedBytes int64
	// MaxQueuedEventBytes bounds, in the same way and separately, the watch
	// events one connection may owe its client. Past it the connection is
	// closed and its session's watches are dropped, as ZooKeeper drops a
	// closed connection's watches; the session lives on until it expires or
	// its client reconnects and re-sends its watches (an ordinary
	// disconnect keeps them: see docs/coord.md). Events are counted
	// apart from replies because they are not asked for: other clients'
	// writes produce them at any rate, so a client that stops reading is
	// cut off sooner (the default, 16 MiB, is about 45,000 events of
	// 100-byte paths, bookkeeping included, beyond what the kernel's socket
	// buffers hold) while the replies it asked for keep their larger
	// room. It may not be below MaxRequestBytes plus 1 KiB, the size of
	// the largest event (a path).
	MaxQueuedEventBytes int64
	// HandshakeTimeout is how long a new connection may take to send its
	// connect request (or four-letter word) before it is closed; ZooKeeper's
	// zookeeper.nio.sessionlessCnxnTimeout, 10 s.
	HandshakeTimeout time.Duration
	// AdminListen, if set, serves /metrics (Prometheus), /health and
	// /commands/<word> over HTTP.
	AdminListen string
	// AdminPprof adds Go's /debug/pprof/ profiles to the admin HTTP server.
	// Off by default: profiles show memory and goroutine stacks to anyone
	// who can reach AdminListen.
	AdminPprof bool
	// AdminAuthFile is where the generated admin credential lives (see
	// ensureAdminAuth); empty means <DataDir>/admin.auth.
	AdminAuthFile string
	// AdminRoots are nodes the server creates at start, with their
	// missing parents, when they do not exist, before it accepts a client:
	// persistent, empty, with the ACL digest:<user>:<hash>:cdrwa of the
	// admin credential. `shepherd coord` gives Shepherd's subtree roots,
	// so that no client can create one first with an ACL of its own and
	// the processes holding the credential trust what is below them.
	// Existing nodes are left as they are.
	AdminRoots []string
	// FourLetterWords lists the enabled four-letter words; "*" enables all.
	// The default is "srvr" alone, as in ZooKeeper 3.5 and later: the
	// others reveal session ids, client addresses, paths and the
	// environment to anyone who can connect.
	FourLetterWords []string
	// SuperDigest is "super:<base64 sha1>" as in ZooKeeper's
	// zookeeper.DigestAuthenticationProvider.superDigest; a client that
	// authenticates with it bypasses every ACL.
	SuperDigest string
	// AutopurgeSnapRetainCount and AutopurgeInterval are ZooKeeper's
	// autopurge.snapRetainCount and autopurge.purgeInterval. An interval of
	// zero disables purging.
	AutopurgeSnapRetainCount int
	AutopurgeInterval        time.Duration
	// NoSync skips fsync. Only for tests that do not test durability.
	NoSync bool
	// Logger receives the server's structured logs; nil means slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults of `shepherd coord`, which mirror a
// stock Apache ZooKeeper standalone server.
func DefaultConfig() Config {
	return Config{
		Listen:                   "127.0.0.1:2181",
		DataDir:                  "shepherd-data",
		TickTime:                 2 * time.Second,
		SnapCount:                100000,
		MaxClientConns:           60,
		MaxRequestBytes:          0xfffff, // ZooKeeper's jute.maxbuffer default: 1 MiB less one byte
		MaxQueuedBytes:           64 << 20,
		MaxQueuedEventBytes:      16 << 20,
		HandshakeTimeout:         10 * time.Second,
		FourLetterWords:          []string{"srvr"},
		AutopurgeSnapRetainCount: 3,
	}
}

// ErrConfig reports an invalid configuration value.
var ErrConfig = errors.New("coord: invalid config")

// MaxRequestBytesLimit is the largest MaxRequestBytes accepted. A request
// becomes one transaction log record, and the log refuses records over
// wal.MaxRecordBytes; the margin covers what a transaction adds to its
// request (header, stat, the node's ACL). A larger limit would let one
// client write a record the log cannot hold, which stops the server, and
// again at every restart.
const MaxRequestBytesLimit = wal.MaxRecordBytes - 1<<20

// queueHeadroom is what a queue bound needs beyond MaxRequestBytes to hold
// the largest reply or event: its header, a stat, and frameOverhead.
const queueHeadroom = 1 << 10

// queueBound is the most a connection may owe its client in frames of
// kind k (see conn.owe).
func (c *Config) queueBound(k frameKind) int64 {
	if k == eventFrame {
		return c.MaxQueuedEventBytes
	}
	return c.MaxQueuedBytes
}

// normalize fills derived defaults and validates c, naming the bad field.
func (c *Config) normalize() error {
	if c.Listen == "" {
		return fmt.Errorf("%w: listen: an address host:port is required", ErrConfig)
	}
	if c.DataDir == "" {
		return fmt.Errorf("%w: data-dir: a directory is required", ErrConfig)
	}
	if c.TickTime <= 0 {
		return fmt.Errorf("%w: tick-time: must be positive, got %v", ErrConfig, c.TickTime)
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = 20 * c.TickTime
	}
	if c.MinSessionTimeout > c.MaxSessionTimeout {
		return fmt.Errorf("%w: min-session-timeout %v is above max-session-timeout %v", ErrConfig, c.MinSessionTimeout, c.MaxSessionTimeout)
	}
	if c.SnapCount <= 0 {
		return fmt.Errorf("%w: snap-count: must be positive, got %d", ErrConfig, c.SnapCount)
	}
	if c.MaxRequestBytes <= 0 || c.MaxRequestBytes > MaxRequestBytesLimit {
		return fmt.Errorf("%w: max-request-bytes (jute.maxbuffer): must be 1..%d (the transaction log's record limit less 1 MiB), got %d",
			ErrConfig, MaxRequestBytesLimit, c.MaxRequestBytes)
	}
	for k := range frameKinds {
		// A getData reply carries up to MaxRequestBytes of data, an event a
		// path of up to MaxRequestBytes.
		if bound := c.queueBound(k); bound < int64(c.MaxRequestBytes)+queueHeadroom {
			return fmt.Errorf("%w: %s %d is below max-request-bytes %d plus %d: the largest %s would close its connection",
				ErrConfig, k.boundName(), bound, c.MaxRequestBytes, queueHeadroom, k)
		}
	}
	if c.HandshakeTimeout <= 0 {
		return fmt.Errorf("%w: handshake-timeout: must be positive, got %v", ErrConfig, c.HandshakeTimeout)
	}
	if c.MaxClientConns < 0 {
		return fmt.Errorf("%w: max-client-conns: must be 0 (no limit) or positive, got %d", ErrConfig, c.MaxClientConns)
	}
	if c.AutopurgeSnapRetainCount < 3 {
		c.AutopurgeSnapRetainCount = 3 // ZooKeeper's floor: fewer would risk an unrecoverable directory
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}
