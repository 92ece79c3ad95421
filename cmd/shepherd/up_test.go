package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// repoFile is the path of a file of the repository, from this package.
func repoFile(name string) string { return filepath.Join("..", "..", name) }

// TestExampleConfigsAreEachCommandsOwn: every example config file is
// accepted by its command, and each section of examples/shepherd.yaml,
// copied into a file of its own, is accepted by that role's command:
// moving a role out of `shepherd up` is copying its section.
func TestExampleConfigsAreEachCommandsOwn(t *testing.T) {
	for cmd, file := range map[string]string{
		"coord":     "packaging/etc/coord.yaml",
		"core":      "packaging/etc/core-example.yaml",
		"scheduler": "packaging/etc/scheduler.yaml",
		"collector": "packaging/etc/collector.yaml",
		"server":    "packaging/etc/server.yaml",
		"monitor":   "packaging/etc/monitor.yaml",
		"dns":       "packaging/etc/dns.yaml",
		"up":        "examples/shepherd.yaml",
	} {
		if _, err := runRecording(t, cmd, "config", "--config", repoFile(file)); err != nil {
			t.Errorf("shepherd %s --config %s: %v", cmd, file, err)
		}
	}
	data, err := os.ReadFile(repoFile("examples/shepherd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, role := range upRoleNames() {
		sec, ok := doc[role]
		if !ok {
			t.Errorf("examples/shepherd.yaml has no %s section", role)
			continue
		}
		body, err := yaml.Marshal(sec)
		if err != nil {
			t.Fatal(err)
		}
		if sec == nil {
			body = nil
		}
		path := writeConfig(t, role+".yaml", string(body))
		if _, err := runRecording(t, role, "config", "--config", path); err != nil {
			t.Errorf("section %s as `shepherd %s --config`: %v\n%s", role, role, err, body)
		}
	}
}

// TestUpConfigErrors: `shepherd up` refuses, before starting anything, a
// config whose top-level key or section key is unknown, naming the key,
// the section and the file, and a section key that every role shares in
// up (its session, its HTTP listener).
func TestUpConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"top", "bogus: 1\n", []string{`unknown key "bogus"`}},
		{"section", "core:\n  bogus: 1\n", []string{"section core", `unknown key "bogus"`}},
		{"bad value", "scheduler:\n  log-dir: [a, b]\n", []string{"section scheduler", "log-dir"}},
		{"shared zk", "core:\n  zk: other:2181\n", []string{"section core", `key "zk"`, "one session"}},
		{"shared http", "collector:\n  http-listen: :0\n", []string{"section collector", `key "http-listen"`}},
		{"coord admin", "coord:\n  admin-listen: :0\n", []string{"section coord", `key "admin-listen"`}},
		{"not a section", "core: 3\n", []string{"section core"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, "shepherd.yaml", tc.body)
			app := newApp()
			app.Before = nil
			err := app.Run([]string{"shepherd", "up", "--config", path, "--data-dir", t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want one naming %s", err, path)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want one containing %q", err, w)
				}
			}
		})
	}
}
