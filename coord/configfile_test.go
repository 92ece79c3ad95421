package coord

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfigFileYAML(t *testing.T) {
	p := writeFile(t, "coord.yaml", "listen: 127.0.0.1:3000\ndata-dir: /srv/coord\ntick-time: 500ms\n4lw: [ruok]\nsnap-count: 50\n")
	cfg := DefaultConfig()
	if _, err := LoadConfigFile(t.Context(), p, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:3000" || cfg.DataDir != "/srv/coord" || cfg.TickTime != 500*time.Millisecond ||
		cfg.SnapCount != 50 || strings.Join(cfg.FourLetterWords, ",") != "ruok" || cfg.MaxRequestBytes != DefaultConfig().MaxRequestBytes {
		t.Fatalf("loaded %+v", cfg)
	}
}

func TestLoadConfigFileErrors(t *testing.T) {
	cases := map[string]struct{ name, body, mention string }{
		"misspelt key": {"c.yaml", "lisen: x\n", "lisen"},
		"bad duration": {"c.yml", "tick-time: soon\n", "soon"},
		"ensemble":     {"zoo.cfg", "server.1=a:1:2\n", "Apache ZooKeeper"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			_, err := LoadConfigFile(t.Context(), writeFile(t, c.name, c.body), &cfg)
			if err == nil || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("error %v, want one mentioning %q", err, c.mention)
			}
		})
	}
	cfg := DefaultConfig()
	if _, err := LoadConfigFile(t.Context(), filepath.Join(t.TempDir(), "missing.cfg"), &cfg); !errors.Is(err, ErrConfig) {
		t.Fatalf("missing file: %v", err)
	}
}
