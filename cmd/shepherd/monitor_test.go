package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestMonitorDescribesItsChannels: the line of `shepherd up`'s banner
// for the monitor names the channels it will notify, from the flags and
// the file (issue 25: it said "no channel" with a --webhook given), and
// never their addresses, which may hold tokens.
func TestMonitorDescribesItsChannels(t *testing.T) {
	conf := writeConfig(t, "monitor.yaml", `
webhooks: [{url: "https://hooks.example/T0KEN"}]
email: [{to: [ops@example.com], from: shepherd@example.com, smtp: "mail.example:25"}]
`)
	for _, tc := range []struct {
		name       string
		args       []string
		want, nope string
	}{
		{"none", nil, "default rules, no channel", "channels:"},
		{"webhook flag", []string{"--webhook", "https://hooks.example/T0KEN"}, "channels: 1 webhook", "no channel"},
		{"two webhooks", []string{"--webhook", "http://a.example", "--webhook", "http://b.example"}, "channels: 2 webhooks", "no channel"},
		{"file and flag", []string{"--monitor-config", conf, "--webhook", "http://a.example"}, "rules from " + conf + ", channels: 2 webhooks, 1 email", "no channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := monitorRole()
			var got string
			app := &cli.App{Name: "shepherd", Writer: io.Discard, Commands: []*cli.Command{{
				Name:  "monitor",
				Flags: roleFlags(r),
				Action: func(c *cli.Context) error {
					if _, err := r.setup(c, slog.New(slog.DiscardHandler)); err != nil {
						return err
					}
					got = r.describe(c)
					return nil
				},
			}}}
			if err := app.Run(append([]string{"shepherd", "monitor"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.nope) || strings.Contains(got, "T0KEN") {
				t.Errorf("monitor %s described as %q, want %q, not %q, and no address", strings.Join(tc.args, " "), got, tc.want, tc.nope)
			}
		})
	}
}
