package ctl

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/dns"
)

// serviceCommand is `ctl service …`: the DNS registry of `shepherd dns`
// (package dns): register, heartbeat, deregister, list, block, unblock.
func (r *runner) serviceCommand() *cli.Command {
	addr := &cli.StringFlag{Name: "addr", Usage: "the provider's IP:PORT ([IPv6]:PORT) (required)"}
	return &cli.Command{
		Name:      "service",
		Usage:     "the DNS registry: register, heartbeat, deregister, list, block, unblock (docs/dns.md)",
		ArgsUsage: "verb [args…]",
		Description: `Names live under /DDNS/<app>/<domain>; shepherd dns answers them. An address is served
while registered, healthy (the scanner's verdict) and not blocked. register without --ttl
holds the registration with ctl's session until ctl is interrupted (SIGINT, SIGTERM); with
--ttl it stores it and returns, and the provider must run heartbeat at least every ttl.
Register, deregister, block and unblock are recorded in the audit log; heartbeats are not.`,
		Subcommands: []*cli.Command{
			{
				Name: "register", Usage: "register an address under a name", ArgsUsage: "--addr IP:PORT [--weight W] [--meta k=v]… [--ttl 5s] [--check tcp|http[:/path]] APP DOMAIN",
				Flags: []cli.Flag{addr,
					&cli.IntFlag{Name: "weight", Value: 1, Usage: "share under the weighted strategy, and SRV weight (1 to 65535)"},
					&cli.StringSliceFlag{Name: "meta", Usage: "key=value served as TXT (repeatable)"},
					&cli.DurationFlag{Name: "ttl", Usage: "keep the registration by heartbeats at least this often (ctl service heartbeat) instead of ctl's session"},
					&cli.StringFlag{Name: "check", Usage: "active check the scanner runs: tcp, http or http:/path"},
				},
				Action: r.serviceRegister,
			},
			{Name: "heartbeat", Usage: "say a --ttl registration is alive", ArgsUsage: "--addr IP:PORT APP DOMAIN", Flags: []cli.Flag{addr}, Action: r.serviceHeartbeat},
			{Name: "deregister", Usage: "delete a registration", ArgsUsage: "--addr IP:PORT APP DOMAIN", Flags: []cli.Flag{addr}, Action: r.serviceDeregister},
			{Name: "list", Usage: "every name with its addresses, health and blocks", Action: r.serviceList},
			{
				Name: "block", Usage: "stop serving an address, whatever its health", ArgsUsage: "--addr IP:PORT [--reason text] APP DOMAIN",
				Flags:  []cli.Flag{addr, &cli.StringFlag{Name: "reason", Usage: "why, shown by list"}},
				Action: r.serviceBlock,
			},
			{Name: "unblock", Usage: "serve a blocked address again", ArgsUsage: "--addr IP:PORT APP DOMAIN", Flags: []cli.Flag{addr}, Action: r.serviceUnblock},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("service: unknown subcommand %q: want register, heartbeat, deregister, list, block or unblock", c.Args().First())
			}
			return usagef("service: missing subcommand: want register, heartbeat, deregister, list, block or unblock")
		},
	}
}

// serviceTarget parses APP DOMAIN and --addr.
func serviceTarget(c *cli.Context) (dns.Name, netip.AddrPort, error) {
	args, err := argsN(c, 2, 2)
	if err != nil {
		return dns.Name{}, netip.AddrPort{}, err
	}
	n, err := dns.NewName(args[0], args[1])
	if err != nil {
		return n, netip.AddrPort{}, usagef("service %s: %v", c.Command.Name, err)
	}
	if c.String("addr") == "" {
		return n, netip.AddrPort{}, usagef("service %s: missing --addr IP:PORT (usage: %s)", c.Command.Name, usageLine(c))
	}
	a, err := dns.ParseAddr(c.String("addr"))
	if err != nil {
		return n, a, usagef("service %s: --addr: %v", c.Command.Name, err)
	}
	return n, a, nil
}

// serviceAuditTarget names a registration in the audit log.
func serviceAuditTarget(n dns.Name, a netip.AddrPort) string {
	return "service/" + n.String() + "/" + a.String()
}

func (r *runner) serviceRegister(c *cli.Context) error {
	n, a, err := serviceTarget(c)
	if err != nil {
		return err
	}
	meta, err := dns.ParseMeta(c.StringSlice("meta"))
	if err != nil {
		return usagef("service register: %v", err)
	}
	check, err := dns.ParseCheck(c.String("check"))
	if err != nil {
		return usagef("service register: --check: %v", err)
	}
	ttl := c.Duration("ttl")
	if c.IsSet("ttl") && ttl <= 0 {
		return usagef("service register: --ttl %v: must be positive", ttl)
	}
	reg := dns.Registration{Addr: a, Weight: c.Int("weight"), Meta: meta, TTL: ttl, Check: check}
	if reg.Weight < 1 || reg.Weight > dns.MaxWeight {
		return usagef("service register: --weight %d: want 1 to %d", reg.Weight, dns.MaxWeight)
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	reg.By = s.Identity() + " " + osUserHost()
	r.warnUnsecured(s, "shepherd dns refuses to serve it")
	ctx, cancel := r.opCtx()
	defer cancel()
	for _, st := range dns.Subtrees() {
		if _, err := s.EnsureSubtree(ctx, st); err != nil {
			return err
		}
	}
	after := map[string]any{"addr": a.String(), "weight": reg.Weight, "meta": meta, "ttl": ttl.String(), "check": c.String("check")}
	if ttl > 0 {
		err = dns.RegisterTTL(ctx, s, n, reg)
		r.record("service.register", serviceAuditTarget(n, a), nil, after, err)
		if err != nil {
			return err
		}
		if !r.json {
			_, err = fmt.Fprintf(r.env.Stdout, "registered %s in %s; heartbeat at least every %v (shepherd ctl service heartbeat)\n", a, n, ttl)
			return err
		}
		return writeJSON(r.env.Stdout, after)
	}
	m, err := dns.Register(ctx, s, n, reg)
	r.record("service.register", serviceAuditTarget(n, a), nil, after, err)
	if err != nil {
		return err
	}
	if r.json {
		if err := writeJSON(r.env.Stdout, after); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(r.env.Stdout, "registered %s in %s while this command runs; interrupt it to deregister\n", a, n)
	}
	<-r.ctx.Done()
	lctx, lcancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.timeout)
	defer lcancel()
	err = m.Leave(lctx)
	r.record("service.deregister", serviceAuditTarget(n, a), after, nil, err)
	return err
}

// onAddress runs op on the name and address the verb names, with the
// session and a context bounded by --timeout: what heartbeat,
// deregister, block and unblock share.
func (r *runner) onAddress(c *cli.Context, op func(ctx context.Context, s *recipe.Session, n dns.Name, a netip.AddrPort) error) error {
	n, a, err := serviceTarget(c)
	if err != nil {
		return err
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	return op(ctx, s, n, a)
}

func (r *runner) serviceHeartbeat(c *cli.Context) error {
	return r.onAddress(c, dns.Heartbeat)
}

func (r *runner) serviceDeregister(c *cli.Context) error {
	return r.onAddress(c, func(ctx context.Context, s *recipe.Session, n dns.Name, a netip.AddrPort) error {
		err := dns.Deregister(ctx, s, n, a)
		r.record("service.deregister", serviceAuditTarget(n, a), map[string]string{"addr": a.String()}, nil, err)
		return err
	})
}

func (r *runner) serviceBlock(c *cli.Context) error {
	return r.onAddress(c, func(ctx context.Context, s *recipe.Session, n dns.Name, a netip.AddrPort) error {
		by := s.Identity()
		if by == "" {
			by = anonymous
		}
		before, err := dns.NewAdmin(s).Block(ctx, n, a, by+" "+osUserHost(), c.String("reason"))
		r.record("service.block", serviceAuditTarget(n, a), before, map[string]string{"reason": c.String("reason")}, err)
		return err
	})
}

func (r *runner) serviceUnblock(c *cli.Context) error {
	return r.onAddress(c, func(ctx context.Context, s *recipe.Session, n dns.Name, a netip.AddrPort) error {
		before, err := dns.NewAdmin(s).Unblock(ctx, n, a)
		r.record("service.unblock", serviceAuditTarget(n, a), before, nil, err)
		return err
	})
}

func (r *runner) serviceList(c *cli.Context) error {
	if c.Args().Present() {
		return usagef("service list: takes no arguments")
	}
	snap, err := r.snapshot(cluster.Options{Sections: []cluster.Section{cluster.SectionServices}})
	if err != nil {
		return err
	}
	if r.json {
		return writeJSON(r.env.Stdout, snap.Services)
	}
	return writeServices(r.env.Stdout, snap.Services)
}

// writeServices prints one line per address, by name.
func writeServices(w io.Writer, services []dns.ServiceStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tDOMAIN\tADDRESS\tWEIGHT\tMODE\tSTATE\tDETAIL")
	for _, s := range services {
		if len(s.Addresses) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t\t\t\tno address\n", s.App, s.Domain)
		}
		for _, a := range s.Addresses {
			mode, state, detail := a.Mode, "served", metaText(a.Meta)
			if a.Mode == "heartbeat" {
				mode = "ttl " + a.TTL.String()
				if a.HeartbeatAge >= 0 {
					detail = strings.TrimSpace("heartbeat " + a.HeartbeatAge.Round(time.Millisecond).String() + " ago " + detail)
				}
			}
			switch {
			case a.Refused != "":
				state, detail = "REFUSED", a.Refused
			case a.Blocked != nil:
				state, detail = "blocked", strings.TrimSpace(a.Blocked.Reason+" by "+a.Blocked.By)
			case !a.Healthy:
				state = "unhealthy"
				if a.Unhealthy != nil {
					detail = a.Unhealthy.Reason
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", s.App, s.Domain, a.Addr, a.Weight, mode, state, detail)
		}
	}
	return tw.Flush()
}

func metaText(m map[string]string) string {
	var kv []string
	for k, v := range m {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, " ")
}
