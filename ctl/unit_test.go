package ctl

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestParseACL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []zk.ACL
		err  string
	}{
		{in: "world:anyone:cdrwa", want: zk.WorldACL(zk.PermAll)},
		{in: "world:anyone:r,digest:u:h/A=:rw", want: []zk.ACL{
			{Scheme: "world", ID: "anyone", Perms: zk.PermRead},
			{Scheme: "digest", ID: "u:h/A=", Perms: zk.PermRead | zk.PermWrite},
		}},
		{in: "ip:fe80::1:ca", want: []zk.ACL{{Scheme: "ip", ID: "fe80::1", Perms: zk.PermCreate | zk.PermAdmin}}},
		{in: "auth::cdrwa", want: []zk.ACL{{Scheme: "auth", ID: "", Perms: zk.PermAll}}},
		{in: "", err: "empty"},
		{in: "world:cdrwa", err: `"world:cdrwa": want scheme:id:perms`},
		{in: "world:anyone:", err: "no permissions"},
		{in: "world:anyone:rx", err: "unknown permission 'x'"},
		{in: "world:anyone:r,", err: `"": want scheme:id:perms`},
	} {
		got, err := parseACL(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, errBadACL)):
			t.Errorf("parseACL(%q) = %v, %v; want an errBadACL containing %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || !slices.Equal(got, c.want)):
			t.Errorf("parseACL(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestPermString(t *testing.T) {
	for perms, want := range map[int32]string{
		zk.PermAll: "cdrwa", zk.PermRead: "r", zk.PermWrite | zk.PermRead: "rw",
		zk.PermAdmin | zk.PermCreate: "ca", 0: "",
	} {
		if got := permString(perms); got != want {
			t.Errorf("permString(%d) = %q, want %q", perms, got, want)
		}
	}
}

func TestCheckPath(t *testing.T) {
	for _, c := range []struct {
		path string
		seq  bool
		err  string
	}{
		{path: "/"},
		{path: "/a/b.c/..d/é"},
		{path: "/a/", seq: true},
		{path: "", err: "Path length must be > 0"},
		{path: "a", err: "Path must start with / character"},
		{path: "/a/", err: "Path must not end with / character"},
		{path: "//a", err: "empty node name specified @1"},
		{path: "/a/./b", err: "relative paths not allowed @3"},
		{path: "/a/..", err: "relative paths not allowed @4"},
		{path: "/a\x00b", err: "null character not allowed @2"},
		{path: "/a\x01", err: "invalid character @2"},
		{path: "/a\ufff5", err: "invalid character @2"},
	} {
		err := checkPath(c.path, c.seq)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("checkPath(%q, %v) = %v, want nil", c.path, c.seq, err)
		case c.err != "" && (err == nil || err.Error() != c.err || !errors.Is(err, errInvalidPath)):
			t.Errorf("checkPath(%q, %v) = %v, want %q", c.path, c.seq, err, c.err)
		}
	}
}

func TestSortJava(t *testing.T) {
	// Java compares UTF-16 code units: a character above U+FFFF (a
	// surrogate pair, 0xD8xx) sorts before U+FF21, unlike in UTF-8 order.
	names := []string{"zz", "b", "a10", "a2", "A", "_x", "c-1", "\uff21", "\U0001F600"}
	sortJava(names)
	want := []string{"A", "_x", "a10", "a2", "b", "c-1", "zz", "\U0001F600", "\uff21"}
	if !slices.Equal(names, want) {
		t.Errorf("sortJava = %q, want %q", names, want)
	}
}

func TestDataEncoding(t *testing.T) {
	for _, in := range [][]byte{nil, {}, []byte("text é"), {0xff, 0x00}} {
		d, enc := encodeData(in)
		back, err := decodeData(d, enc)
		if err != nil || !bytes.Equal(back, in) || (in == nil) != (back == nil) {
			t.Errorf("encodeData(%q) = %v %q, decoded back to %q (%v)", in, d, enc, back, err)
		}
	}
	if _, err := decodeData(new(string), "hex"); err == nil {
		t.Error("decodeData accepted encoding hex")
	}
}

func TestWriteStat(t *testing.T) {
	var b strings.Builder
	st := &zk.Stat{
		Czxid: 0x1a, Mzxid: 0x2b, Pzxid: 0x3c, Ctime: 1700000000123, Mtime: 1700000001000,
		Version: 2, Cversion: 3, Aversion: 1, EphemeralOwner: -1 << 63, DataLength: 5, NumChildren: 4,
	}
	writeStat(&b, st, time.UTC)
	want := `cZxid = 0x1a
ctime = Tue Nov 14 22:13:20 UTC 2023
mZxid = 0x2b
mtime = Tue Nov 14 22:13:21 UTC 2023
pZxid = 0x3c
cversion = 3
dataVersion = 2
aclVersion = 1
ephemeralOwner = 0x8000000000000000
dataLength = 5
numChildren = 4
`
	if b.String() != want {
		t.Errorf("writeStat:\n%s\nwant\n%s", b.String(), want)
	}
}

func TestZkErrorText(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
		code string
	}{
		{zk.ErrNoNode, "Node does not exist: /p", "NONODE"},
		{zk.ErrNodeExists, "Node already exists: /p", "NODEEXISTS"},
		{zk.ErrNotEmpty, "Node not empty: /p", "NOTEMPTY"},
		{zk.ErrBadVersion, "version No is not valid : /p", "BADVERSION"},
		{zk.ErrNoAuth, "Insufficient permission : /p", "NOAUTH"},
		{zk.ErrInvalidACL, "Acl is not valid : /p", "INVALIDACL"},
		{zk.ErrBadArguments, "Argument is not valid : /p", "BADARGUMENTS"},
		{zk.ErrNoChildrenForEphemerals, "Ephemerals cannot have children: /p", "NOCHILDRENFOREPHEMERALS"},
		{zk.ErrConnectionClosed, "KeeperErrorCode = ConnectionLoss for /p: the connection to the server failed; the outcome of a write is unknown", "CONNECTIONLOSS"},
		{errors.New("unknown error: -6"), "KeeperErrorCode = Unimplemented for /p (TTL nodes need extendedTypesEnabled=true on an Apache ZooKeeper server)", ""},
	} {
		err := onPath("/p", fmt.Errorf("recipe: op /p: %w", c.err))
		var ze *zkError
		if !errors.As(err, &ze) || err.Error() != c.want || ze.code() != c.code || !errors.Is(err, c.err) {
			t.Errorf("error %v on /p: %q (code %q), want %q (code %q)", c.err, err, ze.code(), c.want, c.code)
		}
	}
}

func TestFourLetterValues(t *testing.T) {
	got := fourLetterValues("mntr", "zk_version\t3.8.0\nzk_avg_latency\t0.5\nzk_znode_count\t7\n")
	if got["zk_version"] != "3.8.0" || got["zk_avg_latency"] != 0.5 || got["zk_znode_count"] != int64(7) {
		t.Errorf("mntr values: %#v", got)
	}
	got = fourLetterValues("srvr", "Zookeeper version: 3.8.0, built on x\nLatency min/avg/max: 0/0.1/2\nMode: standalone\nNode count: 5\n")
	if got["Mode"] != "standalone" || got["Node count"] != int64(5) || got["Latency min/avg/max"] != "0/0.1/2" {
		t.Errorf("srvr values: %#v", got)
	}
	if got := fourLetterValues("ruok", "imok"); got != nil {
		t.Errorf("ruok values: %#v, want none", got)
	}
}

func TestRelocate(t *testing.T) {
	paths := func(d *dumpFile, to string) []string {
		var out []string
		for _, n := range relocate(d, to) {
			out = append(out, n.path)
		}
		return out
	}
	sub := &dumpFile{Root: "/a", Nodes: []dumpNode{{Path: "/a"}, {Path: "/a/b"}, {Path: "/a/b/c"}}}
	all := &dumpFile{Root: "/", Nodes: []dumpNode{{Path: "/"}, {Path: "/x"}, {Path: "/x/y"}}}
	for _, c := range []struct {
		d    *dumpFile
		to   string
		want []string
	}{
		{sub, "/a", []string{"/a", "/a/b", "/a/b/c"}},
		{sub, "/z/q", []string{"/z/q", "/z/q/b", "/z/q/b/c"}},
		{sub, "/", []string{"/", "/b", "/b/c"}},
		{all, "/", []string{"/", "/x", "/x/y"}},
		{all, "/copy", []string{"/copy", "/copy/x", "/copy/x/y"}},
	} {
		if got := paths(c.d, c.to); !slices.Equal(got, c.want) {
			t.Errorf("relocate %s to %s = %q, want %q", c.d.Root, c.to, got, c.want)
		}
	}
}

// TestLoadRejectsBadDumps: load checks the whole file before it connects.
func TestLoadRejectsBadDumps(t *testing.T) {
	for _, c := range []struct{ name, text, err string }{
		{"garbage", "not json", "not a dump file"},
		{"unknown-field", `{"version":1,"root":"/a","nodes":[],"extra":1}`, `unknown field "extra"`},
		{"version", `{"version":2,"root":"/a","nodes":[]}`, "dump format version 2, this ctl reads version 1"},
		{"root", `{"version":1,"root":"a","nodes":[]}`, `root "a": Path must start with / character`},
		{"outside", `{"version":1,"root":"/a","nodes":[{"path":"/b","data":null,"acl":[]}]}`, "not below the dump's root /a"},
		{"orphan", `{"version":1,"root":"/a","nodes":[{"path":"/a","data":null,"acl":[]},{"path":"/a/b/c","data":null,"acl":[]}]}`, "its parent is not listed before it"},
		{"twice", `{"version":1,"root":"/a","nodes":[{"path":"/a","data":null,"acl":[]},{"path":"/a","data":null,"acl":[]}]}`, "listed twice"},
		{"encoding", `{"version":1,"root":"/a","nodes":[{"path":"/a","data":"zz","encoding":"hex","acl":[]}]}`, `unknown data encoding "hex"`},
		{"base64", `{"version":1,"root":"/a","nodes":[{"path":"/a","data":"!!","encoding":"base64","acl":[]}]}`, "illegal base64"},
		{"acl", `{"version":1,"root":"/a","nodes":[{"path":"/a","data":null,"acl":[{"scheme":"world","id":"anyone","perms":"x"}]}]}`, "unknown permission 'x'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Port 1 refuses: reaching the server would be a failure too,
			// but a different one.
			r := runCtl(t, "127.0.0.1:1", "load", writeFile(t, "dump.json", c.text))
			if r.code != 1 || !strings.Contains(r.stderr, c.err) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("load of a bad dump: %v\nwant exit 1 and one line containing %q", r, c.err)
			}
		})
	}
	if r := runCtl(t, "127.0.0.1:1", "load", "/nonexistent/dump.json"); r.code != 1 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("load of a missing file: %v", r)
	}
}

func TestCommandStatus(t *testing.T) {
	for script, want := range map[string]int{"exit 0": 0, "exit 4": 4, "kill -TERM $$": 128 + 15} {
		err := commandStatus(exec.Command("sh", "-c", script).Run())
		got := 0
		var ee *exitError
		if errors.As(err, &ee) {
			got = ee.code
		} else if err != nil {
			t.Fatalf("sh -c %q: %v", script, err)
		}
		if got != want {
			t.Errorf("sh -c %q: status %d, want %d", script, got, want)
		}
	}
}

// TestConnectFailure: an unreachable server is one line and exit 1.
func TestConnectFailure(t *testing.T) {
	var out, errb syncBuffer
	code := Run(t.Context(), Env{Stdout: &out, Stderr: &errb}, []string{"--zk", "127.0.0.1:1", "--timeout", "300ms", "ls", "/"})
	want := "cannot connect to 127.0.0.1:1 within 300ms: is a ZooKeeper or shepherd coord server listening there? (set --zk host:port, or a longer --timeout)\n"
	if code != 1 || errb.String() != want || out.String() != "" {
		t.Errorf("ls against a closed port: exit %d, stdout %q, stderr %q; want 1 and %q", code, out.String(), errb.String(), want)
	}
	for _, args := range [][]string{{"--zk", "h:1/bad/", "ls", "/"}, {"--timeout", "0s", "ls", "/"}} {
		code := Run(t.Context(), Env{Stdout: &out, Stderr: &errb}, args)
		if code == 0 {
			t.Errorf("ctl %s: exit 0", strings.Join(args, " "))
		}
	}
}
