package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/ctl"
	"github.com/shepherd-dev/shepherd/internal/proc"
)

func coordCommand() *cli.Command {
	def := coord.DefaultConfig()
	return &cli.Command{
		Name:  "coord",
		Usage: "run the bundled ZooKeeper-compatible coordination server",
		Description: `A single-node server that speaks Apache ZooKeeper 3.8's protocol, durable on disk.
Point any ZooKeeper client at it. --config reads either an Apache ZooKeeper zoo.cfg
(key=value) or a YAML file whose keys are this command's flag names; flags given on
the command line override the file.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: proc.FlagConfig, Usage: "zoo.cfg (Apache ZooKeeper format) or YAML file (.yaml, .yml) with these flag names"},
			&cli.StringFlag{Name: "listen", Value: def.Listen, Usage: "client address host:port"},
			&cli.StringFlag{Name: "data-dir", Value: def.DataDir, Usage: "directory for snapshots (and the log unless --data-log-dir)"},
			&cli.StringFlag{Name: "data-log-dir", Usage: "directory for the transaction log (put it on its own disk)"},
			&cli.DurationFlag{Name: "tick-time", Value: def.TickTime, Usage: "basic time unit; session timeouts default to 2..20 ticks"},
			&cli.DurationFlag{Name: "min-session-timeout", Usage: "smallest session timeout granted (default 2 x tick-time)"},
			&cli.DurationFlag{Name: "max-session-timeout", Usage: "largest session timeout granted (default 20 x tick-time)"},
			&cli.IntFlag{Name: "snap-count", Value: def.SnapCount, Usage: "transactions between snapshots"},
			&cli.IntFlag{Name: "max-client-conns", Value: def.MaxClientConns, Usage: "connections allowed per client IP (0: no limit)"},
			&cli.IntFlag{Name: "max-request-bytes", Value: def.MaxRequestBytes, Usage: fmt.Sprintf("largest request packet (ZooKeeper's jute.maxbuffer; at most %d)", coord.MaxRequestBytesLimit)},
			&cli.Int64Flag{Name: "max-queued-bytes", Value: def.MaxQueuedBytes, Usage: "replies one connection may owe a client that does not read; past it the connection is closed"},
			&cli.Int64Flag{Name: "max-queued-event-bytes", Value: def.MaxQueuedEventBytes, Usage: "watch events one connection may owe a client that does not read; past it the connection is closed and its session's watches dropped"},
			&cli.DurationFlag{Name: "handshake-timeout", Value: def.HandshakeTimeout, Usage: "close connections that send no connect request within this time"},
			&cli.StringFlag{Name: "admin-listen", Usage: "HTTP address for /metrics, /health and /commands/<4lw> (off if empty)"},
			&cli.BoolFlag{Name: "admin-pprof", Usage: "also serve Go's /debug/pprof/ on --admin-listen (unauthenticated; for debugging only)"},
			&cli.StringFlag{Name: "admin-auth-file", Usage: "generated admin credential file, created 0600 on first start (default <data-dir>/admin.auth)"},
			&cli.StringSliceFlag{Name: "4lw", Value: cli.NewStringSlice(def.FourLetterWords...), Usage: "enabled four-letter words (* for all; e.g. --4lw srvr,ruok,mntr for monitoring)"},
			&cli.StringFlag{Name: "super-digest", Usage: "super:<base64 sha1> digest that bypasses ACLs (see docs/coord.md)"},
			&cli.IntFlag{Name: "autopurge-snap-retain-count", Value: def.AutopurgeSnapRetainCount, Usage: "snapshots kept by autopurge (min 3)"},
			&cli.DurationFlag{Name: "autopurge-interval", Usage: "how often old snapshots and logs are purged (0: never)"},
		},
		Before: coordConfigFile,
		Action: runCoord,
	}
}

// isZooCfg tells a zoo.cfg from a YAML config file by its name.
func isZooCfg(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return path != "" && ext != ".yaml" && ext != ".yml"
}

// coordConfigFile is coord's Before: a YAML --config sets the flags, as
// for every command (internal/proc); a zoo.cfg is read by coordConfig.
func coordConfigFile(c *cli.Context) error {
	if isZooCfg(c.String(proc.FlagConfig)) {
		return nil
	}
	return proc.Config(c)
}

// coordConfig builds the server config: defaults, then a zoo.cfg, then
// the flags, given on the command line or by a YAML --config.
func coordConfig(c *cli.Context) (coord.Config, error) {
	cfg := coord.DefaultConfig()
	if path := c.String(proc.FlagConfig); isZooCfg(path) {
		var warnings []string
		err := proc.UnderSignals(c, proc.FlagConfig, path, func(ctx context.Context) (err error) {
			warnings, err = coord.LoadZooCfg(ctx, path, &cfg)
			return err
		})
		if err != nil {
			return cfg, err
		}
		for _, w := range warnings {
			slog.Warn(w)
		}
	}
	str := func(name string, dst *string) {
		if c.IsSet(name) {
			*dst = c.String(name)
		}
	}
	num := func(name string, dst *int) {
		if c.IsSet(name) {
			*dst = c.Int(name)
		}
	}
	dur := func(name string, dst *time.Duration) {
		if c.IsSet(name) {
			*dst = c.Duration(name)
		}
	}
	str("listen", &cfg.Listen)
	str("data-dir", &cfg.DataDir)
	str("data-log-dir", &cfg.DataLogDir)
	dur("tick-time", &cfg.TickTime)
	dur("min-session-timeout", &cfg.MinSessionTimeout)
	dur("max-session-timeout", &cfg.MaxSessionTimeout)
	num("snap-count", &cfg.SnapCount)
	num("max-client-conns", &cfg.MaxClientConns)
	num("max-request-bytes", &cfg.MaxRequestBytes)
	bytes := func(name string, dst *int64) {
		if c.IsSet(name) {
			*dst = c.Int64(name)
		}
	}
	bytes("max-queued-bytes", &cfg.MaxQueuedBytes)
	bytes("max-queued-event-bytes", &cfg.MaxQueuedEventBytes)
	dur("handshake-timeout", &cfg.HandshakeTimeout)
	str("admin-listen", &cfg.AdminListen)
	if c.IsSet("admin-pprof") {
		cfg.AdminPprof = c.Bool("admin-pprof")
	}
	str("admin-auth-file", &cfg.AdminAuthFile)
	str("super-digest", &cfg.SuperDigest)
	num("autopurge-snap-retain-count", &cfg.AutopurgeSnapRetainCount)
	dur("autopurge-interval", &cfg.AutopurgeInterval)
	if c.IsSet("4lw") {
		cfg.FourLetterWords = c.StringSlice("4lw")
	}
	cfg.AdminRoots = adminRoots()
	cfg.Logger = slog.Default()
	return cfg, nil
}

// adminRoots are the roots the server creates at its first start, the
// admin credential's alone: Shepherd's subtrees as `ctl secure` secures
// them, so that no client can create one first with an ACL of its own.
func adminRoots() []string {
	var paths []string
	for _, st := range ctl.Subtrees(core.DefaultRoot) {
		paths = append(paths, st.Path)
	}
	return paths
}

func runCoord(c *cli.Context) error {
	cfg, err := coordConfig(c)
	if err != nil {
		return err
	}
	// The admin endpoints are served by the process's one mux.
	adminListen := cfg.AdminListen
	cfg.AdminListen = ""
	srv, err := coord.NewServer(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		srv.Close()
		return err
	}
	ctx, stop := proc.SignalContext(c)
	defer stop()
	if adminListen != "" {
		h := proc.NewHTTP()
		serveCoordAdmin(h, srv)
		hctx, cancel := context.WithCancel(ctx)
		defer cancel()
		addr, wait, err := h.Serve(hctx, adminListen, slog.Default())
		if err != nil {
			srv.Close()
			return fmt.Errorf("coord: --admin-listen: %w", err)
		}
		defer wait()
		srv.HandleAdmin(h.Mux, addr)
	}
	select {
	case <-ctx.Done():
		slog.Info("shutting down")
	case <-srv.Done():
		return fmt.Errorf("coord: server stopped on its own; see the log above")
	}
	return srv.Close()
}

// serveCoordAdmin adds the server's metrics and health to h.
func serveCoordAdmin(h *proc.HTTP, srv *coord.Server) {
	h.AddGatherer(srv.Gatherer())
	h.AddCheck("coord", srv.Healthy)
}
