// Package mysqldial is the one way a Shepherd process opens a connection
// to a MySQL or MariaDB server: the replicator's pools and binlog stream
// (cores), the monitor's reading of a source's binary logs, and the
// console's dry run.
//
// Both client libraries parse the server's handshake with unchecked
// slice indexing: go-sql-driver/mysql v1.10.1 (the newest) panics on a
// 32-byte handshake, and go-mysql's client too. A server a task names, or
// anyone between it and us, chooses those bytes, and a panic in a process
// that runs many tasks would stop all of them. So every dial is made
// here, with two defences: the server's first packet is held back until
// checkHandshake has found every field the libraries will read
// (handshake.go), and a panic of either library during the connect is
// recovered where the connect is made. Either way the connection fails
// with ErrMalformedHandshake and the process keeps running.
//
// It also tells whether a failure came before or after the server's
// handshake was accepted (HandshakeAccepted): the dry run shows a
// server's own answer (access denied) only after a real handshake, so
// that it cannot tell a closed port from an open one that is not MySQL.
//
// It must never retry, log passwords or hold a connection itself.
package mysqldial

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ErrMalformedHandshake reports a server whose first packet the check
// refused, or whose handshake (or login reply) made a client library
// panic: not a MySQL server, or something between rewrote the bytes.
var ErrMalformedHandshake = errors.New("mysqldial: malformed handshake")

// DefaultTimeout bounds a connect, handshake and login when the caller's
// config sets no Timeout: a port that accepts and then says nothing must
// not hold the caller until its own context ends.
const DefaultTimeout = 10 * time.Second

// Error is a failed connect to Addr. Err is the client library's error,
// so errors.As still finds a *mysql.MySQLError in it; its message is
// Err's, as every caller names the server it was connecting to.
type Error struct {
	Addr string
	// Accepted is whether the server's handshake was parsed and the
	// client answered it: only then is Err the server's own answer.
	Accepted bool
	Err      error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// HandshakeAccepted reports whether err is a failed connect (of OpenDB's
// pool) that failed after the server sent a handshake the client could
// parse and answer: a MySQL server that refused the login, rather than a
// closed port, a silent port, a timeout or a server that is not MySQL.
func HandshakeAccepted(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Accepted
}

// malformed is the error of a server at addr whose handshake was refused
// (by checkHandshake, for why) or made the client library panic.
func malformed(addr string, why string) error {
	return fmt.Errorf("%w: the server at %s sent a malformed handshake (%s): is it a MySQL server, and does anything between rewrite the connection?", ErrMalformedHandshake, addr, why)
}

// recoveredPanics counts the client-library panics recovered: the fuzz
// target checks that checkHandshake leaves none to recover.
var recoveredPanics atomic.Int64

// recovered is the error of a panic v of a client library while talking
// to addr. The panic and its stack go to the log at debug level: they
// describe the library, the error what the operator can do.
func recovered(addr string, v any, log *slog.Logger) error {
	recoveredPanics.Add(1)
	log.Debug("mysql client library panicked during connect", "server", addr, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	return malformed(addr, "the client library failed on it")
}

// OpenDB is sql.OpenDB for cfg, with every connection of the pool made
// through the panic guard, also those database/sql opens in its own
// goroutine. cfg.Timeout (DefaultTimeout when zero) bounds each connect
// from the dial to the end of the login. cfg.DialFunc is replaced.
func OpenDB(cfg *mysql.Config, log *slog.Logger) (*sql.DB, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.Clone()
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.DialFunc = dialTracked
	inner, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysqldial: server %s: %w", cfg.Addr, err)
	}
	return sql.OpenDB(&connector{inner: inner, addr: cfg.Addr, timeout: cfg.Timeout, log: log}), nil
}

// connector is the driver's connector behind the guard.
type connector struct {
	inner   driver.Connector
	addr    string
	timeout time.Duration
	log     *slog.Logger
}

// attemptKey carries an *attempt from Connect to dialTracked through the
// context the driver passes on.
type attemptKey struct{}

// attempt is what one Connect learned: the connection it dialled (to
// close after a panic, which skips the driver's own cleanup), why the
// server's first packet was refused, if it was, and whether the client
// wrote to the connection, which it does only once it has parsed the
// server's handshake.
type attempt struct {
	mu      sync.Mutex
	conn    net.Conn
	refusal error
	wrote   atomic.Bool
}

func (a *attempt) refused(err error) {
	a.mu.Lock()
	a.refusal = err
	a.mu.Unlock()
}

func (a *attempt) refusalErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refusal
}

func (c *connector) Connect(ctx context.Context) (conn driver.Conn, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	at := &attempt{}
	defer func() {
		if v := recover(); v != nil {
			at.closeConn()
			conn, err = nil, recovered(c.addr, v, c.log)
		}
		if r := at.refusalErr(); err != nil && r != nil {
			err = malformed(c.addr, r.Error())
		}
		if err != nil {
			err = &Error{Addr: c.addr, Accepted: at.wrote.Load(), Err: err}
		}
	}()
	return c.inner.Connect(context.WithValue(ctx, attemptKey{}, at))
}

func (c *connector) Driver() driver.Driver { return c.inner.Driver() }

func (a *attempt) closeConn() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn != nil {
		a.conn.Close()
	}
}

// dialTracked dials like the driver would and, under Connect, records the
// connection in Connect's attempt.
func dialTracked(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := Dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	at, _ := ctx.Value(attemptKey{}).(*attempt)
	if at == nil {
		return &gatedConn{Conn: conn, refused: func(error) {}}, nil
	}
	at.mu.Lock()
	at.conn = conn
	at.mu.Unlock()
	return &gatedConn{Conn: conn, refused: at.refused, wrote: &at.wrote}, nil
}

// Dial is the network dial of every connection to a database server (TCP
// keep-alives on, as the drivers set them), under OpenDB's pools and a
// Dialer's syncer alike.
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// Dialer dials for one go-mysql binlog syncer (its
// BinlogSyncerConfig.Dialer) and guards the syncer's calls that connect.
type Dialer struct {
	addr string
	log  *slog.Logger
	mu   sync.Mutex
	// opened are the connections dialled during the current Guard call:
	// a panic skips the library's cleanup, so Guard closes them.
	opened []net.Conn
	// refusal is why a first packet was refused during the call.
	refusal error
}

// NewDialer is a Dialer for the server at addr.
func NewDialer(addr string, log *slog.Logger) *Dialer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Dialer{addr: addr, log: log}
}

// Dial is the syncer's dial.
func (d *Dialer) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := Dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.opened = append(d.opened, conn)
	d.mu.Unlock()
	return &gatedConn{Conn: conn, refused: d.refused}, nil
}

func (d *Dialer) refused(err error) {
	d.mu.Lock()
	d.refusal = err
	d.mu.Unlock()
}

// Guard runs fn, a call into go-mysql that connects (a syncer's StartSync,
// or its Close, which connects to KILL the dump). A first packet the
// gate refused, or a panic of the library, makes fn's error
// ErrMalformedHandshake; after a panic Guard closes what fn had dialled. The
// syncer's own goroutine recovers its panics itself (into the stream's
// error), and Shepherd turns the syncer's reconnects off, so these calls
// are the only places go-mysql parses a handshake.
func (d *Dialer) Guard(fn func() error) (err error) {
	d.mu.Lock()
	d.opened, d.refusal = nil, nil
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		opened, refusal := d.opened, d.refusal
		d.opened, d.refusal = nil, nil
		d.mu.Unlock()
		if v := recover(); v != nil {
			for _, c := range opened {
				c.Close()
			}
			err = recovered(d.addr, v, d.log)
		} else if err != nil && refusal != nil {
			err = malformed(d.addr, refusal.Error())
		}
	}()
	return fn()
}
