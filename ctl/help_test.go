package ctl

import (
	"context"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestHelpOfEveryCommand walks the whole command tree: `<command>
// --help` and `help <command>` exit 0, print every flag of the command,
// and state each flag's default at most once (issue 10: job add --help
// printed "(default 10s) (default: 0s)", collector list --help exited 2).
// No server is needed: help never connects.
func TestHelpOfEveryCommand(t *testing.T) {
	const nowhere = "127.0.0.1:1"
	app := newRunner(context.Background(), Env{}).app()
	var paths [][]string
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(append([]string{}, prefix...), c.Name)
			paths = append(paths, p)
			walk(p, c.Subcommands)
		}
	}
	walk(nil, app.Commands)
	if len(paths) < 40 {
		t.Fatalf("walked %d commands; the tree has more", len(paths))
	}
	flagsOf := func(path []string) []cli.Flag {
		cmds, flags := app.Commands, app.Flags
		for _, w := range path {
			for _, c := range cmds {
				if c.Name == w {
					cmds, flags = c.Subcommands, c.Flags
					break
				}
			}
		}
		return flags
	}
	check := func(t *testing.T, path []string, args ...string) {
		t.Helper()
		r := runCtl(t, nowhere, args...)
		if r.code != 0 {
			t.Errorf("ctl %s: %v", strings.Join(args, " "), r)
			return
		}
		name := "shepherd ctl " + strings.Join(path, " ")
		if path[0] == "help" {
			name = "help, h" // help --help is the list of commands, help among them
		}
		if !strings.Contains(r.stdout, name) {
			t.Errorf("ctl %s does not name %q:\n%s", strings.Join(args, " "), name, r.stdout)
		}
		for _, f := range flagsOf(path) {
			for _, n := range f.Names() {
				dashes := "--"
				if len(n) == 1 {
					dashes = "-"
				}
				if !strings.Contains(r.stdout, dashes+n) {
					t.Errorf("ctl %s does not show flag %s%s:\n%s", strings.Join(args, " "), dashes, n, r.stdout)
				}
			}
		}
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("ctl %s states two defaults: %q", strings.Join(args, " "), strings.TrimSpace(line))
			}
		}
	}
	for _, p := range paths {
		t.Run(strings.Join(p, "_"), func(t *testing.T) {
			check(t, p, append(append([]string{}, p...), "--help")...)
			if p[0] != "help" {
				check(t, p, append([]string{"help"}, p...)...)
			}
		})
	}
	t.Run("root", func(t *testing.T) {
		r := runCtl(t, nowhere, "--help")
		if r.code != 0 {
			t.Fatalf("ctl --help: %v", r)
		}
		for _, f := range app.Flags {
			if !strings.Contains(r.stdout, "--"+f.Names()[0]) {
				t.Errorf("ctl --help does not show --%s", f.Names()[0])
			}
		}
	})
}

// TestUsageErrors: every kind of mistake in a command line — unknown
// verb, unknown flag (global or a verb's), missing or extra arguments —
// is one line saying what is wrong, a second naming the help of the
// command concerned, nothing on stdout, and exit status 2; an unknown
// verb or flag close to a real one suggests it (issue 25). None connects.
func TestUsageErrors(t *testing.T) {
	const nowhere = "127.0.0.1:1"
	for _, tc := range []struct {
		args       []string
		line, hint string
	}{
		{[]string{"lss", "/"}, `unknown command "lss" (did you mean 'ls'?)`, "shepherd ctl"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`, "shepherd ctl"},
		{nil, "no command given", "shepherd ctl"},
		{[]string{"--jsn", "ls", "/"}, "flag provided but not defined: -jsn (did you mean --json?)", "shepherd ctl"},
		{[]string{"ls", "--recursiv", "/"}, "ls: flag provided but not defined: -recursiv", "shepherd ctl ls"},
		{[]string{"ls"}, "ls: missing argument", "shepherd ctl ls"},
		{[]string{"job", "frob"}, `job: unknown verb "frob"`, "shepherd ctl job"},
		{[]string{"job", "add", "--schedul", "@daily", "j", "--", "true"}, "job add: flag provided but not defined: -schedul (did you mean --schedule?)", "shepherd ctl job add"},
		{[]string{"job", "run-now"}, "run-now: missing argument", "shepherd ctl job run-now"},
		{[]string{"task", "show", "a", "b"}, "task show: want one task name", "shepherd ctl task show"},
		{[]string{"help", "jbo"}, `help: unknown command "jbo" (did you mean 'job'?)`, "shepherd ctl"},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			r := runCtl(t, nowhere, tc.args...)
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if r.code != ExitUsage || r.stdout != "" || len(lines) != 2 {
				t.Fatalf("ctl %s: %v\nwant exit %d, no stdout and two lines on stderr", strings.Join(tc.args, " "), r, ExitUsage)
			}
			if !strings.HasPrefix(lines[0], tc.line) {
				t.Errorf("ctl %s: first line %q, want it to start with %q", strings.Join(tc.args, " "), lines[0], tc.line)
			}
			if want := "run '" + tc.hint + " --help' for usage"; lines[1] != want {
				t.Errorf("ctl %s: hint %q, want %q", strings.Join(tc.args, " "), lines[1], want)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		r := runCtl(t, nowhere, "--json", "lss")
		if r.code != ExitUsage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
			!strings.Contains(r.stderr, `"hint":"run 'shepherd ctl --help' for usage"`) {
			t.Errorf("ctl --json lss: %v\nwant exit 2 and one JSON document with the hint", r)
		}
	})
}
