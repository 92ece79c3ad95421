package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/authflag"
	"github.com/shepherd-dev/shepherd/server"
)

// serverCommand is `shepherd server`, the control console.
func serverCommand() *cli.Command {
	return &cli.Command{
		Name:  "server",
		Usage: "control console: HTTP API and web UI for tasks, jobs and collectors",
		Description: `Serves the console at --listen: the web UI at /, the JSON API at /api/v1 (OpenAPI
document at /api/v1/openapi.json), /health and /metrics. Stateless: any number may run
behind a load balancer. There is no default account: create the first admin with
"shepherd ctl --auth-file admin.auth user add --role admin --password-file F NAME".
The console needs the credential (--auth-file) that owns the cluster's nodes.
See docs/console.md.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "YAML file with these flag names as keys (lists as comma-separated strings); flags win over it"},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "address of the console"},
			&cli.StringFlag{Name: "zk", Value: "127.0.0.1:2181", EnvVars: []string{"SHEPHERD_ZK"},
				Usage: "coordination servers and optional chroot: host:port[,host:port…][/chroot]"},
			&cli.StringFlag{Name: "tls-cert", Usage: "certificate file: serve HTTPS (with --tls-key)"},
			&cli.StringFlag{Name: "tls-key", Usage: "private key file of --tls-cert"},
			&cli.BoolFlag{Name: "secure-cookies", Usage: "mark session cookies Secure without --tls-cert (TLS ends at a proxy in front)"},
			&cli.BoolFlag{Name: "read-only", Usage: "refuse every change, whatever the user's role"},
			&cli.StringFlag{Name: "trusted-proxy-header", Usage: "header naming the user, set by an authenticating proxy in front (e.g. X-Forwarded-User); needs --trusted-proxies"},
			&cli.StringSliceFlag{Name: "trusted-proxies", Usage: "CIDR of the proxies allowed to set --trusted-proxy-header, e.g. 10.0.0.5/32; repeatable"},
			&cli.StringFlag{Name: "root", Value: core.DefaultRoot, Usage: "root of the replication nodes (below the --zk chroot)"},
			&cli.DurationFlag{Name: "session-ttl", Value: 12 * time.Hour, Usage: "how long a login lasts"},
			&cli.DurationFlag{Name: "refresh", Value: 5 * time.Second, Usage: "longest time between two reads of the cluster (watches trigger reads sooner)"},
			&cli.DurationFlag{Name: "session-timeout", Value: recipe.DefaultSessionTimeout, Usage: "coordination session timeout"},
		}, authflag.Flags()...),
		Action: runServer,
	}
}

func runServer(c *cli.Context) error {
	if err := applyYAMLConfig(c); err != nil {
		return err
	}
	var proxies []netip.Prefix
	for _, p := range c.StringSlice("trusted-proxies") {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			return fmt.Errorf("--trusted-proxies %q: want a CIDR such as 10.0.0.5/32: %w", p, err)
		}
		proxies = append(proxies, pfx)
	}
	ctx, stop := signalContext(c)
	defer stop()
	servers, err := coordhealth.Servers(c.String("zk"))
	if err != nil {
		return fmt.Errorf("--zk: %w", err)
	}
	opts, err := authflag.FromContext(c).Options(slog.Default(), "server",
		recipe.Options{SessionTimeout: c.Duration("session-timeout"), Logger: slog.Default()})
	if err != nil {
		return err
	}
	if opts.Auth == "" && !opts.InsecureOpenACL {
		return fmt.Errorf("the console keeps its accounts in nodes only the cluster's credential may read: pass --auth-file (shepherd coord writes <data-dir>/admin.auth; docs/console.md)")
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := recipe.Dial(dctx, c.String("zk"), opts)
	if errors.Is(err, recipe.ErrBadConnectString) {
		return fmt.Errorf("--zk: %w", err)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	poller := cluster.NewPoller(cluster.NewReader(s, cluster.Options{CoreRoot: c.String("root"), CoordServers: servers}), c.Duration("refresh"), slog.Default())
	reg := prometheus.NewRegistry()
	srv, err := server.New(server.Config{
		Listen: c.String("listen"), TLSCert: c.String("tls-cert"), TLSKey: c.String("tls-key"),
		SecureCookies: c.Bool("secure-cookies"), ReadOnly: c.Bool("read-only"),
		CoreRoot: c.String("root"), SessionTTL: c.Duration("session-ttl"),
		TrustedProxyHeader: c.String("trusted-proxy-header"), TrustedProxies: proxies,
	}, server.Deps{Session: s, Feed: poller, Logger: slog.Default(), Registerer: reg, Gatherer: reg})
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = poller.Run(ctx) // until ctx ends
	}()
	err = srv.Run(ctx)
	stop()
	<-done
	return err
}
