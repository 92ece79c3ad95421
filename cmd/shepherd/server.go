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
				&cli.StringSliceFlag{Name: "trusted-proxies", Usage: "CIDR of the proxies allowed to set --trusted-proxy-header, e.g. 10.0.0.5/32; repeatable"},
				&cli.StringFlag{Name: "root", Value: core.DefaultRoot, Usage: "root of the replication nodes (below the --zk chroot)"},
				&cli.DurationFlag{Name: "session-ttl", Value: 12 * time.Hour, Usage: "how long a login lasts"},
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
	if _, err := coordhealth.Servers(c.String(proc.FlagZK)); err != nil {
		return nil, fmt.Errorf("--%s: %w", proc.FlagZK, err)
	}
	cfg := server.Config{
		Listen: c.String("listen"), TLSCert: c.String("tls-cert"), TLSKey: c.String("tls-key"),
		SecureCookies: c.Bool("secure-cookies"), ReadOnly: c.Bool("read-only"),
		CoreRoot: c.String("root"), SessionTTL: c.Duration("session-ttl"),
		TrustedProxyHeader: c.String("trusted-proxy-header"), TrustedProxies: proxies,
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
