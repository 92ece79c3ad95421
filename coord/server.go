package coord

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shepherd-dev/shepherd/coord/tree"
	"github.com/shepherd-dev/shepherd/coord/wal"
)

var (
	// ErrClosed is returned by operations on a server that has been closed.
	ErrClosed = errors.New("coord: server closed")
	// ErrDataDir reports a data directory the server refuses to start on.
	ErrDataDir = errors.New("coord: data directory refused")
)

// Server is a running coordination server. Create one with NewServer, then
// Start it; Close stops it and waits for every goroutine it started.
type Server struct {
	cfg    Config
	log    *slog.Logger
	store  *wal.Store
	secret []byte // derives session passwords, so they survive a restart
	start  time.Time

	ln      net.Listener
	adminLn net.Listener
	admin   *http.Server
	metrics *metrics

	pipe   *pipeline
	syncer *syncer

	connsMu  sync.Mutex
	conns    map[*conn]struct{}
	connsPer map[string]int // open connections per client IP

	totals serverTotals // server-wide packet and latency counters (srvr, mntr)

	closing   atomic.Bool
	fatalOnce sync.Once
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// NewServer validates cfg, opens the data directory and recovers the tree
// from the newest snapshot and the transaction log. It does not listen yet.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "coord")
	store, err := wal.Open(wal.Options{Dir: cfg.DataDir, LogDir: cfg.DataLogDir, NoSync: cfg.NoSync, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("coord: open data dir %q: %w", cfg.DataDir, err)
	}
	secret, err := loadSecret(cfg.DataDir)
	if err == nil {
		err = ensureAdminAuth(cfg.adminAuthPath(), log)
	}
	if err != nil {
		store.Close()
		return nil, err
	}
	t, err := recoverTree(store, log)
	if err != nil {
		store.Close()
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		log:      log,
		store:    store,
		secret:   secret,
		start:    time.Now(),
		conns:    make(map[*conn]struct{}),
		connsPer: make(map[string]int),
	}
	s.totals.latency.min.Store(-1)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.metrics = newMetrics(s)
	s.syncer = newSyncer(s)
	s.pipe = newPipeline(s, t)
	if err := s.createAdminRoots(); err != nil {
		store.Close()
		return nil, err
	}
	return s, nil
}

// recoverTree rebuilds the tree: newest valid snapshot, then every logged
// transaction after it.
func recoverTree(store *wal.Store, log *slog.Logger) (*tree.Tree, error) {
	started := time.Now()
	rec, err := store.Recover()
	if err != nil {
		return nil, fmt.Errorf("coord: recover: %w", err)
	}
	t := tree.New()
	if rec.Snapshot != nil {
		t, err = tree.Load(rec.Snapshot)
		rec.Snapshot.Close()
		if err != nil {
			return nil, fmt.Errorf("coord: load snapshot %#x: %w (move the snapshot file aside to recover from an older one)", rec.SnapshotZxid, err)
		}
	}
	for _, r := range rec.Records {
		txn, err := tree.DecodeTxn(r.Data)
		if err != nil {
			return nil, fmt.Errorf("coord: replay zxid %#x: %w", r.Zxid, err)
		}
		t.Apply(txn)
	}
	log.Info("recovered", "snapshot_zxid", fmt.Sprintf("%#x", rec.SnapshotZxid), "replayed", len(rec.Records),
		"zxid", fmt.Sprintf("%#x", t.LastZxid()), "znodes", t.NodeCount(), "sessions", len(t.Sessions()),
		"took", time.Since(started).Round(time.Millisecond))
	return t, nil
}

// secretBytes is the length of session.secret.
const secretBytes = 32

// loadSecret returns the data directory's session secret, creating it on
// first start. Passwords derived from it stay valid across restarts, which
// is what lets a client reattach to its session after the server comes back.
// A secret of the wrong length is refused, not replaced: replacing it would
// silently invalidate every session password, and a damaged file is a sign
// the directory needs an operator's look.
func loadSecret(dir string) ([]byte, error) {
	path := filepath.Join(dir, "session.secret")
	b, err := readAtMost(path, secretBytes+1) // one byte more tells a long file from a right one
	switch {
	case err == nil && len(b) == secretBytes:
		return b, nil
	case err == nil:
		return nil, fmt.Errorf("%w: %s has %d bytes, want %d: the file is damaged or not ours; restore it from a backup, "+
			"or delete it to generate a new one (clients then cannot reattach to their sessions and start new ones)",
			ErrDataDir, path, len(b), secretBytes)
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("coord: read %s: %w", path, err)
	}
	b = make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("coord: generate session secret: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return nil, fmt.Errorf("coord: write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("coord: install %s: %w", path, err)
	}
	return b, nil
}

// readAtMost reads at most max bytes of path: a file in the data directory
// that is not what it should be (replaced by something huge) cannot make the
// server read it all.
func readAtMost(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}

// Start listens on the configured addresses and starts serving.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("coord: listen on %s: %w", s.cfg.Listen, err)
	}
	s.ln = ln
	if s.cfg.AdminListen != "" {
		if err := s.startAdmin(); err != nil {
			ln.Close()
			return err
		}
	}
	s.run(s.syncer.run)
	s.run(s.pipe.run)
	s.run(s.acceptLoop)
	if s.cfg.AutopurgeInterval > 0 {
		s.run(s.purgeLoop)
	}
	s.log.Info("serving", "addr", s.Addr(), "data_dir", s.cfg.DataDir, "tick", s.cfg.TickTime,
		"admin_auth_file", s.cfg.adminAuthPath(), "four_letter_words", s.cfg.FourLetterWords)
	return nil
}

func (s *Server) run(fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
}

// Addr returns the address clients connect to (the real port when the
// configured one was 0).
func (s *Server) Addr() string {
	if s.ln == nil {
		return s.cfg.Listen
	}
	return s.ln.Addr().String()
}

// Done is closed when the server stops, whether by Close or because it
// could not continue (the disk failed).
func (s *Server) Done() <-chan struct{} { return s.ctx.Done() }

// AdminAddr returns the admin HTTP address, or "" when it is off.
func (s *Server) AdminAddr() string {
	if s.adminLn == nil {
		return ""
	}
	return s.adminLn.Addr().String()
}

// Close stops accepting, closes every connection, flushes what is pending to
// the log and closes the data directory. Sessions are not closed: as in
// ZooKeeper, they survive a server restart and expire only on timeout.
func (s *Server) Close() error {
	if !s.closing.CompareAndSwap(false, true) {
		return nil
	}
	if s.ln != nil {
		s.ln.Close()
	}
	if s.admin != nil {
		s.admin.Close()
	}
	s.connsMu.Lock()
	for c := range s.conns {
		c.close()
	}
	s.connsMu.Unlock()
	s.cancel()
	s.wg.Wait()
	return s.store.Close()
}

// fatal stops the server after an error it cannot serve through (the disk
// refused a write): acknowledging anything more could lose it.
func (s *Server) fatal(err error) {
	s.fatalOnce.Do(func() {
		s.log.Error("stopping: cannot continue safely", "err", err)
		go s.Close()
	})
}

func (s *Server) acceptLoop() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			s.log.Error("accept failed", "err", err)
			return
		}
		c, ok := s.register(nc)
		if !ok {
			continue
		}
		s.run(c.serve)
	}
}

// register admits a new connection unless its IP is over the limit.
func (s *Server) register(nc net.Conn) (*conn, bool) {
	ip := remoteIP(nc.RemoteAddr())
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if s.closing.Load() {
		nc.Close()
		return nil, false
	}
	if max := s.cfg.MaxClientConns; max > 0 && s.connsPer[ip] >= max {
		s.log.Warn("too many connections from one address; closing the new one", "ip", ip, "max_client_conns", max)
		s.metrics.connRejected.Inc()
		nc.Close()
		return nil, false
	}
	c := newConn(s, nc, ip)
	s.conns[c] = struct{}{}
	s.connsPer[ip]++
	return c, true
}

func (s *Server) unregister(c *conn) {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if _, ok := s.conns[c]; !ok {
		return
	}
	delete(s.conns, c)
	if s.connsPer[c.ip]--; s.connsPer[c.ip] <= 0 {
		delete(s.connsPer, c.ip)
	}
}

func (s *Server) snapshotConns() []*conn {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

func remoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

func (s *Server) purgeLoop() {
	t := time.NewTicker(s.cfg.AutopurgeInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if err := s.store.Purge(s.cfg.AutopurgeSnapRetainCount); err != nil {
				s.log.Warn("autopurge failed", "err", err)
			}
		}
	}
}
