package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// runCollectorArgs runs `shepherd collector args…` up to its first error;
// every case here fails before connecting to anything.
func runCollectorArgs(t *testing.T, args ...string) error {
	t.Helper()
	app := &cli.App{Name: "shepherd", Commands: []*cli.Command{roleCommand(collectorRole())}, Writer: os.Stderr}
	return app.Run(append([]string{"shepherd", "collector"}, args...))
}

func TestCollectorFlagErrors(t *testing.T) {
	dir := t.TempDir()
	n := 0
	yamlFile := func(body string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("config%d.yaml", n))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"strategy", []string{"--out", dir, "--strategy", "random"}, "--strategy"},
		{"nowhere", []string{"--name", "x"}, "--out or --stdout"},
		{"dead-after", []string{"--out", dir, "--dead-after", "1s"}, "--dead-after 1s must exceed"},
		{"name", []string{"--out", dir, "--name", "a/b"}, "--name"},
		{"yaml-unknown", []string{"--config", yamlFile("out: /tmp/x\nbogus: 1\n")}, `unknown key "bogus"`},
		{"yaml-bad-value", []string{"--config", yamlFile("dead-after: soon\n")}, "dead-after"},
		// The command line's --dead-after wins over the file's.
		{"yaml-flag-wins", []string{"--config", yamlFile("out: /tmp/x\nstrategy: global\ndead-after: 1h\n"), "--dead-after", "1s"}, "--dead-after 1s must exceed"},
		{"yaml-strategy", []string{"--config", yamlFile("out: /tmp/x\nstrategy: nope\n")}, `strategy "nope"`},
		// The security flags are checked before connecting (internal/authflag).
		{"auth-both", []string{"--out", dir, "--auth", "a:b", "--auth-file", yamlFile("a:b\n")}, "--auth and --auth-file both given"},
		{"auth-file-shared", []string{"--out", dir, "--auth-file", yamlFile("a:b\n")}, "chmod 600"},
		{"read-acl-open", []string{"--out", dir, "--read-acl", "world:anyone"}, "--read-acl without a credential"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runCollectorArgs(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("shepherd collector %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.want)
			}
		})
	}
}

// TestSchedulerFlagErrors: the scheduler's own flags are checked before
// it connects, errors naming the flag.
func TestSchedulerFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--labels", "role"}, `--labels: "role": want key=value`},
		{[]string{"--labels", "role=batch,role=web"}, "--labels: role given twice"},
		{[]string{"--labels", "zone=eu west"}, `--labels: label zone="eu west"`},
		{[]string{"--http-allow", "10.0.0.0/8,api .example.com"}, `--http-allow "api .example.com"`},
	} {
		app := &cli.App{Name: "shepherd", Commands: []*cli.Command{roleCommand(schedulerRole())}, Writer: os.Stderr}
		err := app.Run(append([]string{"shepherd", "scheduler", "--zk", "127.0.0.1:1", "--log-dir", t.TempDir()}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("shepherd scheduler %s: %v, want an error with %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
