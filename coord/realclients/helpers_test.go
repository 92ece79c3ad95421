package realclients

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The tests in this file check the harness itself; they need no peer.

func TestParseZkCliScript(t *testing.T) {
	tests := []struct {
		name          string
		script        string
		wantSteps     []zkCliStep
		wantConnect   int
		wantErrSubstr string
	}{
		{
			name:        "commands, comments and events",
			script:      "# c\n!events 1\n\ncreate /a\n  set /a x  \n!events 2\n!events 1\nclose\n!events 1\n",
			wantSteps:   []zkCliStep{{cmd: "create /a"}, {cmd: "set /a x", events: 3}, {cmd: "close", events: 1}},
			wantConnect: 1,
		},
		{name: "no commands", script: "# only a comment\n", wantErrSubstr: "no commands"},
		{name: "bad event count", script: "ls /\n!events zero\n", wantErrSubstr: "positive count"},
		{name: "zero events", script: "ls /\n!events 0\n", wantErrSubstr: "positive count"},
		{name: "quit is the runner's", script: "ls /\nquit\n", wantErrSubstr: "sends quit itself"},
		{name: "close not last", script: "close\nls /\n", wantErrSubstr: "close must be the last"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "script.txt")
			if err := os.WriteFile(path, []byte(tc.script), 0o644); err != nil {
				t.Fatal(err)
			}
			steps, connect, err := parseZkCliScript(path)
			if tc.wantErrSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSubstr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErrSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(steps, tc.wantSteps) || connect != tc.wantConnect {
				t.Fatalf("got steps %+v, connect events %d; want %+v, %d", steps, connect, tc.wantSteps, tc.wantConnect)
			}
		})
	}
}

// TestCommittedZkCliScriptsParse keeps the committed scripts valid, and
// their golden files in step with them, where no zkCli can run.
func TestCommittedZkCliScriptsParse(t *testing.T) {
	for _, sess := range zkCliSessions {
		t.Run(sess.name, func(t *testing.T) {
			steps, connect, err := parseZkCliScript(sess.script)
			if err != nil {
				t.Fatal(err)
			}
			if connect != 1 {
				t.Errorf("%s waits for %d events at connect, want 1 (SyncConnected)", sess.script, connect)
			}
			if last := steps[len(steps)-1]; last.cmd != "close" || last.events != 1 {
				t.Errorf("%s ends with %+v, want close with its Closed event", sess.script, last)
			}
			golden, err := readGolden(sess.golden)
			if err != nil {
				t.Fatal(err)
			}
			var cmds []string
			for _, l := range golden {
				if c, ok := strings.CutPrefix(l, "> "); ok {
					cmds = append(cmds, c)
				}
			}
			var want []string
			for _, s := range steps {
				want = append(want, s.cmd)
			}
			want = append(want, "quit")
			if !slices.Equal(cmds, want) {
				t.Errorf("%s's commands differ from %s's; re-record it with -update:\n%s", sess.golden, sess.script, diffLines(want, cmds))
			}
		})
	}
}

func TestRenderZkCli(t *testing.T) {
	steps := []zkCliStep{{cmd: "create /a"}, {cmd: "set /a x", events: 1}, {cmd: "getEphemerals"}, {cmd: "whoami"}, {cmd: "ls /"}}
	sections := [][]string{
		{"SLF4J: Failed to load class", "Connecting to 127.0.0.1:2181", "Welcome to ZooKeeper!", "", "WATCHER::", "", "WatchedEvent state:SyncConnected type:None path:null"},
		{"Created /a"},
		// The event thread's output interleaves with the command's.
		{"", "WATCHER::", "cZxid = 0x5", "", "WatchedEvent state:SyncConnected type:NodeDataChanged path:/a", ""},
		{"[/b, /a]"},
		{"Auth scheme: User", "ip: 127.0.0.1", "digest: user"},
	}
	want := []string{
		"Connecting to 127.0.0.1:2181",
		"Welcome to ZooKeeper!",
		"WATCHER:: WatchedEvent state:SyncConnected type:None path:null",
		"> create /a",
		"Created /a",
		"> set /a x",
		"cZxid = 0x5",
		"", // an empty result line that is not part of an event stays
		"WATCHER:: WatchedEvent state:SyncConnected type:NodeDataChanged path:/a",
		"> getEphemerals",
		"[/a, /b]",
		"> whoami",
		"Auth scheme: User",
		"digest: user",
		"ip: 127.0.0.1",
		"> ls /", // printed nothing
		"> quit",
	}
	if got := renderZkCli(steps, sections); !slices.Equal(got, want) {
		t.Errorf("renderZkCli:\n%s", diffLines(want, got))
	}
}

func TestNormalizeZkCli(t *testing.T) {
	in := []string{
		"Connecting to 127.0.0.1:40001",
		"cZxid = 0x1a",
		"ctime = Sun Nov 22 04:26:04 UTC 2026",
		"mZxid = 0x1f",
		"mtime = Thu Jan 01 00:00:00 UTC 1970",
		"pZxid = 0x1a",
		"ephemeralOwner = 0x0",
		"ephemeralOwner = 0x10000116c3e0000",
		"ephemeralOwner = 0x10000116c3e0001",
		"ephemeralOwner = 0x10000116c3e0000",
		"dataVersion = 0x1a",
		"x = y = z",
	}
	want := []string{
		"Connecting to <server>",
		"cZxid = <zxid-1>",
		"ctime = <time>",
		"mZxid = <zxid-2>",
		"mtime = Thu Jan 01 00:00:00 UTC 1970",
		"pZxid = <zxid-1>",
		"ephemeralOwner = 0x0",
		"ephemeralOwner = <session-1>",
		"ephemeralOwner = <session-2>",
		"ephemeralOwner = <session-1>",
		"dataVersion = 0x1a",
		"x = y = z",
	}
	if got := normalizeZkCli(in, "127.0.0.1:40001"); !slices.Equal(got, want) {
		t.Errorf("normalizeZkCli:\n%s", diffLines(want, got))
	}
}

func TestSortedList(t *testing.T) {
	for in, want := range map[string]string{
		"[/b, /a, /c]": "[/a, /b, /c]",
		"[]":           "[]",
		"[/a]":         "[/a]",
		"not a list":   "not a list",
		"[unclosed":    "[unclosed",
	} {
		if got := sortedList(in); got != want {
			t.Errorf("sortedList(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDiffLines(t *testing.T) {
	tests := []struct {
		name      string
		want, got []string
		diff      string
	}{
		{name: "equal", want: []string{"a", "b"}, got: []string{"a", "b"}, diff: ""},
		{name: "both empty", diff: ""},
		{name: "changed line", want: []string{"a", "b", "c"}, got: []string{"a", "B", "c"}, diff: "  a\n- b\n+ B\n  c\n"},
		{name: "added at end", want: []string{"a"}, got: []string{"a", "b"}, diff: "  a\n+ b\n"},
		{name: "removed at start", want: []string{"a", "b"}, got: []string{"b"}, diff: "- a\n  b\n"},
		{
			name: "context is limited",
			want: []string{"1", "2", "3", "4", "5", "6", "7", "8"},
			got:  []string{"1", "2", "3", "4", "5", "6", "7", "X"},
			diff: "  6\n  7\n- 8\n+ X\n",
		},
		{
			name: "gaps are marked",
			want: []string{"a", "1", "2", "3", "4", "5", "6", "b"},
			got:  []string{"A", "1", "2", "3", "4", "5", "6", "B"},
			diff: "- a\n+ A\n  1\n  2\n  ...\n  5\n  6\n- b\n+ B\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := diffLines(tc.want, tc.got); got != tc.diff {
				t.Errorf("diffLines = %q, want %q", got, tc.diff)
			}
		})
	}
}

func TestParseKazooOutput(t *testing.T) {
	r := parseKazooOutput("ok connected\nok sequence numbers\nFAIL [lock] lock order: got ['bob'], want ['alice', 'bob']\nok later\nFAIL [auth] addauth: raised AuthFailedError ()\n")
	if !slices.Equal(r.passed, []string{"connected", "sequence numbers", "later"}) {
		t.Errorf("passed = %q", r.passed)
	}
	if want := []string{"[lock] lock order: got ['bob'], want ['alice', 'bob']", "[auth] addauth: raised AuthFailedError ()"}; !slices.Equal(r.failed, want) || r.total != "" {
		t.Errorf("failed = %q, total = %q; want failed %q", r.failed, r.total, want)
	}
	r = parseKazooOutput("ok connected\nPASS 1 checks\n")
	if r.total != "PASS 1 checks" || len(r.failed) != 0 || len(r.passed) != 1 {
		t.Errorf("passing run parsed as %+v", r)
	}
}

// TestGatedProxy checks that the proxy relays, that Hold cuts relayed
// connections and turns new ones away, and that Release lets them in.
func TestGatedProxy(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	p := newGatedProxy(t, func() string { return echo.Addr().String() })

	roundTrip := func(c net.Conn) error {
		if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
			return err
		}
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		if string(buf) != "ping" {
			t.Fatalf("relayed %q, want ping", buf)
		}
		return nil
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	c := dial()
	if err := roundTrip(c); err != nil {
		t.Fatalf("relay before Hold: %v", err)
	}
	p.Hold()
	if err := roundTrip(c); err == nil {
		t.Fatal("a connection relayed before Hold still works after it")
	}
	if err := roundTrip(dial()); err == nil {
		t.Fatal("a connection made during Hold was relayed")
	}
	p.Release()
	if err := roundTrip(dial()); err != nil {
		t.Fatalf("relay after Release: %v", err)
	}
}
