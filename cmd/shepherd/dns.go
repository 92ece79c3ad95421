package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/dns"
)

// dnsRole is `shepherd dns`: a DNS server answering the names of the
// registry under /DDNS, and a candidate for its scanner.
func dnsRole() role {
	return role{
		name:  "dns",
		usage: "answer DNS queries (A, AAAA, SRV, TXT) for the names registered under /DDNS; contend to be their health scanner",
		description: `Serves --zone on --listen (UDP and TCP) from a watched cache of /DDNS/<app>/<domain>:
the healthy, unblocked addresses registered with "shepherd ctl service register" (or the
dns package). A change is served one watch round trip after it is made; while the
coordination server is unreachable the cached names are still served (stale, in the
log and shepherd_dns_cache_stale); before the first read every answer is SERVFAIL.
With --scan (the default) it also contends to be the scanner, which marks an address
unhealthy after --ttl without a heartbeat or after failed checks, and healthy again.
--config reads a YAML file whose keys are these flag names. See docs/dns.md.`,
		flags: func() []cli.Flag {
			return []cli.Flag{
				&cli.StringFlag{Name: "listen", Value: dns.DefaultListen, Usage: "UDP and TCP address of the DNS server"},
				&cli.StringFlag{Name: "zone", Usage: "the zone answered for, e.g. svc.example. (required); names outside it are REFUSED"},
				&cli.StringFlag{Name: "strategy", Value: string(dns.All), Usage: "A/AAAA answers: all (every address, shuffled), weighted (one, by weight) or one (one, round robin)"},
				&cli.DurationFlag{Name: "ttl", Value: dns.DefaultTTL, Usage: "TTL of every record and of negative answers (1s to 1h)"},
				&cli.DurationFlag{Name: "resync", Value: dns.DefaultResync, Usage: "how often every registration is read again even without a change"},
				&cli.BoolFlag{Name: "scan", Value: true, Usage: "contend in the election of the scanner"},
				&cli.DurationFlag{Name: "scan-interval", Value: dns.DefaultScanInterval, Usage: "time between the scanner's rounds"},
				&cli.DurationFlag{Name: "check-timeout", Value: dns.DefaultCheckTimeout, Usage: "bound on one active (tcp, http) check"},
				&cli.IntFlag{Name: "fail-after", Value: dns.DefaultFailAfter, Usage: "failed checks in a row that make an address unhealthy"},
			}
		},
		setup:    setupDNS,
		subtrees: func(*cli.Context) []recipe.Subtree { return dns.Subtrees() },
		offInUp:  true,
		describe: func(c *cli.Context) string {
			what := "zone " + c.String("zone") + " on " + c.String("listen") + " (udp, tcp)"
			if c.Bool("scan") {
				what += ", scanner candidate"
			}
			return what
		},
	}
}

func setupDNS(c *cli.Context, log *slog.Logger) (starter, error) {
	strategy, err := dns.ParseStrategy(c.String("strategy"))
	if err != nil {
		return nil, fmt.Errorf("--strategy: %w", err)
	}
	if c.String("zone") == "" {
		return nil, errors.New("--zone: required (the zone answered for, e.g. svc.example.)")
	}
	if ttl := c.Duration("ttl"); ttl < time.Second || ttl > time.Hour {
		return nil, fmt.Errorf("--ttl %v: want 1s to 1h", ttl)
	}
	if c.Int("fail-after") < 1 {
		return nil, fmt.Errorf("--fail-after %d: must be at least 1", c.Int("fail-after"))
	}
	opts := dns.ServerOptions{Listen: c.String("listen"), Zone: c.String("zone"), Strategy: strategy, TTL: c.Duration("ttl"),
		Resync: c.Duration("resync"), Logger: log}
	scan := dns.ScannerOptions{Interval: c.Duration("scan-interval"), CheckTimeout: c.Duration("check-timeout"), FailAfter: c.Int("fail-after"), Logger: log}
	return func(e env) (func(context.Context) error, error) {
		opts.Registerer = e.http.Registry
		sv, err := dns.NewServer(e.session, opts)
		if err != nil {
			return nil, err
		}
		var sc *dns.Scanner
		if c.Bool("scan") {
			scan.Registerer = e.http.Registry
			if sc, err = dns.NewScanner(e.session, scan); err != nil {
				return nil, err
			}
		}
		if err := sv.Start(); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			defer sv.Close()
			var wg sync.WaitGroup
			var scanErr error
			if sc != nil {
				wg.Go(func() { scanErr = sc.Run(ctx) })
			}
			err := sv.Run(ctx)
			wg.Wait()
			return errors.Join(err, scanErr)
		}, nil
	}, nil
}
