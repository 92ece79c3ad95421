package ctl

import (
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/coord"
)

// TestFourLetterWords sends four-letter words to the first server of --zk.
func TestFourLetterWords(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		// A chroot and more servers after the first do not matter.
		connect := tg.Addr + ",127.0.0.1:1/some/chroot"
		for _, c := range []struct {
			args []string
			code int
			out  string // part of stdout
			err  string // part of stderr
		}{
			{args: words("ruok"), out: "imok\n"},
			{args: words("srvr"), out: "Mode: standalone"},
			{args: words("4lw stat"), out: "Mode: standalone"},
			{args: words("isro"), out: "rw\n"},
			{args: words("mntr"), out: "zk_znode_count\t"},
			{args: words("conf"), out: "clientPort"},
			{args: words("crst"), out: "Connection stats reset.\n"},
			{args: words("srst"), out: "Server stats reset.\n"},
			{args: words("4lw ab"), code: 2, err: `4lw: "ab" is not a four-letter word`},
			{args: words("4lw"), code: 2, err: "4lw: missing argument"},
			{args: words("srvr extra"), code: 2, err: `srvr: unexpected argument "extra"`},
		} {
			r := runCtl(t, connect, c.args...)
			if r.code != c.code || !strings.Contains(r.stdout, c.out) || !strings.Contains(r.stderr, c.err) {
				t.Errorf("ctl %s: %v\nwant exit %d, stdout containing %q, stderr containing %q", strings.Join(c.args, " "), r, c.code, c.out, c.err)
			}
		}

		r := runCtl(t, connect, "--json", "mntr")
		var doc fourLetterResult
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
			t.Fatalf("ctl --json mntr: %v (%v)", r, err)
		}
		if n, ok := doc.Values["zk_znode_count"].(float64); !ok || n < 1 || doc.Server != tg.Addr || doc.Word != "mntr" {
			t.Errorf("ctl --json mntr: server %q, word %q, zk_znode_count %#v", doc.Server, doc.Word, doc.Values["zk_znode_count"])
		}
		if v, ok := doc.Values["zk_server_state"].(string); !ok || v != "standalone" {
			t.Errorf("ctl --json mntr: zk_server_state %#v, want \"standalone\"", doc.Values["zk_server_state"])
		}
	})
}

// TestFourLetterRefused: a word the server has disabled, a server that
// does not listen, a connect string without a port.
func TestFourLetterRefused(t *testing.T) {
	cfg := coord.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.FourLetterWords = []string{"ruok"}
	cfg.NoSync = true
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := coord.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	for _, c := range []struct {
		connect string
		args    []string
		err     string
	}{
		{srv.Addr(), words("srvr"), "srvr is not executed because it is not in the whitelist. (enable it with 4lw.commands.whitelist in zoo.cfg, or --4lw on shepherd coord)"},
		{closed, words("ruok"), "connection refused"},
		{"localhost", words("ruok"), `--zk "localhost": want host:port[,host:port…][/chroot]`},
	} {
		r := runCtl(t, c.connect, c.args...)
		if r.code != 1 || !strings.Contains(r.stderr, c.err) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("--zk %s %s: %v\nwant exit 1 and one line containing %q", c.connect, strings.Join(c.args, " "), r, c.err)
		}
	}
	if r := runCtl(t, srv.Addr(), "ruok"); r.code != 0 || r.stdout != "imok\n" {
		t.Errorf("ruok, which is allowed: %v", r)
	}
}
