package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/server/audit"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// Config is the console's configuration (flags and YAML of the same names).
type Config struct {
	// Listen is the address Run serves on, e.g. 127.0.0.1:8080.
	Listen string
	// TLSCert and TLSKey, both or neither, make Run serve HTTPS; session
	// cookies are then Secure.
	TLSCert, TLSKey string
	// CoreRoot is the replication root ("" = core.DefaultRoot).
	CoreRoot string
	// ReadOnly refuses every change, whatever the role (login and logout
	// still work): a console for a status screen or during maintenance.
	ReadOnly bool
	// SessionTTL is how long a login lasts; 0 is 12h.
	SessionTTL time.Duration
	// LoginFailures is how many failed logins one user name may take
	// from one client address per LoginWindow (a client address: four
	// times as many over all names); 0 is 5 per minute. Then the pair
	// is locked out for the window, twice as long at each lockout that
	// follows, up to LoginMaxBackoff (0: 1h).
	LoginFailures   int
	LoginWindow     time.Duration
	LoginMaxBackoff time.Duration
	// LoginGlobalFailures bounds failed logins per LoginWindow over all
	// users and addresses together; 0 is 100.
	LoginGlobalFailures int
	// AuditKeep is how many entries each audit stream keeps; 0 is 10000.
	AuditKeep int
	// AuditMaxAge is how long an audit entry is kept; 0 is 90 days.
	AuditMaxAge time.Duration
	// AuditPerActor is how many of the kept entries one actor may hold;
	// 0 is AuditKeep/10.
	AuditPerActor int
	// TrustedProxyHeader, with TrustedProxies, is the header (e.g.
	// X-Forwarded-User) through which an authenticating proxy in front
	// names the user. It is believed only from a peer address in
	// TrustedProxies, and the user must exist (its role comes from the
	// store). Empty: off. TrustedProxies also say whose X-Forwarded-For
	// names the client's address (for the login limiter, logs, audit).
	TrustedProxyHeader string
	TrustedProxies     []netip.Prefix
	// SecureCookies forces the Secure attribute without TLS here (a TLS
	// terminating proxy in front).
	SecureCookies bool
	// DBAllow lists the database hosts (CIDRs, IP addresses, host names)
	// a task spec or a dry run may name through this console; empty
	// allows any. Names are matched as written, never resolved.
	DBAllow []string
}

// checkLimits refuses a negative limit (0 is the default), naming its flag.
func (cfg Config) checkLimits() error {
	for _, l := range []struct {
		flag  string
		value int64
	}{
		{"--login-failures", int64(cfg.LoginFailures)}, {"--login-window", int64(cfg.LoginWindow)},
		{"--login-max-backoff", int64(cfg.LoginMaxBackoff)}, {"--login-global-failures", int64(cfg.LoginGlobalFailures)},
		{"--audit-keep", int64(cfg.AuditKeep)}, {"--audit-max-age", int64(cfg.AuditMaxAge)}, {"--audit-per-actor", int64(cfg.AuditPerActor)},
	} {
		if l.value < 0 {
			return fmt.Errorf("server: %s is negative: give a positive value, or 0 for the default", l.flag)
		}
	}
	return nil
}

// Validator is the dry run of a task spec (tasks:validate and the form's
// "test connection"): core.DefaultEngine's DryRun in production.
type Validator func(ctx context.Context, sp *core.Spec) (core.DryRunReport, error)

// Deps are what the console runs on.
type Deps struct {
	// Session is the coordination session, with the credential that
	// owns the console's accounts and the nodes it changes.
	Session *recipe.Session
	// Feed is the shared read model.
	Feed Feed
	// Engine opens replicators for reset-position; nil is
	// core.DefaultEngine().
	Engine core.Engine
	// Validate is the dry run; nil is core.DefaultEngine().DryRun.
	Validate Validator
	// Logger; nil is slog.Default().
	Logger *slog.Logger
	// Registerer receives the console's metrics; nil: none.
	Registerer prometheus.Registerer
	// Gatherer is served at /metrics by Run; nil: prometheus.DefaultGatherer.
	Gatherer prometheus.Gatherer
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// BcryptCost of passwords set through the console (tests lower it).
	BcryptCost int
	// ComparePassword checks a login's password against its bcrypt hash;
	// nil is bcrypt.CompareHashAndPassword (tests count the checks).
	ComparePassword func(hash, password []byte) error
}

// Server is one console.
type Server struct {
	cfg     Config
	deps    Deps
	log     *slog.Logger
	users   *auth.Store
	audit   *audit.Log
	tasks   *core.Admin
	limiter *limiter
	pages   *pages
	mux     *http.ServeMux
	handler http.Handler
	metrics *metrics
	events  eventCache
	alerts  alertCache
	rates   lineRates
	// patterns are the routes installed, for the OpenAPI test.
	patterns []string
	security *audit.Log // the security stream: refusals, failed logins
	streams  *streamQuota
	dbAllow  dbAllow
}

// New builds a console. It reads nothing yet: the session key is
// created or read at the first login.
func New(cfg Config, deps Deps) (*Server, error) {
	if deps.Session == nil || deps.Feed == nil {
		return nil, errors.New("server: Deps.Session and Deps.Feed are required")
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, fmt.Errorf("server: --tls-cert and --tls-key go together (got cert %q, key %q)", cfg.TLSCert, cfg.TLSKey)
	}
	if cfg.TrustedProxyHeader != "" && len(cfg.TrustedProxies) == 0 {
		return nil, fmt.Errorf("server: --trusted-proxy-header %s needs --trusted-proxies (the addresses of the proxies allowed to set it)", cfg.TrustedProxyHeader)
	}
	if err := cfg.checkLimits(); err != nil {
		return nil, err
	}
	allow, err := parseDBAllow(cfg.DBAllow)
	if err != nil {
		return nil, err
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.LoginFailures == 0 {
		cfg.LoginFailures = 5
	}
	if cfg.LoginWindow == 0 {
		cfg.LoginWindow = time.Minute
	}
	if cfg.LoginMaxBackoff == 0 {
		cfg.LoginMaxBackoff = time.Hour
	}
	if cfg.LoginGlobalFailures == 0 {
		cfg.LoginGlobalFailures = 100
	}
	if deps.Engine == nil || deps.Validate == nil {
		e := core.DefaultEngine()
		if deps.Engine == nil {
			deps.Engine = e
		}
		if deps.Validate == nil {
			deps.Validate = e.DryRun
		}
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	s := &Server{
		cfg:     cfg,
		deps:    deps,
		log:     deps.Logger.With("component", "server"),
		users:   auth.NewStore(deps.Session, auth.Options{BcryptCost: deps.BcryptCost, Now: deps.Now, Compare: deps.ComparePassword}),
		tasks:   core.NewAdmin(deps.Session, cfg.CoreRoot),
		limiter: newLimiter(loginLimits(cfg), deps.Now),
		metrics: newMetrics(deps.Registerer),
		streams: newStreamQuota(maxStreams, maxUserStreams),
		dbAllow: allow,
	}
	retention := audit.Options{Keep: cfg.AuditKeep, MaxAge: cfg.AuditMaxAge, PerActor: cfg.AuditPerActor, Now: deps.Now, Logger: s.log}
	s.audit = audit.New(deps.Session, auditDir(streamAudit), retention)
	s.security = audit.New(deps.Session, auditDir(streamSecurity), retention)
	if s.pages, err = newPages(&s.rates); err != nil {
		return nil, err
	}
	s.mux = http.NewServeMux()
	s.routes()
	// Every unsafe method is refused when the browser says it comes from
	// another origin (Sec-Fetch-Site, or Origin against Host): with the
	// SameSite=Strict cookie, the console's defence against CSRF. Clients
	// that are not browsers send neither header and are let through: they
	// authenticate with a token, which a page cannot make them send.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.securityEvent(r, principal{}, "cross_origin", "Origin "+strconv.Quote(r.Header.Get("Origin"))+", Sec-Fetch-Site "+strconv.Quote(r.Header.Get("Sec-Fetch-Site")))
		writeError(w, r, &apiError{Status: http.StatusForbidden, Code: "cross_origin", Message: "cross-origin request refused: use the console's own pages or a client without browser origin headers"})
	}))
	s.handler = s.securityHeaders(cop.Handler(requireJSONBodies(s.mux)))
	return s, nil
}

// Track follows the feed until ctx ends, for what the pages measure
// between snapshots (the collectors' line rates). Serve runs it; a caller
// that only installs the Handler in its own mux runs it too.
func (s *Server) Track(ctx context.Context) { s.track(ctx) }

// Handler is the console: API, UI, /health.
func (s *Server) Handler() http.Handler { return s.handler }

// Register installs the console at / of mux; a process's own /metrics
// (and any more specific pattern) keeps precedence.
func (s *Server) Register(mux *http.ServeMux) { mux.Handle("/", s.handler) }

// Run serves the console, with /metrics, on cfg.Listen until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("server: listen %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener of the caller's.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	g := s.deps.Gatherer
	if g == nil {
		g = prometheus.DefaultGatherer
	}
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	tctx, stopTrack := context.WithCancel(ctx)
	tracked := make(chan struct{})
	go func() {
		defer close(tracked)
		s.Track(tctx)
	}()
	defer func() {
		stopTrack()
		<-tracked
	}()
	s.Register(mux)
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() {
		if s.cfg.TLSCert != "" {
			errc <- hs.ServeTLS(ln, s.cfg.TLSCert, s.cfg.TLSKey)
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	s.log.Info("console serving", "addr", ln.Addr().String(), "tls", s.cfg.TLSCert != "", "read_only", s.cfg.ReadOnly)
	select {
	case err := <-errc:
		return fmt.Errorf("server: serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Event streams never end by themselves: Shutdown waits for them
	// until its deadline, then Close cuts them.
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	<-errc
	return nil
}

// securityHeaders adds the headers every answer carries: no framing, no
// sniffing, scripts and styles from the console alone, no referrer; and
// under TLS, HSTS, so that a browser that has seen the console once never
// sends its cookie over plain HTTP to someone on the path.
func (s *Server) securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		if s.secure(r) {
			hd.Set("Strict-Transport-Security", "max-age=31536000")
		}
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}
