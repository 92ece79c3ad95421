package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// runRecording runs `shepherd <command> args…` with the command's action
// replaced by one that records the final value of flag.
func runRecording(t *testing.T, command, flag string, args ...string) (string, error) {
	t.Helper()
	app := newApp()
	app.Before = nil // keep the test's logger
	var got string
	found := false
	for _, c := range app.Commands {
		if c.Name == command {
			found = true
			c.Action = func(c *cli.Context) error {
				got = fmt.Sprint(c.Value(flag))
				if ss := c.StringSlice(flag); ss != nil {
					got = fmt.Sprint(ss)
				}
				return nil
			}
		}
	}
	if !found {
		t.Fatalf("no command %q", command)
	}
	err := app.Run(append([]string{"shepherd", command}, args...))
	return got, err
}

func writeConfig(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigFileOnEveryCommand: every long-running command reads the same
// kind of --config file: a key sets the flag of that name, the command
// line wins over the file, and an unknown key or a bad value is an error
// naming the key and the file.
func TestConfigFileOnEveryCommand(t *testing.T) {
	for _, tc := range []struct {
		command, key, file, fromFile, flag, fromFlag, badValue string
	}{
		{"coord", "snap-count", "7", "7", "--snap-count=8", "8", "many"},
		{"coord", "4lw", "[srvr, mntr]", "[srvr mntr]", "--4lw=ruok", "[ruok]", "{a: b}"},
		{"coord", "max-queued-event-bytes", "2097152", "2097152", "--max-queued-event-bytes=4194304", "4194304", "lots"},
		{"core", "scan-interval", "7s", "7s", "--scan-interval=8s", "8s", "soon"},
		{"core", "task", "[a, b]", "[a b]", "--task=c", "[c]", "{a: b}"},
		{"core", "zk", "zk1:2181/x", "zk1:2181/x", "--zk=zk2:2181", "zk2:2181", "[a, b]"},
		{"core", "http-listen", "127.0.0.1:9101", "127.0.0.1:9101", "--http-listen=:0", ":0", "[a]"},
		{"core", "metrics-listen", "127.0.0.1:9101", "127.0.0.1:9101", "--metrics-listen=:0", ":0", "[a]"},
		{"scheduler", "log-dir", "/var/log/x", "/var/log/x", "--log-dir=/y", "/y", "[a]"},
		{"scheduler", "session-timeout", "7s", "7s", "--session-timeout=8s", "8s", "long"},
		{"collector", "dead-after", "7m", "7m0s", "--dead-after=8m", "8m0s", "soon"},
		{"collector", "assign", "true", "true", "--assign=false", "false", "maybe"},
		{"up", "session-timeout", "7s", "7s", "--session-timeout=8s", "8s", "long"},
		{"up", "http-listen", "127.0.0.1:1", "127.0.0.1:1", "--http-listen=:0", ":0", "[a]"},
		{"collector", "read-acl", "[digest:v:x]", "[digest:v:x]", "--read-acl=digest:w:y", "[digest:w:y]", "{a: b}"},
	} {
		t.Run(tc.command+"/"+tc.key, func(t *testing.T) {
			t.Setenv("SHEPHERD_ZK", "")
			os.Unsetenv("SHEPHERD_ZK") // restored by Setenv's cleanup
			path := writeConfig(t, tc.command+".yaml", tc.key+": "+tc.file+"\n")
			if got, err := runRecording(t, tc.command, tc.key, "--config", path); err != nil || got != tc.fromFile {
				t.Errorf("--config with %s: %s: got %q, %v; want %q", tc.key, tc.file, got, err, tc.fromFile)
			}
			if got, err := runRecording(t, tc.command, tc.key, "--config", path, tc.flag); err != nil || got != tc.fromFlag {
				t.Errorf("--config and %s: got %q, %v; want the command line's %q", tc.flag, got, err, tc.fromFlag)
			}
			bad := writeConfig(t, tc.command+".yaml", tc.key+": "+tc.badValue+"\n")
			if _, err := runRecording(t, tc.command, tc.key, "--config", bad); err == nil || !strings.Contains(err.Error(), bad) ||
				!strings.Contains(err.Error(), tc.key) {
				t.Errorf("%s: %s: error %v, want one naming the key and %s", tc.key, tc.badValue, err, bad)
			}
			unknown := writeConfig(t, tc.command+".yaml", tc.key+": "+tc.file+"\nbogus-key: 1\n")
			if _, err := runRecording(t, tc.command, tc.key, "--config", unknown); err == nil || !strings.Contains(err.Error(), unknown) ||
				!strings.Contains(err.Error(), `unknown key "bogus-key"`) {
				t.Errorf("unknown key: error %v, want one naming bogus-key and %s", err, unknown)
			}
		})
	}
}

// TestConfigFileEnvironmentWins: a flag's SHEPHERD_* variable, like the
// command line, wins over the file (the units' shepherd.env sets the
// connect string for every process).
func TestConfigFileEnvironmentWins(t *testing.T) {
	t.Setenv("SHEPHERD_ZK", "env:2181")
	path := writeConfig(t, "core.yaml", "zk: file:2181\n")
	if got, err := runRecording(t, "core", "zk", "--config", path); err != nil || got != "env:2181" {
		t.Errorf("zk: got %q, %v; want SHEPHERD_ZK's env:2181", got, err)
	}
}
