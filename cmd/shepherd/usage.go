package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/internal/exitstatus"
)

// wireUsage makes every mistake in a command line of app a usage error
// (internal/exitstatus): an unknown flag, an unknown command, or an
// argument to a command that takes none is one line on stderr, a hint
// naming the command's help and exit status 2, with no help text on
// stdout. urfave/cli's own way prints the whole help to stdout and exits
// 1 (a bad flag) or 3 (an unknown command) — and its help command is
// replaced with one that fails the same way on an unknown name.
func wireUsage(app *cli.App) {
	app.HideHelpCommand = true
	// urfave/cli adds --help to the binary only along with its own help
	// command.
	app.Flags = append(app.Flags, cli.HelpFlag)
	// main decides the exit status (exitstatus.Of); urfave/cli's default
	// handler would exit from inside Run.
	app.ExitErrHandler = func(*cli.Context, error) {}
	app.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return exitstatus.FlagError(app.Name, "", app.Flags, err)
	}
	app.Action = func(c *cli.Context) error {
		if c.Args().Present() {
			return exitstatus.UnknownCommand(app.Name, "", c.Args().First(), app.Commands)
		}
		return cli.ShowAppHelp(c)
	}
	app.Commands = append(app.Commands, &cli.Command{
		Name:      "help",
		Usage:     "show the commands, or one command's help",
		ArgsUsage: "[command]",
		Action: func(c *cli.Context) error {
			switch {
			case c.NArg() == 0:
				return cli.ShowAppHelp(c)
			case c.NArg() > 1:
				return &exitstatus.UsageError{Msg: "help: want at most one command", Command: app.Name}
			case app.Command(c.Args().First()) == nil:
				return exitstatus.UnknownCommand(app.Name, "help", c.Args().First(), app.Commands)
			}
			// Shown from the binary's context: help's own lists no commands.
			return cli.ShowCommandHelp(c.Lineage()[1], c.Args().First())
		},
	})
	for _, cmd := range app.Commands {
		wireCommandUsage(cmd, app.Name)
	}
}

// wireCommandUsage gives cmd, and every command below it, usage errors
// naming it; parent is the words before its name ("shepherd").
func wireCommandUsage(cmd *cli.Command, parent string) {
	path := parent + " " + cmd.Name
	what := path[len("shepherd "):]
	if cmd.OnUsageError == nil {
		cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return exitstatus.FlagError(path, what, cmd.Flags, err)
		}
	}
	switch {
	case cmd.SkipFlagParsing:
		// ctl parses its own words and reports its own usage errors.
	case len(cmd.Subcommands) > 0 && cmd.Action == nil:
		cmd.Action = func(c *cli.Context) error {
			if c.Args().Present() {
				return exitstatus.UnknownCommand(path, what, c.Args().First(), cmd.Subcommands)
			}
			return exitstatus.Usagef("%s: missing command", what)
		}
	case cmd.ArgsUsage == "" && len(cmd.Subcommands) == 0:
		before := cmd.Before
		cmd.Before = func(c *cli.Context) error {
			if c.Args().Present() {
				return &exitstatus.UsageError{Msg: fmt.Sprintf("%s: unexpected argument %q: it takes flags only", what, c.Args().First()), Command: path}
			}
			if before != nil {
				return before(c)
			}
			return nil
		}
	}
	if act := cmd.Action; act != nil {
		cmd.Action = func(c *cli.Context) error { return exitstatus.WithCommand(act(c), path) }
	}
	for _, sub := range cmd.Subcommands {
		wireCommandUsage(sub, path)
	}
}
