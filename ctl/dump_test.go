package ctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// parseDump parses dump's output, failing the test if it is not a dump.
func parseDump(t *testing.T, out string) dumpFile {
	t.Helper()
	var d dumpFile
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dump output is not a dump: %v\n%s", err, out)
	}
	return d
}

// content is a dump without what load does not restore (stats) and with
// paths relative to the root, for comparing two dumps.
func content(d dumpFile) []dumpNode {
	out := make([]dumpNode, len(d.Nodes))
	for i, n := range d.Nodes {
		n.Stat = nil
		n.Path = strings.TrimPrefix(n.Path, d.Root)
		out[i] = n
	}
	return out
}

// writeFile writes a test file and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDumpLoadRoundTrip dumps a subtree with text, binary, null and empty
// data, ACLs and depth, deletes it, loads it back and dumps it again.
func TestDumpLoadRoundTrip(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		for _, args := range [][]string{
			{"create", "/app", "root"},
			{"create", "/app/text", "hello, wörld"},
			{"create", "/app/bin", "\xff\xfe\x00"},
			{"create", "/app/null"},
			{"create", "/app/empty", ""},
			{"create", "/app/acl", "x", "digest:ops:MjvNqSqcS5/3BBVcUhlfcpDCkWI=:cdrwa,world:anyone:rwa"},
			{"create", "/app/deep"},
			{"create", "/app/deep/a", "1"},
			{"create", "/app/deep/a/b", "2"},
			{"create", "-s", "/app/deep/seq-", "3"},
		} {
			mustCtl(t, zk, args...)
		}
		d := parseDump(t, mustCtl(t, zk, "dump", "/app"))
		if d.Version != 1 || d.Root != "/app" || len(d.Nodes) != 10 {
			t.Fatalf("dump /app: version %d, root %q, %d nodes; want 1, /app, 10", d.Version, d.Root, len(d.Nodes))
		}
		byPath := map[string]dumpNode{}
		for _, n := range d.Nodes {
			byPath[n.Path] = n
		}
		if n := byPath["/app/bin"]; n.Encoding != "base64" || n.Data == nil || *n.Data != "//4A" {
			t.Errorf("binary data dumped as %v %q, want base64 //4A", n.Data, n.Encoding)
		}
		if n := byPath["/app/null"]; n.Data != nil {
			t.Errorf("null data dumped as %q, want null", *n.Data)
		}
		if n := byPath["/app/empty"]; n.Data == nil || *n.Data != "" {
			t.Errorf("empty data dumped as %v, want \"\"", n.Data)
		}
		if n := byPath["/app/text"]; n.Data == nil || *n.Data != "hello, wörld" || n.Encoding != "" || n.Stat == nil || n.Stat.DataLength != 13 {
			t.Errorf("text node dumped as %+v", n)
		}
		file := writeFile(t, "app.json", mustCtl(t, zk, "dump", "/app"))

		mustCtl(t, zk, "deleteall", "/app")
		if out := mustCtl(t, zk, "load", file); out != "Loaded /app: 10 created, 0 updated, 0 skipped\n" {
			t.Errorf("load: %q", out)
		}
		again := parseDump(t, mustCtl(t, zk, "dump", "/app"))
		if !reflect.DeepEqual(content(again), content(d)) {
			t.Errorf("dump after load differs:\n%+v\nwant\n%+v", content(again), content(d))
		}

		// Existing nodes: nothing is written without --overwrite.
		mustCtl(t, zk, "set", "/app/text", "changed")
		r := runCtl(t, zk, "load", file)
		if r.code != 1 || !strings.Contains(r.stderr, "10 nodes exist already (first: /app); nothing was written: use --overwrite") {
			t.Errorf("load over existing nodes: %v", r)
		}
		if got := mustCtl(t, zk, "get", "/app/text"); got != "changed\n" {
			t.Errorf("a refused load wrote /app/text: %q", got)
		}
		if out := mustCtl(t, zk, "load", "--overwrite", file); out != "Loaded /app: 0 created, 10 updated, 0 skipped\n" {
			t.Errorf("load --overwrite: %q", out)
		}
		if got := mustCtl(t, zk, "get", "/app/text"); got != "hello, wörld\n" {
			t.Errorf("load --overwrite left /app/text = %q", got)
		}

		// Elsewhere, with missing ancestors, from stdin.
		r = runCtlEnv(t, Env{Stdin: strings.NewReader(readFile(t, file))}, zk, "--json", "load", "--to", "/copies/one", "-")
		if r.code != 0 || r.stdout != `{"root":"/copies/one","created":10,"updated":0,"skipped":0}`+"\n" {
			t.Fatalf("load --to from stdin: %v", r)
		}
		cp := parseDump(t, mustCtl(t, zk, "dump", "/copies/one"))
		if !reflect.DeepEqual(content(cp), content(d)) {
			t.Errorf("dump of the copy differs:\n%+v\nwant\n%+v", content(cp), content(d))
		}
	})
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDumpEphemeral dumps a lock held meanwhile: its node is marked
// ephemeral, and load skips it with a warning.
func TestDumpEphemeral(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		h := startHolder(t, zk, "lock", "/jobs/lock")
		d := parseDump(t, mustCtl(t, zk, "dump", "/jobs"))
		if len(d.Nodes) != 3 || !d.Nodes[2].Ephemeral || d.Nodes[1].Ephemeral {
			t.Fatalf("dump /jobs while locked: %+v; want /jobs, /jobs/lock and an ephemeral lock node", d.Nodes)
		}
		r := runCtl(t, zk, "load", "--to", "/copy", writeFile(t, "jobs.json", mustCtl(t, zk, "dump", "/jobs")))
		if r.code != 0 || r.stdout != "Loaded /copy: 2 created, 0 updated, 1 skipped\n" ||
			!strings.Contains(r.stderr, "warning: skipped 1 ephemeral nodes") {
			t.Errorf("load of a dump with an ephemeral node: %v", r)
		}
		if out := mustCtl(t, zk, "ls", "/copy/lock"); out != "[]\n" {
			t.Errorf("ls /copy/lock = %q, want no children", out)
		}
		h.sigs <- os.Interrupt
		h.wait(t)
	})
}

// TestDumpSkipsZooKeeper dumps the whole tree of a server (no chroot):
// the server's own /zookeeper subtree is left out. Other tests' nodes
// are there too, some readable only with the tests' credential.
func TestDumpSkipsZooKeeper(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		mustCtl(t, chrootOf(t, tg), "create", "/x")
		d := parseDump(t, mustCtlAuth(t, tg.Addr, "dump", "/"))
		if len(d.Nodes) < 3 || d.Nodes[0].Path != "/" {
			t.Fatalf("dump / has %d nodes, the first %+v", len(d.Nodes), d.Nodes[0])
		}
		for _, n := range d.Nodes {
			if within(n.Path, "/zookeeper") {
				t.Errorf("dump / includes %s", n.Path)
			}
		}
	})
}
