package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	mdns "github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Defaults of ServerOptions.
const (
	DefaultListen = "127.0.0.1:5353"
	DefaultTTL    = 5 * time.Second
)

// ServerOptions configures a Server.
type ServerOptions struct {
	// Listen is the UDP and TCP address; DefaultListen when empty.
	Listen string
	// Zone is the zone answered for (e.g. "svc.example."); names outside
	// it are REFUSED, registered names outside it not served.
	Zone     string
	Strategy Strategy      // default All
	TTL      time.Duration // of every record; default DefaultTTL
	Logger   *slog.Logger
	// Registerer, if set, gets the server's metrics (shepherd_dns_*).
	Registerer prometheus.Registerer
	// Resync: see CacheOptions.
	Resync time.Duration
	// MaxTCPConns bounds the TCP connections served at once; more wait
	// in the kernel's backlog, costing the server nothing. Zero:
	// DefaultMaxTCPConns.
	MaxTCPConns int
}

// DefaultMaxTCPConns is ServerOptions.MaxTCPConns's default: a client
// that opens connections and never closes them holds at most this many
// goroutines, each for at most the idle timeout.
const DefaultMaxTCPConns = 256

// tcpIdleTimeout is how long an idle TCP connection is kept.
const tcpIdleTimeout = 8 * time.Second

// Server is `shepherd dns`: a DNS server on UDP and TCP answering from a
// watched Cache of the registry.
type Server struct {
	opts    ServerOptions
	tcpIdle time.Duration // how long an idle TCP connection is kept: tcpIdleTimeout
	log     *slog.Logger
	cache   *Cache
	an      *Answerer
	metrics *serverMetrics

	mu       sync.Mutex
	udp, tcp *mdns.Server
	addr     string
	serving  sync.WaitGroup
}

// NewServer checks opts and returns a Server over s; Start listens.
func NewServer(s *recipe.Session, opts ServerOptions) (*Server, error) {
	if opts.Listen == "" {
		opts.Listen = DefaultListen
	}
	if opts.Zone == "" {
		return nil, errors.New("dns: --zone: required (the zone answered for, e.g. svc.example.)")
	}
	if _, ok := mdns.IsDomainName(opts.Zone); !ok {
		return nil, fmt.Errorf("dns: --zone %q: not a domain name", opts.Zone)
	}
	opts.Zone = mdns.CanonicalName(opts.Zone)
	if opts.Strategy == "" {
		opts.Strategy = All
	}
	if _, err := ParseStrategy(string(opts.Strategy)); err != nil {
		return nil, err
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultTTL
	}
	if opts.TTL < 0 || opts.TTL > time.Hour {
		return nil, fmt.Errorf("dns: --ttl %v: want 0s to 1h", opts.TTL)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	log := opts.Logger.With("zone", opts.Zone)
	c := NewCache(s, CacheOptions{Zone: opts.Zone, Logger: log, Resync: opts.Resync})
	m, err := newServerMetrics(opts.Registerer, c)
	if err != nil {
		return nil, fmt.Errorf("dns: register metrics: %w", err)
	}
	return &Server{opts: opts, tcpIdle: tcpIdleTimeout, log: log, cache: c, an: &Answerer{Strategy: opts.Strategy, TTL: opts.TTL}, metrics: m}, nil
}

// Cache is the server's cache.
func (sv *Server) Cache() *Cache { return sv.cache }

// Start listens on UDP and TCP, on the same port (with port 0: one the
// system picks for both), and serves. The cache fills once Run runs;
// until then every answer is SERVFAIL.
func (sv *Server) Start() error {
	var pc net.PacketConn
	var l net.Listener
	var err error
	for range 20 {
		l, err = net.Listen("tcp", sv.opts.Listen)
		if err != nil {
			return fmt.Errorf("dns: listen on tcp %s: %w", sv.opts.Listen, err)
		}
		pc, err = net.ListenPacket("udp", l.Addr().String())
		if err == nil {
			break
		}
		l.Close()
		if _, port, _ := net.SplitHostPort(sv.opts.Listen); port != "0" {
			return fmt.Errorf("dns: listen on udp %s: %w", sv.opts.Listen, err)
		}
	}
	if err != nil {
		return fmt.Errorf("dns: listen on udp %s: %w", sv.opts.Listen, err)
	}
	h := mdns.HandlerFunc(sv.serveDNS)
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sv.addr = l.Addr().String()
	sv.udp = &mdns.Server{PacketConn: pc, Handler: h, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second}
	maxConns := sv.opts.MaxTCPConns
	if maxConns <= 0 {
		maxConns = DefaultMaxTCPConns
	}
	sv.tcp = &mdns.Server{Listener: netutil.LimitListener(l, maxConns), Handler: h, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, IdleTimeout: func() time.Duration { return sv.tcpIdle }, MaxTCPQueries: 128}
	for _, srv := range []*mdns.Server{sv.udp, sv.tcp} {
		sv.serving.Go(func() {
			if err := srv.ActivateAndServe(); err != nil {
				sv.log.Error("DNS listener stopped", "addr", sv.addr, "err", err)
			}
		})
	}
	sv.log.Info("DNS server listening", "addr", sv.addr, "strategy", sv.opts.Strategy, "ttl", sv.opts.TTL)
	return nil
}

// Addr is the address Start listens on.
func (sv *Server) Addr() string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.addr
}

// Run keeps the cache until ctx ends; the listeners stop at Close.
func (sv *Server) Run(ctx context.Context) error { return sv.cache.Run(ctx) }

// Close stops the listeners and waits for them.
func (sv *Server) Close() error {
	sv.mu.Lock()
	udp, tcp := sv.udp, sv.tcp
	sv.udp, sv.tcp = nil, nil
	sv.mu.Unlock()
	var errs []error
	for _, srv := range []*mdns.Server{udp, tcp} {
		if srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, srv.ShutdownContext(ctx))
			cancel()
		}
	}
	sv.serving.Wait()
	return errors.Join(errs...)
}

// serveDNS answers one query from the current table.
func (sv *Server) serveDNS(w mdns.ResponseWriter, r *mdns.Msg) {
	m := new(mdns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	m.RecursionAvailable = false
	qtype := "other"
	switch {
	case r.Opcode != mdns.OpcodeQuery:
		m.Rcode = mdns.RcodeNotImplemented
	case len(r.Question) != 1:
		m.Rcode = mdns.RcodeFormatError
	default:
		q := r.Question[0]
		if s, ok := mdns.TypeToString[q.Qtype]; ok {
			switch q.Qtype {
			case mdns.TypeA, mdns.TypeAAAA, mdns.TypeSRV, mdns.TypeTXT, mdns.TypeSOA, mdns.TypeANY, mdns.TypeNS:
				qtype = s
			}
		}
		t := sv.cache.Table()
		m.Rcode, m.Answer, m.Extra, m.Ns = sv.an.Answer(t, q)
		if t.Loaded() && sv.cache.Stale() {
			sv.metrics.stale.Inc()
		}
	}
	size := mdns.MinMsgSize
	if o := r.IsEdns0(); o != nil {
		size = int(o.UDPSize())
		m.SetEdns0(o.UDPSize(), false)
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		m.Truncate(size)
	}
	sv.metrics.queries.WithLabelValues(qtype, mdns.RcodeToString[m.Rcode]).Inc()
	if err := w.WriteMsg(m); err != nil {
		sv.log.Debug("DNS reply not sent", "err", err)
	}
}
