package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/authflag"
	"github.com/shepherd-dev/shepherd/internal/boundedfile"
	"github.com/shepherd-dev/shepherd/internal/proc"
)

// upDefaultHTTP is where `shepherd up` serves /metrics and /health
// unless told otherwise: loopback only. The console has its own listener
// (the server section's listen).
const upDefaultHTTP = "127.0.0.1:9180"

// coordUpDefaults are the coord section's defaults (role.upDefaults).
func coordUpDefaults(dataDir string) map[string]string {
	return map[string]string{"data-dir": filepath.Join(dataDir, "coord")}
}

// upShared are the keys a role's section may not have in `shepherd up`:
// every role there shares up's one session (the bundled server, its
// admin credential, up's session-timeout) and one HTTP listener.
var upShared = []string{proc.FlagZK, proc.FlagSessionTimeout, authflag.FlagAuth, authflag.FlagAuthFile,
	authflag.FlagReadACL, authflag.FlagWriters, authflag.FlagInsecure, proc.FlagHTTPListen, "metrics-listen", "admin-listen"}

// upCommand is `shepherd up`: a whole installation in one process.
func upCommand() *cli.Command {
	// sections holds, between Before and Action, the role sections of
	// --config; nil without a config file (every role runs).
	var sections map[string]any
	return &cli.Command{
		Name:  "up",
		Usage: "run a whole installation in one process: the bundled coordination server and core, scheduler, collector, console and monitor on one session",
		Description: `Starts the bundled coordination server (shepherd coord) and, on one session
authenticated with the admin credential that server writes at its first start
(<data-dir>/coord/admin.auth), the roles its config names: core, scheduler,
collector, server (the console) and monitor. They share that session and one HTTP
listener (--http-listen: /metrics, /health). Without --config every role runs with
defaults under --data-dir (core: the cold-standby group "default"; collector: output
in <data-dir>/collector; console on 127.0.0.1:8080, whose first admin, when the
cluster has no account, gets a random password in <data-dir>/console-admin.password).

--config is a YAML file: its top-level keys are this command's flags, and a section
per role (coord, core, scheduler, collector, server, monitor, dns) holds the keys of that role's own
command's config file (shepherd core --config …), so that moving a role to a
service of its own is copying its section. A role runs when its section is present
(an empty one, "core:", takes the defaults); coord always runs. The DNS server (dns)
is off unless its section is there, with a zone ("dns: {zone: svc.example.}"). See
docs/deploy.md and docs/dns.md.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: proc.FlagConfig, Usage: "YAML file: these flags at the top, a section per role (coord, core, scheduler, collector, server, monitor, dns) with its command's flag names"},
			&cli.StringFlag{Name: "data-dir", Value: defaultUpDataDir(), Usage: "directory of everything the installation keeps: coord/ (with admin.auth), scheduler/, collector/"},
			&cli.StringFlag{Name: proc.FlagHTTPListen, Value: upDefaultHTTP, Usage: "HTTP address serving Prometheus /metrics and /health (off if empty)"},
			&cli.DurationFlag{Name: proc.FlagSessionTimeout, Value: recipe.DefaultSessionTimeout, Usage: "timeout of the roles' shared session"},
			authflag.TrustedWritersFlag(),
		},
		Before: func(c *cli.Context) error {
			path := c.String(proc.FlagConfig)
			if path == "" {
				return nil
			}
			data, err := proc.ReadInputFile(c, proc.FlagConfig, path, boundedfile.MaxConfig)
			if err != nil {
				return err
			}
			kv, err := proc.ParseConfig(path, data)
			if err != nil {
				return err
			}
			top := map[string]any{}
			sections = map[string]any{}
			for k, v := range kv {
				if slices.Contains(upRoleNames(), k) {
					sections[k] = v
				} else {
					top[k] = v
				}
			}
			return proc.ApplyConfig(c, path, top)
		},
		Action: func(c *cli.Context) error { return runUp(c, sections) },
	}
}

// upRoleNames are the sections of `shepherd up`'s config.
func upRoleNames() []string {
	names := []string{"coord"}
	for _, r := range roles() {
		names = append(names, r.name)
	}
	return names
}

// defaultUpDataDir is /var/lib/shepherd for root, else a directory of the
// user's own (XDG state).
func defaultUpDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/shepherd"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "shepherd")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "shepherd")
	}
	return "shepherd-data"
}

// section builds a role's context from its section kv (nil: defaults),
// read from source: the flags of cmd, set from kv and then from defaults.
func section(parent *cli.Context, cmd *cli.Command, source string, kv any, defaults map[string]string) (*cli.Context, error) {
	source = fmt.Sprintf("%s: section %s", source, cmd.Name)
	var m map[string]any
	switch v := kv.(type) {
	case nil:
	case map[string]any:
		m = v
	default:
		return nil, fmt.Errorf("%w: %s: want the keys of `shepherd %s`, not %T", proc.ErrConfig, source, cmd.Name, kv)
	}
	for k := range m {
		if slices.Contains(upShared, k) {
			return nil, fmt.Errorf("%w: %s: key %q: in shepherd up every role shares one session and one HTTP listener; set session-timeout and http-listen at the top level (the server and its credential are up's own)",
				proc.ErrConfig, source, k)
		}
	}
	set := flag.NewFlagSet(cmd.Name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range cmd.Flags {
		if err := f.Apply(set); err != nil {
			return nil, err
		}
	}
	if err := set.Parse(nil); err != nil {
		return nil, err
	}
	c := cli.NewContext(parent.App, set, parent)
	c.Command = cmd
	if err := proc.ApplyConfig(c, source, m); err != nil {
		return nil, err
	}
	for k, v := range defaults {
		if !c.IsSet(k) {
			if err := c.Set(k, v); err != nil {
				return nil, fmt.Errorf("%s: default %s: %w", source, k, err)
			}
		}
	}
	return c, nil
}

// runsInUp reports whether `shepherd up` runs r with the role sections
// of its config (nil without a config file): a role runs when its section
// is there, and every role but those off in up runs without a config.
func runsInUp(r role, sections map[string]any) bool {
	_, on := sections[r.name]
	return on || (sections == nil && !r.offInUp)
}

// upRole is a role `shepherd up` runs, set up from its section.
type upRole struct {
	role
	c     *cli.Context
	start starter
	run   func(context.Context) error
}

func runUp(c *cli.Context, sections map[string]any) error {
	log := slog.Default()
	dataDir := c.String("data-dir")
	source := c.String(proc.FlagConfig)
	if source == "" {
		source = "defaults"
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("up: --data-dir: %w", err)
	}
	// Every section is read and checked before anything starts.
	cs, err := section(c, coordCommand(), source, sections["coord"], coordUpDefaults(dataDir))
	if err != nil {
		return err
	}
	ccfg, err := coordConfig(cs)
	if err != nil {
		return err
	}
	var rs []*upRole
	for _, r := range roles() {
		if !runsInUp(r, sections) {
			continue
		}
		kv := sections[r.name]
		var defaults map[string]string
		if r.upDefaults != nil {
			defaults = r.upDefaults(dataDir)
		}
		sec, err := section(c, roleCommand(r), source, kv, defaults)
		if err != nil {
			return err
		}
		start, err := r.setup(sec, log.With("role", r.name))
		if err != nil {
			return fmt.Errorf("up: %s: %w", r.name, err)
		}
		rs = append(rs, &upRole{role: r, c: sec, start: start})
	}

	srv, err := coord.NewServer(ccfg)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		srv.Close()
		return err
	}
	defer srv.Close()
	ctx, stop := proc.SignalContext(c)
	defer stop()

	opts, err := authflag.Settings{AuthFile: srv.AdminAuthFile(), TrustedWriters: c.StringSlice(authflag.FlagWriters)}.Options(log, "up",
		recipe.Options{SessionTimeout: c.Duration(proc.FlagSessionTimeout), Logger: log})
	if err != nil {
		return err
	}
	s, err := proc.DialOptions(ctx, srv.Addr(), "up", opts)
	if err != nil {
		return err
	}
	defer s.Close()

	for _, r := range rs {
		if err := ensureSubtrees(ctx, s, r.subtrees(r.c), log.With("role", r.name)); err != nil {
			return fmt.Errorf("up: %s: %w", r.name, err)
		}
	}
	h := proc.NewHTTP()
	serveCoordAdmin(h, srv)
	h.AddSessionCheck("session", s)
	e := env{connect: srv.Addr(), session: s, http: h, log: log}
	for _, r := range rs {
		e.log = log.With("role", r.name)
		if r.run, err = r.start(e); err != nil {
			return fmt.Errorf("up: %s: %w", r.name, err)
		}
	}
	httpAddr := ""
	if addr := c.String(proc.FlagHTTPListen); addr != "" {
		hctx, cancel := context.WithCancel(ctx)
		defer cancel()
		bound, wait, err := h.Serve(hctx, addr, log)
		if err != nil {
			return err
		}
		defer wait()
		srv.HandleAdmin(h.Mux, bound)
		httpAddr = bound
	}
	login := ""
	for _, r := range rs {
		if r.name == "server" {
			if login, err = firstConsoleLogin(ctx, s, dataDir); err != nil {
				return err
			}
		}
	}
	printUp(c.App.Writer, srv, dataDir, httpAddr, login, rs)
	return runRoles(ctx, srv, rs, log)
}

// runRoles runs every role until ctx ends or one of them, or the
// server, stops on its own; then it stops the others and waits for them.
func runRoles(ctx context.Context, srv *coord.Server, rs []*upRole, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(rs)+1)
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			if err := r.run(ctx); err != nil {
				errs[i] = fmt.Errorf("%s: %w", r.name, err)
				log.Error("role stopped", "role", r.name, "err", err)
			}
		}()
	}
	select {
	case <-ctx.Done():
	case <-srv.Done():
		errs[len(rs)] = errors.New("coord: server stopped on its own; see the log above")
		cancel()
	}
	wg.Wait()
	log.Info("shutting down")
	return errors.Join(errs...)
}

// printUp tells the operator what runs, where, and how to log in.
func printUp(w io.Writer, srv *coord.Server, dataDir, httpAddr, consoleLogin string, rs []*upRole) {
	fmt.Fprintf(w, "shepherd up: data in %s\n", dataDir)
	fmt.Fprintf(w, "  coord       %s (ZooKeeper protocol)\n", srv.Addr())
	for _, r := range rs {
		fmt.Fprintf(w, "  %-11s %s\n", r.name, r.describe(r.c))
	}
	if httpAddr != "" {
		fmt.Fprintf(w, "  http        http://%s/metrics  http://%s/health\n", httpAddr, httpAddr)
	}
	if consoleLogin != "" {
		fmt.Fprintf(w, "Console login: %s\n", consoleLogin)
	}
	fmt.Fprintf(w, "Log in with ctl (the credential was written at the server's first start):\n")
	fmt.Fprintf(w, "  export SHEPHERD_ZK=%s SHEPHERD_AUTH_FILE=%s\n", srv.Addr(), srv.AdminAuthFile())
	fmt.Fprintf(w, "  shepherd ctl task list; shepherd ctl job list; shepherd ctl collector list\n")
}
