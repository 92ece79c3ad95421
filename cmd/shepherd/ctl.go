package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/ctl"
)

// ctlCommand is `shepherd ctl`. Its words are parsed by package ctl, which
// has its own verbs, flags, help and exit statuses; this only wires the
// process's streams and signals to it.
func ctlCommand() *cli.Command {
	return &cli.Command{
		Name:            "ctl",
		Usage:           "zkCli-like client: ls, get, create, watch, lock, elect, dump, load, srvr … (shepherd ctl help)",
		ArgsUsage:       "[--zk host:port[,host:port…][/chroot]] [--auth digest:user:password] [--json] command [args]",
		SkipFlagParsing: true,
		HideHelp:        true,
		Action:          runCtl,
	}
}

func runCtl(c *cli.Context) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	code := ctl.Run(c.Context, ctl.Env{
		Stdin:   os.Stdin,
		Stdout:  os.Stdout,
		Stderr:  os.Stderr,
		Signals: sigs,
		Logger:  slog.Default(),
	}, c.Args().Slice())
	if code != 0 {
		// ctl printed its own message; exit with its status, not main's 1.
		return cli.Exit("", code)
	}
	return nil
}
