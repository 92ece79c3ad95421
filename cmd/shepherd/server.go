package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/proc"
	"github.com/shepherd-dev/shepherd/server"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// consoleListen is where the console listens unless --listen says
// otherwise, for `shepherd server` and `shepherd up` alike.
const consoleListen = "127.0.0.1:8080"

// serverRole is `shepherd server`, the control console.
func serverRole() role {
	return role{
		name:  "server",
		usage: "control console: HTTP API and web UI for tasks, jobs and collectors",
		description: `Serves the console at --listen: the web UI at /, the JSON API at /api/v1 (OpenAPI
document at /api/v1/openapi.json), /health and /metrics. Stateless: any number may run
behind a load balancer. There is no default account: create the first admin with
"shepherd ctl --auth-file admin.auth user add --role admin --password-file F NAME".
The console needs the credential (--auth-file) that owns the cluster's nodes.
--config reads a YAML file whose keys are these flag names; flags given on the
command line win. See docs/console.md.`,
		flags: func() []cli.Flag {
			return []cli.Flag{
				&cli.StringFlag{Name: "listen", Value: consoleListen, Usage: "address of the console"},
				&cli.StringFlag{Name: "tls-cert", Usage: "certificate file: serve HTTPS (with --tls-key)"},
				&cli.StringFlag{Name: "tls-key", Usage: "private key file of --tls-cert"},
				&cli.BoolFlag{Name: "secure-cookies", Usage: "mark session cookies Secure without --tls-cert (TLS ends at a proxy in front)"},
				&cli.BoolFlag{Name: "read-only", Usage: "refuse every change, whatever the user's role"},
				&cli.StringFlag{Name: "trusted-proxy-header", Usage: "header naming the user, set by an authenticating proxy in front (e.g. X-Forwarded-User); needs --trusted-proxies"},
				&cli.StringSliceFlag{Name: "trusted-proxies", Usage: "CIDR of the proxies in front, e.g. 10.0.0.5/32; repeatable: their X-Forwarded-For names the client's address (login limits, logs, audit), and they alone may set --trusted-proxy-header"},
				&cli.StringSliceFlag{Name: "db-allow", Usage: "database hosts a task spec or a connection test may name: CIDR (10.0.0.0/8), IP or host name (matched as written, not resolved); repeatable; default any"},
				&cli.StringFlag{Name: "root", Value: core.DefaultRoot, Usage: "root of the replication nodes (below the --zk chroot)"},
				&cli.DurationFlag{Name: "session-ttl", Value: 12 * time.Hour, Usage: "how long a login lasts (logout ends it at once)"},
				&cli.IntFlag{Name: "login-failures", Value: 5, Usage: "failed logins per user name and client address per --login-window before a lockout (an address: 4x over all names)"},
				&cli.DurationFlag{Name: "login-window", Value: time.Minute, Usage: "window of --login-failures, and the first lockout's length"},
				&cli.DurationFlag{Name: "login-max-backoff", Value: time.Hour, Usage: "longest lockout: each one after the first doubles, up to this"},
				&cli.IntFlag{Name: "login-global-failures", Value: 100, Usage: "failed logins per --login-window over all users and addresses, then every login waits"},
				&cli.IntFlag{Name: "audit-keep", Value: 10000, Usage: "entries kept in each audit stream (audit, security)"},
				&cli.DurationFlag{Name: "audit-max-age", Value: 90 * 24 * time.Hour, Usage: "longest an audit entry is kept"},
				&cli.IntFlag{Name: "audit-per-actor", Usage: "entries one user (or, unauthenticated, one address) may hold of --audit-keep (default: a tenth)"},
				&cli.DurationFlag{Name: "refresh", Value: 5 * time.Second, Usage: "longest time between two reads of the cluster (watches trigger reads sooner)"},
			}
		},
		setup:           setupServer,
		subtrees:        func(*cli.Context) []recipe.Subtree { return auth.Subtrees() },
		needsCredential: "the console keeps its accounts in nodes only the cluster's credential may read",
		describe: func(c *cli.Context) string {
			scheme := "http"
			if c.String("tls-cert") != "" {
				scheme = "https"
			}
			return "console at " + scheme + "://" + c.String("listen") + "/"
		},
	}
}

func setupServer(c *cli.Context, log *slog.Logger) (starter, error) {
	var proxies []netip.Prefix
	for _, p := range c.StringSlice("trusted-proxies") {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("--trusted-proxies %q: want a CIDR such as 10.0.0.5/32: %w", p, err)
		}
		proxies = append(proxies, pfx)
	}
	if err := server.ValidateDBAllow(c.StringSlice("db-allow")); err != nil {
		return nil, err
	}
	if _, err := coordhealth.Servers(c.String(proc.FlagZK)); err != nil {
		return nil, fmt.Errorf("--%s: %w", proc.FlagZK, err)
	}
	cfg := server.Config{
		Listen: c.String("listen"), TLSCert: c.String("tls-cert"), TLSKey: c.String("tls-key"),
		SecureCookies: c.Bool("secure-cookies"), ReadOnly: c.Bool("read-only"),
		CoreRoot: c.String("root"), SessionTTL: c.Duration("session-ttl"),
		LoginFailures: c.Int("login-failures"), LoginWindow: c.Duration("login-window"),
		LoginMaxBackoff: c.Duration("login-max-backoff"), LoginGlobalFailures: c.Int("login-global-failures"),
		AuditKeep: c.Int("audit-keep"), AuditMaxAge: c.Duration("audit-max-age"), AuditPerActor: c.Int("audit-per-actor"),
		TrustedProxyHeader: c.String("trusted-proxy-header"), TrustedProxies: proxies,
		DBAllow: c.StringSlice("db-allow"),
	}
	refresh := c.Duration("refresh")
	return func(e env) (func(context.Context) error, error) {
		poller, err := newPoller(e, cfg.CoreRoot, refresh)
		if err != nil {
			return nil, err
		}
		srv, err := server.New(cfg, server.Deps{Session: e.session, Feed: poller, Logger: e.log,
			Registerer: e.http.Registry, Gatherer: e.http.Gatherer()})
		if err != nil {
			return nil, err
		}
		return withPoller(poller, srv.Run), nil
	}, nil
}
