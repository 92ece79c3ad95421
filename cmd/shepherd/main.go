// Command shepherd is Shepherd's single binary: the bundled coordination
// server and, on top of it, the replication, scheduling and collection
// processes. This package only parses flags and config files and wires
// packages together; logic lives in the packages.
package main

import (
	"errors"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/internal/exitstatus"
	"github.com/shepherd-dev/shepherd/internal/proc"
)

func main() {
	err := newApp().Run(os.Args)
	var st *proc.Stopped
	if errors.As(err, &st) {
		slog.Info("stopped before starting", "reason", err.Error())
		return
	}
	exitstatus.Print(os.Stderr, "shepherd: ", err)
	os.Exit(exitstatus.Of(err))
}

// newApp is the command line of the binary.
func newApp() *cli.App {
	app := &cli.App{
		Name:    "shepherd",
		Usage:   "coordinator for MySQL binlog replication and distributed jobs",
		Version: buildVersion(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "text or json"},
		},
		Before: setupLogging,
		Commands: []*cli.Command{
			coordCommand(),
			benchCommand(),
			ctlCommand(),
			roleCommand(coreRole()),
			roleCommand(collectorRole()),
			roleCommand(schedulerRole()),
			roleCommand(serverRole()),
			roleCommand(monitorRole()),
			roleCommand(dnsRole()),
			upCommand(),
			versionCommand(),
		},
	}
	wireUsage(app)
	return app
}
