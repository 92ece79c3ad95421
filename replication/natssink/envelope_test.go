package natssink

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/internal/rowtypes"
	"github.com/shepherd-dev/shepherd/internal/sinktest"
	"github.com/shepherd-dev/shepherd/replication"
)

var update = flag.Bool("update", false, "rewrite the golden files of the envelope tests")

// goldenVolatile are the parts of an event that change from run to run
// of the test (the binlog position where the shared source is, its
// server id and GTIDs), replaced before comparing with the golden file.
var goldenVolatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"server":"[^"]*"`), `"server":"SERVER"`},
	{regexp.MustCompile(`"file":"[^"]*","pos":[0-9]+,"gtid":("[^"]*"|null)`), `"file":"FILE","pos":0,"gtid":"GTID"`},
}

// TestEnvelopeGolden publishes every row type of the replication types
// test — inserted, updated (in place, to NULL, the key itself) and
// deleted — with the DDL that made the table, and compares the events
// with testdata/envelope.golden (go test -run TestEnvelopeGolden -update
// rewrites it). The source session's clock is fixed, so that NOW() and
// the commit times are the same every run.
func TestEnvelopeGolden(t *testing.T) {
	source, n := peers(t)
	sinktest.DropDB(t, source, "rt_types")
	cfg := replicationConfig(t, source, natsConfig(n), "rt_types")
	r := sinktest.Open(t, cfg)
	from := sinktest.CurrentPosition(t, r)

	conn := sinktest.SQLConn(t, source.DB(t))
	stmts := append([]string{"SET timestamp = 1764000000", "CREATE DATABASE rt_types", rowtypes.AllTypes}, rowtypes.Rows...)
	stmts = append(stmts,
		"UPDATE rt_types.alltypes SET tiu = 254, f = f * 2, vc = CONCAT(vc, 'x'), n = 1 WHERE id IN (1, 9)",
		"UPDATE rt_types.alltypes SET id = id + 100 WHERE id IN (2, 3)",
		"UPDATE rt_types.alltypes SET j = NULL, e = NULL, s = 'y', b64 = 0 WHERE id = 6",
		"DELETE FROM rt_types.alltypes WHERE id = 7",
	)
	for _, s := range stmts {
		if _, err := conn.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	rn := sinktest.StartRun(t, r, from, 1, "golden")
	sinktest.WaitCaughtUp(t, r, source, rn)
	if err := rn.Stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	events := readStream(t, n.URL(), "CDC")

	var got strings.Builder
	for i, e := range events {
		want := MsgID(cfg.Task, replication.Position{Server: e.Env.Source.Server, File: e.Env.Source.File, Pos: e.Env.Source.Pos}, e.Env.Source.GTID, e.Env.Source.Row)
		if e.ID != want {
			t.Errorf("event %d: Nats-Msg-Id %q, want %q (from its source block)", i, e.ID, want)
		}
		if e.Env.Source.GTID == "" || e.Env.Source.Server == "" || e.Env.Source.File == "" || e.Env.TSMS != 1764000000000 {
			t.Errorf("event %d lacks its source position, GTID, server or commit time: %s", i, e.Data)
		}
		data := e.Data
		for _, v := range goldenVolatile {
			data = v.re.ReplaceAllString(data, v.with)
		}
		fmt.Fprintf(&got, "%s %s\n", e.Subject, data)
	}
	path := filepath.Join("testdata", "envelope.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got.String() != string(want) {
		gl, wl := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("events differ from %s at line %d:\ngot:  %s\nwant: %s", path, i+1, g, w)
			}
		}
	}
}

func TestSubjectToken(t *testing.T) {
	for in, want := range map[string]string{
		"orders": "orders", "my.table": "my%2Etable", "a*b>c": "a%2Ab%3Ec", "100%": "100%25",
		"two words": "two%20words", "tab\there": "tab%09here", "ünï": "ünï", "%2E": "%252E",
	} {
		if got := SubjectToken(in); got != want {
			t.Errorf("SubjectToken(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMsgID(t *testing.T) {
	start := replication.Position{File: "mysql-bin.000003", Pos: 1234, Server: "mariadb:7"}
	if got, want := MsgID("t1", start, "0-7-99", 3), "t1:0-7-99:3"; got != want {
		t.Errorf("MsgID with a GTID = %q, want %q", got, want)
	}
	if got, want := MsgID("t1", start, "", 0), "t1:mariadb:7:mysql-bin.000003:1234:0"; got != want {
		t.Errorf("MsgID without a GTID = %q, want %q", got, want)
	}
}

func TestConfigValidation(t *testing.T) {
	ok := Config{URL: "nats://127.0.0.1:4222", Stream: "CDC"}
	if _, err := ok.withDefaults(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	for _, tt := range []struct {
		c     Config
		field string
	}{
		{Config{Stream: "CDC"}, "target.url"},
		{Config{URL: "http://x:1", Stream: "CDC"}, "target.url"},
		{Config{URL: "nats://u:secret@x:1", Stream: "CDC"}, "target.url"},
		{Config{URL: "nats://x:1", Stream: "a.b"}, "target.stream"},
		{Config{URL: "nats://x:1", Stream: "CDC", SubjectPrefix: "a.*"}, "target.subjectPrefix"},
		{Config{URL: "nats://x:1", Stream: "CDC", SubjectPrefix: "a..b"}, "target.subjectPrefix"},
		{Config{URL: "nats://x:1", Stream: "CDC", DuplicateWindow: -1}, "target.duplicateWindow"},
		{Config{URL: "nats://x:1", Stream: "CDC", Bucket: "no space"}, "target.bucket"},
	} {
		_, err := tt.c.withDefaults()
		if err == nil || !strings.Contains(err.Error(), tt.field+":") {
			t.Errorf("%+v: error %v, want one naming %s", tt.c, err, tt.field)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	if err := CheckWindow(DefaultDuplicateWindow, 10e9, 0); err != nil {
		t.Errorf("default window refused for a 10s session: %v", err)
	}
	if err := CheckWindow(40e9, 10e9, 10e9); err == nil || !strings.Contains(err.Error(), "target.duplicateWindow") {
		t.Errorf("a 40s window for a 10s session and a 10s scan: %v, want a refusal naming target.duplicateWindow", err)
	}
}

func TestSubjectCovers(t *testing.T) {
	for _, tt := range []struct {
		s, want string
		ok      bool
	}{
		{">", "cdc.>", true}, {"cdc.>", "cdc.>", true}, {"*.>", "cdc.>", true}, {"cdc.*", "cdc.>", false},
		{"cdc.a.>", "cdc.>", false}, {"other.>", "cdc.>", false}, {"cdc.>", "cdc.x.>", true}, {"a.b", "cdc.>", false},
	} {
		if got := subjectCovers(tt.s, tt.want); got != tt.ok {
			t.Errorf("subjectCovers(%q, %q) = %v, want %v", tt.s, tt.want, got, tt.ok)
		}
	}
}
