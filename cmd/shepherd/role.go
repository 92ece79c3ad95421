package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/proc"
)

// A role is a part of Shepherd that works through a session: core,
// scheduler, collector, the console (server) and the monitor. Each is
// its own command (`shepherd core`) and a section of `shepherd up`'s
// config, with the same keys: the role's flags.
type role struct {
	name        string
	usage       string
	description string
	// flags are the role's own flags, without those of the session and
	// the HTTP listener that every role shares.
	flags func() []cli.Flag
	// setup reads and checks the role's flags and the files they name,
	// before anything connects, and returns how to start the role.
	setup func(c *cli.Context, log *slog.Logger) (starter, error)
	// describe says, in one line for `shepherd up`'s banner, what the
	// role configured by c does and where.
	describe func(c *cli.Context) string
	// needsCredential, when set, is why the role's command refuses to
	// dial without a credential (the console keeps accounts only the
	// cluster's credential may read). In `shepherd up` the session always
	// has the server's.
	needsCredential string
	// subtrees are the roots of the nodes the role configured by c acts
	// on: created with the policy ACL when missing, and the role refuses
	// to start on one nobody trusted wrote (ensureSubtrees).
	subtrees func(c *cli.Context) []recipe.Subtree
	// upDefaults are the flags `shepherd up` sets, below its data
	// directory, when the role's section leaves them out, so that
	// `shepherd up` alone is a working installation.
	upDefaults func(dataDir string) map[string]string
	// offInUp: `shepherd up` runs the role only when its config has the
	// role's section (the DNS server binds a port and needs a zone).
	offInUp bool
}

// starter builds the role on a process's session and HTTP mux and
// returns its run, which works until ctx ends.
type starter func(e env) (run func(ctx context.Context) error, err error)

// env is what the roles of a process share.
type env struct {
	// connect is the connect string the session dialed.
	connect string
	session *recipe.Session
	http    *proc.HTTP
	log     *slog.Logger
}

// roles are the session roles, in the order `shepherd up` starts them.
// A new role (the console, the monitor) is a role value and its entry
// here: its own command and its section of `shepherd up` follow.
func roles() []role {
	return []role{coreRole(), schedulerRole(), collectorRole(), serverRole(), monitorRole(), dnsRole()}
}

// roleFlags are every flag of r's own command.
func roleFlags(r role) []cli.Flag {
	flags := append([]cli.Flag{proc.ConfigFlag()}, r.flags()...)
	flags = append(flags, proc.SessionFlags()...)
	return append(flags, proc.HTTPFlag())
}

// roleCommand is r as a command of its own: one process, one session, one
// HTTP listener.
func roleCommand(r role) *cli.Command {
	return &cli.Command{
		Name:        r.name,
		Usage:       r.usage,
		Description: r.description,
		Flags:       roleFlags(r),
		Before:      proc.Config,
		Action: func(c *cli.Context) error {
			log := slog.Default()
			start, err := r.setup(c, log)
			if err != nil {
				return err
			}
			opts, err := proc.SessionOptions(c, r.name, log)
			if err != nil {
				return err
			}
			if r.needsCredential != "" && opts.Auth == "" && !opts.InsecureOpenACL {
				return fmt.Errorf("%s: pass --auth-file (shepherd coord writes <data-dir>/admin.auth; docs/security.md)", r.needsCredential)
			}
			ctx, stop := proc.SignalContext(c)
			defer stop()
			s, err := proc.DialOptions(ctx, c.String(proc.FlagZK), r.name, opts)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := ensureSubtrees(ctx, s, r.subtrees(c), log); err != nil {
				if ctx.Err() != nil {
					return nil // stopped while starting: a clean stop, as once running
				}
				return fmt.Errorf("%s: %w", r.name, err)
			}
			h := proc.NewHTTP()
			h.AddSessionCheck("session", s)
			run, err := start(env{connect: c.String(proc.FlagZK), session: s, http: h, log: log})
			if err != nil {
				if ctx.Err() != nil {
					return nil // stopped while starting
				}
				return err
			}
			if addr := c.String(proc.FlagHTTPListen); addr != "" {
				_, wait, err := h.Serve(ctx, addr, log)
				if err != nil {
					return err
				}
				defer wait()
			}
			began := time.Now()
			err = run(ctx)
			log.Info(r.name+" stopped", "ran", time.Since(began).Round(time.Second))
			return err
		},
	}
}

// ensureSubtrees makes sure each root in sts exists, created with the
// policy ACL when missing so that no other client can create it first,
// and was written by a trusted identity (recipe.Session.EnsureSubtree):
// on a root an anonymous session created first nothing below could ever
// be trusted, so the role refuses to start, with the fix in the error.
// Without a credential it does nothing: the open cluster, which
// authflag.Warn reports.
func ensureSubtrees(ctx context.Context, s *recipe.Session, sts []recipe.Subtree, log *slog.Logger) error {
	for _, st := range sts {
		created, err := s.EnsureSubtree(ctx, st)
		if err != nil {
			return err
		}
		if created {
			log.Info("created a subtree root with the policy ACL", "path", st.Path, "acl_of", s.Identity())
		}
	}
	return nil
}
