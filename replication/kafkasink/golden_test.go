package kafkasink

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
)

var update = flag.Bool("update", false, "rewrite the golden files of the format tests")

// goldenVolatile are the parts of an event that change from run to run
// of the test (the binlog position where the shared source is, its
// server identity and GTIDs), replaced before comparing with the golden
// files.
var goldenVolatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"server":"[^"]*"`), `"server":"SERVER"`},
	{regexp.MustCompile(`"file":"[^"]*","pos":[0-9]+,"gtid":("[^"]*"|null)`), `"file":"FILE","pos":0,"gtid":"GTID"`},
	{regexp.MustCompile(`"gtid":"[^"]*"`), `"gtid":"GTID"`},
	{regexp.MustCompile(`"position":"[^"]*"`), `"position":"FILE:0"`},
}

// TestFormatsGolden produces every row type of the replication types
// test — inserted, updated (in place, to NULL, the key itself) and
// deleted — with the DDL that made the table, in each format, and
// compares what a read_committed consumer gets (topic, key, value) with
// testdata/<format>.golden (go test -run TestFormatsGolden -update
// rewrites them). The source session's clock is fixed, so that NOW() and
// the commit times are the same every run.
func TestFormatsGolden(t *testing.T) {
	source, k := peers(t)
	sinktest.DropDB(t, source, "rt_types")
	cfg := replicationConfig(t, source, kafkaConfig(k, FormatDebezium), "rt_types")
	from := sinktest.CurrentPosition(t, sinktest.Open(t, cfg))

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
	for _, format := range []string{FormatDebezium, FormatCanal, FormatMaxwell} {
		t.Run(format, func(t *testing.T) {
			kc := kafkaConfig(k, format)
			kc.TopicPrefix = "golden_" + format
			cfg := replicationConfig(t, source, kc, "rt_types")
			r := sinktest.Open(t, cfg)
			rn := sinktest.StartRun(t, r, from, 1, "golden")
			sinktest.WaitCaughtUp(t, r, source, rn)
			if err := rn.Stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			events := readTopics(t, kc.Brokers, kc.TopicPrefix+".")
			var got strings.Builder
			for i, e := range events {
				for _, h := range []string{HeaderTask, HeaderServer, HeaderFile, HeaderPos, HeaderGTID, HeaderRow} {
					if e.Headers[h] == "" {
						t.Errorf("event %d lacks header %s: %v", i, h, e.Headers)
					}
				}
				if e.Headers[HeaderTSMS] != "1764000000000" {
					t.Errorf("event %d: header %s %q, want the commit time 1764000000000", i, HeaderTSMS, e.Headers[HeaderTSMS])
				}
				line := fmt.Sprintf("%s %s %s", e.Topic, e.Key, e.Value)
				for _, v := range goldenVolatile {
					line = v.re.ReplaceAllString(line, v.with)
				}
				got.WriteString(line + "\n")
			}
			compareGolden(t, filepath.Join("testdata", format+".golden"), got.String())
			if format == FormatDebezium {
				sameAsNATS(t, events)
			}
		})
	}
}

// compareGolden compares got with the golden file at path, rewriting it
// first with -update.
func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got == string(want) {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
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

// sameAsNATS checks that the Debezium events are the NATS sink's, the
// task's name aside: one function renders both.
func sameAsNATS(t *testing.T, events []event) {
	t.Helper()
	nats, err := os.ReadFile(filepath.Join("..", "natssink", "testdata", "envelope.golden"))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`"name":"[^"]*"`)
	want := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(nats)), "\n") {
		_, v, _ := strings.Cut(line, " ")
		want[name.ReplaceAllString(v, `"name":"TASK"`)]++
	}
	for _, e := range events {
		v := e.Value
		for _, r := range goldenVolatile {
			v = r.re.ReplaceAllString(v, r.with)
		}
		v = name.ReplaceAllString(v, `"name":"TASK"`)
		if want[v] == 0 {
			t.Errorf("event not among the NATS sink's (natssink/testdata/envelope.golden): %s", v)
		}
		want[v]--
	}
}
