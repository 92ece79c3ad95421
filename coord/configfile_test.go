package coord

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadZooCfgErrors(t *testing.T) {
	cases := map[string]struct{ name, body, mention string }{
		"ensemble": {"zoo.cfg", "server.1=a:1:2\n", "Apache ZooKeeper"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			_, err := LoadZooCfg(t.Context(), writeFile(t, c.name, c.body), &cfg)
			if err == nil || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("error %v, want one mentioning %q", err, c.mention)
			}
		})
	}
	cfg := DefaultConfig()
	if _, err := LoadZooCfg(t.Context(), filepath.Join(t.TempDir(), "missing.cfg"), &cfg); !errors.Is(err, ErrConfig) {
		t.Fatalf("missing file: %v", err)
	}
}
