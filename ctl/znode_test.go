package ctl

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// volatile are the parts of ctl's (and zkCli's) output that differ from
// run to run and server to server: zxids, times, session ids.
var volatile = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`(?m)^([cmp]Zxid) = 0x[0-9a-f]+$`), "$1 = ZXID"},
	// Strict: a time in another format than java.util.Date's (in UTC, as
	// the tests run both tools) stays, and fails the comparison.
	{regexp.MustCompile(`(?m)^([cm]time) = [A-Z][a-z]{2} [A-Z][a-z]{2} [0-3]\d [0-2]\d:[0-5]\d:[0-5]\d UTC \d{4}$`), "$1 = TIME"},
	{regexp.MustCompile(`(?m)^ephemeralOwner = 0x0*[1-9a-f][0-9a-f]*$`), "ephemeralOwner = SESSION"},
}

// normalize replaces the volatile parts of output by placeholders.
func normalize(s string) string {
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.repl)
	}
	return s
}

// statBlock is the normalized stat block of a persistent node.
func statBlock(cversion, dataVersion, aclVersion, dataLength, numChildren int) string {
	return fmt.Sprintf("cZxid = ZXID\nctime = TIME\nmZxid = ZXID\nmtime = TIME\npZxid = ZXID\n"+
		"cversion = %d\ndataVersion = %d\naclVersion = %d\nephemeralOwner = 0x0\n"+
		"dataLength = %d\nnumChildren = %d\n", cversion, dataVersion, aclVersion, dataLength, numChildren)
}

// step is one ctl command and what it must print.
type step struct {
	args []string
	code int
	out  string // stdout, normalized
	err  string // stderr exactly, or with errContains a part of it
	// errContains makes err a substring to find rather than the whole.
	errContains bool
}

func words(s string) []string { return strings.Fields(s) }

// runSteps runs the steps in order, each as its own ctl process would.
func runSteps(t *testing.T, connect string, steps []step) {
	t.Helper()
	for i, st := range steps {
		r := runCtl(t, connect, st.args...)
		where := fmt.Sprintf("step %d: ctl %s", i, strings.Join(st.args, " "))
		if r.code != st.code {
			t.Errorf("%s: exit status %d, want %d\n%v", where, r.code, st.code, r)
			continue
		}
		if got := normalize(r.stdout); got != st.out {
			t.Errorf("%s: stdout\n%q\nwant\n%q", where, got, st.out)
		}
		switch {
		case st.errContains && !strings.Contains(r.stderr, st.err):
			t.Errorf("%s: stderr %q does not contain %q", where, r.stderr, st.err)
		case !st.errContains && r.stderr != st.err:
			t.Errorf("%s: stderr\n%q\nwant\n%q", where, r.stderr, st.err)
		}
	}
}

// TestZnodeVerbs runs every zkCli verb, its flags and its errors, and
// checks ctl prints what zkCli prints, on both servers.
func TestZnodeVerbs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		runSteps(t, chrootOf(t, tg), []step{
			{args: words("create /a hello"), out: "Created /a\n"},
			{args: words("create /a x"), code: 1, err: "Node already exists: /a\n"},
			{args: words("create /a/b"), out: "Created /a/b\n"},
			{args: words("create -s /a/s data"), out: "Created /a/s0000000001\n"},
			{args: words("create -e /a/e"), out: "Created /a/e\n", err: "is ephemeral", errContains: true},
			{args: words("create -c /c"), out: "Created /c\n"},
			{args: words("create -t 60000 /t"), out: "Created /t\n"},
			{args: words("create -s -t 60000 /t/n"), out: "Created /t/n0000000000\n"},
			{args: []string{"create", "/empty", ""}, out: "Created /empty\n"},
			{args: words("create /acl x world:anyone:rw"), out: "Created /acl\n"},
			{args: words("create /x/y/z"), code: 1, err: "Node does not exist: /x/y/z\n"},
			{args: words("create -s /a/"), code: 1, err: "create -s /a/: nameless sequential nodes are not supported: give a name prefix, as in /a/n-\n"},

			{args: words("ls /a"), out: "[b, s0000000001]\n"},
			{args: words("ls -s /a"), out: "[b, s0000000001]\n" + statBlock(4, 0, 0, 5, 2)},
			{args: words("ls /a/b"), out: "[]\n"},
			{args: words("ls -R /a"), out: "/a\n/a/b\n/a/s0000000001\n"},
			{args: words("ls -R /"), out: "/\n/a\n/acl\n/c\n/empty\n/t\n/a/b\n/a/s0000000001\n/t/n0000000000\n"},
			{args: words("ls /nope"), code: 1, err: "Node does not exist: /nope\n"},

			{args: words("get /a"), out: "hello\n"},
			{args: words("get -s /a"), out: "hello\n" + statBlock(4, 0, 0, 5, 2)},
			{args: words("get /a/b"), out: "null\n"},
			{args: words("get /empty"), out: "\n"},
			{args: words("get /nope"), code: 1, err: "Node does not exist: /nope\n"},

			{args: words("set /a v2")},
			{args: words("set -v 5 /a v3"), code: 1, err: "version No is not valid : /a\n"},
			{args: words("set -s -v 1 /a v3"), out: statBlock(4, 2, 0, 2, 2)},
			{args: words("set /nope x"), code: 1, err: "Node does not exist: /nope\n"},
			{args: words("stat /a"), out: statBlock(4, 2, 0, 2, 2)},
			{args: words("stat /nope"), code: 1, err: "Node does not exist: /nope\n"},

			{args: words("delete /a"), code: 1, err: "Node not empty: /a\n"},
			{args: words("delete -v 3 /a/b"), code: 1, err: "version No is not valid : /a/b\n"},
			{args: words("delete -v 0 /a/b")},
			{args: words("delete /nope"), code: 1, err: "Node does not exist: /nope\n"},

			{args: words("getacl /a"), out: "'world,'anyone\n: cdrwa\n"},
			{args: words("getacl /acl"), out: "'world,'anyone\n: rw\n"},
			{args: words("setacl /a world:anyone:cdra")},
			{args: words("getAcl -s /a"), out: "'world,'anyone\n: cdra\n" + statBlock(5, 2, 1, 2, 1)},
			{args: words("setacl -v 0 /a world:anyone:cdrwa"), code: 1, err: "version No is not valid : /a\n"},
			{args: words("setAcl -s -v 1 /a world:anyone:cdrwa"), out: statBlock(5, 2, 2, 2, 1)},
			{args: words("setacl -R /t world:anyone:cdrw")},
			{args: words("getacl /t/n0000000000"), out: "'world,'anyone\n: cdrw\n"},
			{args: words("setacl /a foo:bar:rw"), code: 1, err: "Acl is not valid : /a\n"},
			{args: words("setacl /a world:anyone:q"), code: 1,
				err: "ctl: bad ACL \"world:anyone:q\": unknown permission 'q': use letters of cdrwa (create, delete, read, write, admin)\n"},
			{args: words("getacl /nope"), code: 1, err: "Node does not exist: /nope\n"},
			{args: words("setacl /nope world:anyone:r"), code: 1, err: "Node does not exist: /nope\n"},

			{args: words("sync /a"), out: "Sync is OK\n"},

			{args: words("deleteall -b 1 /t")},
			{args: words("deleteall /a")},
			{args: words("ls /"), out: "[acl, c, empty]\n"},
			{args: words("deleteall /nope"), code: 1, err: "Node does not exist: /nope\n"},
			{args: words("deleteall /"), code: 1, err: "deleteall /: refusing to delete the whole tree; delete its children one by one\n"},

			// Bad input: one line, exit 1.
			{args: words("get a"), code: 1, err: "Path must start with / character\n"},
			{args: words("get /a/"), code: 1, err: "Path must not end with / character\n"},
			{args: words("get /a//b"), code: 1, err: "empty node name specified @3\n"},
			{args: words("get /a/../b"), code: 1, err: "relative paths not allowed @4\n"},
			// Usage errors: one line and a hint naming the help, exit 2.
			{args: words("get"), code: 2, err: "get: missing argument (usage: get [-s] [-w] path)\nrun 'shepherd ctl get --help' for usage\n"},
			{args: words("get /a -s"), code: 2, err: "get: unexpected argument \"-s\": flags go before the path (usage: get [-s] [-w] path)\nrun 'shepherd ctl get --help' for usage\n"},
			{args: words("set /a"), code: 2, err: "set: missing argument (usage: set [-s] [-v version] path data)\nrun 'shepherd ctl set --help' for usage\n"},
			{args: words("set -v -2 /a x"), code: 2, err: "set: -v -2: want a version from 0 to 2147483647, or -1 for any\nrun 'shepherd ctl set --help' for usage\n"},
			{args: words("create -c -e /x"), code: 2, err: "create: -c cannot be combined with -s or -e: containers are neither sequential nor ephemeral\nrun 'shepherd ctl create --help' for usage\n"},
			{args: words("create -t 0 /x"), code: 2, err: "create: -t 0: want a TTL in milliseconds from 1 to 1099511627775\nrun 'shepherd ctl create --help' for usage\n"},
			{args: words("create -e -t 5 /x"), code: 2, err: "create: -t cannot be combined with -e or -c: only persistent nodes have a TTL\nrun 'shepherd ctl create --help' for usage\n"},
			{args: words("ls -x /"), code: 2, err: "ls: flag provided but not defined: -x (usage: ls [-s] [-w] [-R] path)\nrun 'shepherd ctl ls --help' for usage\n"},
			{args: words("ls -R -w /"), code: 2, err: "ls: -R and -w cannot be combined: use \"watch -R path\" to follow a subtree\nrun 'shepherd ctl ls --help' for usage\n"},
			{args: words("deleteall -b 0 /x"), code: 2, err: "deleteall: -b 0: want a batch size of at least 1\nrun 'shepherd ctl deleteall --help' for usage\n"},
			{args: words("nosuch /"), code: 2, err: "unknown command \"nosuch\"\nrun 'shepherd ctl --help' for usage\n"},
			{args: nil, code: 2, err: "no command given\nrun 'shepherd ctl --help' for usage\n"},
		})
	})
}

// TestJSONOutput checks the --json document of every verb that prints one.
func TestJSONOutput(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		mustCtl(t, zk, "create", "/j", "text")
		mustCtl(t, zk, "create", "/j/bin", "\xff\x00\x01")
		mustCtl(t, zk, "create", "/j/null")

		type doc = map[string]any
		cases := []struct {
			args []string
			code int
			want doc // fields that must be there, with these values
			// stdoutEmpty: the document goes to stderr (an error).
			stderr bool
		}{
			{args: words("get /j"), want: doc{"path": "/j", "data": "text"}},
			{args: words("get /j/bin"), want: doc{"path": "/j/bin", "data": base64.StdEncoding.EncodeToString([]byte("\xff\x00\x01")), "encoding": "base64"}},
			{args: words("get /j/null"), want: doc{"path": "/j/null", "data": nil}},
			{args: words("ls /j"), want: doc{"path": "/j", "children": []any{"bin", "null"}}},
			{args: words("ls -R /j"), want: doc{"path": "/j", "paths": []any{"/j", "/j/bin", "/j/null"}}},
			{args: words("create -s /j/s"), want: doc{"path": "/j/s0000000002"}},
			{args: words("stat /j"), want: doc{"path": "/j"}},
			{args: words("set /j new"), want: doc{"path": "/j"}},
			{args: words("getacl /j"), want: doc{"path": "/j", "acl": []any{doc{"scheme": "world", "id": "anyone", "perms": "cdrwa"}}}},
			{args: words("setacl /j world:anyone:cdrwa"), want: doc{"path": "/j"}},
			{args: words("sync /j"), want: doc{"path": "/j", "synced": true}},
			{args: words("delete /j/s0000000002"), want: doc{"path": "/j/s0000000002", "deleted": float64(1)}},
			{args: words("deleteall /j"), want: doc{"path": "/j", "deleted": float64(3)}},
			{args: words("get /j"), code: 1, stderr: true, want: doc{"error": "Node does not exist: /j", "code": "NONODE"}},
		}
		for _, c := range cases {
			r := runCtl(t, zk, append([]string{"--json"}, c.args...)...)
			if r.code != c.code {
				t.Errorf("ctl --json %s: %v", strings.Join(c.args, " "), r)
				continue
			}
			text := r.stdout
			if c.stderr {
				text = r.stderr
			}
			if strings.Count(text, "\n") != 1 {
				t.Errorf("ctl --json %s: want one line of JSON, got %q", strings.Join(c.args, " "), text)
				continue
			}
			var got doc
			if err := json.Unmarshal([]byte(text), &got); err != nil {
				t.Errorf("ctl --json %s: %v in %q", strings.Join(c.args, " "), err, text)
				continue
			}
			for k, v := range c.want {
				if g, ok := got[k]; !ok || fmt.Sprint(g) != fmt.Sprint(v) {
					t.Errorf("ctl --json %s: %q = %#v, want %#v (document %s)", strings.Join(c.args, " "), k, g, v, text)
				}
			}
			if st, ok := got["stat"].(doc); ok {
				if _, ok := st["dataVersion"].(float64); !ok {
					t.Errorf("ctl --json %s: stat.dataVersion is not a number: %s", strings.Join(c.args, " "), text)
				}
			}
		}
	})
}

// TestDigestAuth creates a node readable only with a digest credential
// and reads it with and without --auth.
func TestDigestAuth(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		sum := sha1.Sum([]byte("ops:secret"))
		id := "ops:" + base64.StdEncoding.EncodeToString(sum[:])
		runSteps(t, zk, []step{
			// The chroot first, open: made with ops's credential it would be
			// ops's alone, and other tests dump the whole tree.
			{args: words("ls /"), out: "[]\n"},
			{args: words("--auth digest:ops:secret create /s data auth::cdrwa"), out: "Created /s\n"},
			{args: words("get /s"), code: 1, err: "Insufficient permission : /s\n"},
			{args: words("--auth digest:ops:wrong get /s"), code: 1, err: "Insufficient permission : /s\n"},
			{args: words("--auth digest:ops:secret get /s"), out: "data\n"},
			{args: words("--auth digest:ops:secret getacl /s"), out: "'digest,'" + id + "\n: cdrwa\n"},
			{args: words("--auth ops:secret get /s"), out: "data\n"},
			{args: words("--auth nocolon get /s"), code: 2, err: "--auth: recipe: bad credential: want user:password or digest:user:password, got 7 bytes without a colon\nrun 'shepherd ctl --help' for usage\n"},
			{args: words("--auth digest:ops:secret delete /s")},
			// Without an ACL argument a node gets the credential's policy,
			// not zkCli's world:anyone: only ops may write it.
			{args: words("--auth ops:secret create /p data"), out: "Created /p\n"},
			{args: words("--auth ops:secret getacl /p"), out: "'digest,'" + id + "\n: cdrwa\n"},
			{args: words("set /p x"), code: 1, err: "Insufficient permission : /p\n"},
			{args: words("--auth ops:secret delete /p")}, // other tests dump the whole tree
		})
	})
}
