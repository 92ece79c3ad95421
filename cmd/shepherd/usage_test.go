package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// runBinary runs the built binary with args and returns its exit status
// and what it printed.
func runBinary(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("shepherd %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String()
}

// TestUsageErrorsOfEveryCommand: a mistake in the command line of any
// command of the binary — an unknown flag, an unknown command, an
// argument to a command that takes none — prints one line saying what is
// wrong and a second naming the help to read, nothing on stdout, and
// exits 2 (issue 25: `shepherd upp` exited 3, `shepherd up --confg x`
// printed the whole help on stdout and exited 1). Nothing here starts a
// server: each fails while parsing.
func TestUsageErrorsOfEveryCommand(t *testing.T) {
	bin := buildShepherd(t)
	type usageCase struct {
		args       []string
		line, hint string
	}
	cases := []usageCase{
		{[]string{"upp"}, `shepherd: unknown command "upp" (did you mean 'up'?)`, "shepherd"},
		{[]string{"frobnicate"}, `shepherd: unknown command "frobnicate"`, "shepherd"},
		{[]string{"--log-levl", "debug", "up"}, "shepherd: flag provided but not defined: -log-levl (did you mean --log-level?)", "shepherd"},
		{[]string{"up", "--confg", "x"}, "shepherd: up: flag provided but not defined: -confg (did you mean --config?)", "shepherd up"},
		{[]string{"help", "upp"}, `shepherd: help: unknown command "upp" (did you mean 'up'?)`, "shepherd"},
		{[]string{"ctl", "lss", "/"}, `unknown command "lss" (did you mean 'ls'?)`, "shepherd ctl"},
		{[]string{"ctl", "job", "add", "--schedul", "@daily", "j", "--", "true"}, "job add: flag provided but not defined: -schedul (did you mean --schedule?)", "shepherd ctl job add"},
	}
	for _, c := range newApp().Commands {
		if c.Name == "help" || c.Name == "ctl" {
			continue
		}
		cases = append(cases,
			usageCase{[]string{c.Name, "--no-such-flag"}, "shepherd: " + c.Name + ": flag provided but not defined: -no-such-flag", "shepherd " + c.Name},
			usageCase{[]string{c.Name, "stray"}, "shepherd: " + c.Name + `: unexpected argument "stray"`, "shepherd " + c.Name})
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			code, stdout, stderr := runBinary(t, bin, tc.args...)
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if code != 2 || stdout != "" || len(lines) != 2 {
				t.Fatalf("shepherd %s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 2, nothing on stdout, two lines on stderr", strings.Join(tc.args, " "), code, stdout, stderr)
			}
			if !strings.HasPrefix(lines[0], tc.line) {
				t.Errorf("shepherd %s: first line %q, want it to start with %q", strings.Join(tc.args, " "), lines[0], tc.line)
			}
			if want := "run '" + tc.hint + " --help' for usage"; lines[1] != want {
				t.Errorf("shepherd %s: hint %q, want %q", strings.Join(tc.args, " "), lines[1], want)
			}
		})
	}
	t.Run("version", func(t *testing.T) {
		_, flag, _ := runBinary(t, bin, "--version")
		code, stdout, stderr := runBinary(t, bin, "version")
		if code != 0 || stdout != flag || stderr != "" || !strings.HasPrefix(stdout, "shepherd version ") {
			t.Errorf("shepherd version: exit %d, stdout %q, stderr %q; want exit 0 and what --version prints, %q", code, stdout, stderr, flag)
		}
	})
	t.Run("help", func(t *testing.T) {
		for _, args := range [][]string{{"--help"}, {"help"}, {"help", "up"}, {"up", "--help"}} {
			code, stdout, _ := runBinary(t, bin, args...)
			if code != 0 || !strings.Contains(stdout, "USAGE") {
				t.Errorf("shepherd %s: exit %d, stdout:\n%s\nwant exit 0 and the help", strings.Join(args, " "), code, stdout)
			}
		}
	})
}
