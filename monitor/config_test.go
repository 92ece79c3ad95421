package monitor

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestShippedConfigsParse: the packaged and the demo's config files are
// valid.
func TestShippedConfigsParse(t *testing.T) {
	for _, p := range []string{"../packaging/etc/monitor-rules.yaml", "../examples/monitor/monitor.yaml"} {
		if _, err := LoadConfig(context.Background(), p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"interval: 10ms", "interval: 10ms: at least 100ms"},
		{"hold: {NoSuchRule: 1s}", "hold.NoSuchRule: no such rule"},
		{"webhooks: [{url: ftp://x}]", `webhook "ftp://x": want an http:// or https:// URL`},
		{"webhooks: [{url: 'http://x', format: xml}]", `format "xml"`},
		{"email: [{smtp: 'mail:25', from: a@b, to: [c@d], username: u, tls: none}]", "would send the password in clear"},
		{"email: [{smtp: mail, from: a@b, to: [c@d]}]", `smtp "mail": want host:port`},
		{"commands: [{args: [x]}]", "command is required"},
		{"webhoks: []", "field webhoks not found"},
	}
	for _, c := range cases {
		_, err := ParseConfig([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to say %q", c.yaml, err, c.want)
		}
	}
	cfg, err := ParseConfig([]byte("rules: {lagWarning: 2m}\nhold: {TaskNotRunning: 1m}"))
	if err != nil || cfg.Rules.LagWarning != 2*time.Minute || cfg.Rules.LagCritical != 5*time.Minute || cfg.holds()[RuleTaskNotRunning] != time.Minute || cfg.holds()[RuleTaskNoStandby] != 5*time.Minute {
		t.Fatalf("overrides over defaults: %+v, %v", cfg, err)
	}
}
