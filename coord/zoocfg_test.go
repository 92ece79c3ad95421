package coord

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseZooCfg(t *testing.T) {
	in := `# a stock standalone config
tickTime=1000
dataDir=/var/lib/zk
dataLogDir=/fast/zk
clientPort=2182
clientPortAddress=0.0.0.0
maxClientCnxns=100
minSessionTimeout=3000
maxSessionTimeout=-1
autopurge.snapRetainCount=5
autopurge.purgeInterval=2
4lw.commands.whitelist=ruok, srvr,mntr
jvm.only.thing=1
`
	cfg := DefaultConfig()
	warnings, err := ParseZooCfg(strings.NewReader(in), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.TickTime = time.Second
	want.DataDir, want.DataLogDir = "/var/lib/zk", "/fast/zk"
	want.Listen = "0.0.0.0:2182"
	want.MaxClientConns = 100
	want.MinSessionTimeout = 3 * time.Second
	want.AutopurgeSnapRetainCount = 5
	want.AutopurgeInterval = 2 * time.Hour
	want.FourLetterWords = []string{"ruok", "srvr", "mntr"}
	if cfg.TickTime != want.TickTime || cfg.DataDir != want.DataDir || cfg.DataLogDir != want.DataLogDir ||
		cfg.Listen != want.Listen || cfg.MaxClientConns != want.MaxClientConns ||
		cfg.MinSessionTimeout != want.MinSessionTimeout || cfg.MaxSessionTimeout != 0 ||
		cfg.AutopurgeSnapRetainCount != 5 || cfg.AutopurgeInterval != want.AutopurgeInterval ||
		strings.Join(cfg.FourLetterWords, ",") != "ruok,srvr,mntr" {
		t.Fatalf("parsed %+v", cfg)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "jvm.only.thing") {
		t.Fatalf("warnings %q, want one naming jvm.only.thing", warnings)
	}
}

func TestParseZooCfgErrors(t *testing.T) {
	cases := []struct {
		in      string
		want    error
		mention string
	}{
		{"server.1=zk1:2888:3888\n", ErrEnsembleConfig, "Apache ZooKeeper"},
		{"tickTime=fast\n", ErrConfig, "tickTime"},
		{"clientPort=99999\n", ErrConfig, "clientPort"},
		{"just words\n", ErrConfig, "line 1"},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		_, err := ParseZooCfg(strings.NewReader(c.in), &cfg)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%q: error %v; want %v mentioning %q", c.in, err, c.want, c.mention)
		}
	}
}

func TestConfigValidationNamesTheField(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MinSessionTimeout, cfg.MaxSessionTimeout = 10*time.Second, time.Second
	if err := cfg.normalize(); err == nil || !strings.Contains(err.Error(), "min-session-timeout") {
		t.Fatalf("normalize: %v", err)
	}
	cfg = DefaultConfig()
	cfg.SnapCount = 0
	if err := cfg.normalize(); err == nil || !strings.Contains(err.Error(), "snap-count") {
		t.Fatalf("normalize: %v", err)
	}
}

// FuzzParseZooCfg: no input may crash the parser, and whatever it accepts
// must leave a config that either validates or fails validation with an
// error (never a panic).
func FuzzParseZooCfg(f *testing.F) {
	f.Add("tickTime=2000\ndataDir=/tmp/zk\nclientPort=2181\n")
	f.Add("server.1=a:1:2\n")
	f.Add("4lw.commands.whitelist=*\nmaxSessionTimeout=-1\n")
	f.Fuzz(func(t *testing.T, in string) {
		cfg := DefaultConfig()
		if _, err := ParseZooCfg(strings.NewReader(in), &cfg); err != nil {
			return
		}
		_ = cfg.normalize()
	})
}
