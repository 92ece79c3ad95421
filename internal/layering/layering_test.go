package layering

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/shepherd-dev/shepherd"

// A rule forbids the packages of From to depend on any package of Never:
// directly or not for a package of this module or a third party, directly
// for the standard library (fmt brings in os; what a rule keeps out is the
// package's own I/O). Says is the sentence of Doc that states the rule,
// quoted so that the doc and the test cannot drift apart.
type rule struct {
	From  []string
	Never []string
	Doc   string // file, relative to the module root
	Says  string
}

// serverSide is the coordination server: everything under coord/ that
// is not a client of it.
var serverSide = []string{"coord", "coord/proto", "coord/tree", "coord/watch", "coord/wal", "coord/zpath"}

var zkClients = []string{"github.com/go-zookeeper/zk", module + "/coord/recipe"}

var rules = []rule{
	{
		From: serverSide, Never: zkClients,
		Doc: "coord/doc.go", Says: "The server side of coord never imports a ZooKeeper client.",
	},
	{
		From: []string{"replication"}, Never: zkClients,
		Doc: "replication/doc.go", Says: "This package must not import the coordination client",
	},
	{
		From: []string{"replication/natssink"}, Never: zkClients,
		Doc: "replication/natssink/doc.go", Says: "never import the coordination\n// client",
	},
	{
		From: []string{"replication/kafkasink"}, Never: zkClients,
		Doc: "replication/kafkasink/doc.go", Says: "never import the coordination\n// client",
	},
	{
		From: []string{"replication/changeevent"}, Never: []string{"net", "os"},
		Doc: "replication/changeevent/changeevent.go", Says: "Everything here is a pure\n// function of the segment, no I/O",
	},
	{
		From: []string{"coord/watch"}, Never: []string{"net", module + "/coord/tree"},
		Doc: "coord/watch/doc.go", Says: "It never talks to the network, starts no\n// goroutines, knows nothing about the data tree",
	},
	{
		From: []string{"coord/tree"}, Never: []string{"net", "log", "log/slog", module + "/coord/watch"},
		Doc: "coord/tree/doc.go", Says: "no networking, no logging",
	},
	{
		From: []string{"coord/proto"}, Never: []string{"net", "os"},
		Doc: "coord/proto/doc.go", Says: "Everything here is a pure function of bytes: no I/O",
	},
	{
		From: []string{"coord/wal"}, Never: []string{module + "/coord/tree", module + "/coord/proto"},
		Doc: "coord/wal/doc.go", Says: "It knows nothing about the data tree or the ZooKeeper protocol",
	},
	{
		From: []string{"internal/proc"}, Never: []string{module + "/core", module + "/scheduler", module + "/collector"},
		Doc: "internal/proc/doc.go", Says: "It wires; it must never know what a core, a scheduler or a collector\n// does",
	},
	{
		// The shipped binary is the one place every package meets.
		From: []string{"cmd/shepherd"}, Never: []string{module + "/internal/testpeer", module + "/internal/coordtest", module + "/internal/crashload", module + "/internal/sinktest"},
		Doc: "internal/testpeer/doc.go", Says: "This package is for tests only; nothing outside _test.go files and test\n// helpers may import it.",
	},
}

// TestDocsStateTheRules: each rule's sentence is still in its doc.
func TestDocsStateTheRules(t *testing.T) {
	root := moduleRoot(t)
	for _, r := range rules {
		doc, err := os.ReadFile(filepath.Join(root, r.Doc))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(doc, []byte(r.Says)) {
			t.Errorf("%s no longer says %q: update the rule in this test with the doc", r.Doc, r.Says)
		}
	}
}

// TestImportRules: no package depends on what its doc forbids.
func TestImportRules(t *testing.T) {
	root := moduleRoot(t)
	for _, r := range rules {
		for _, from := range r.From {
			pkg := module + "/" + from
			deps, imports := listDeps(t, root, pkg)
			for _, never := range r.Never {
				if std(never) && !imports[never] || !std(never) && !deps[never] {
					continue
				}
				t.Errorf("%s depends on %s, which %s forbids (%q); it comes in through %s",
					pkg, never, r.Doc, firstLine(r.Says), strings.Join(importersOf(t, root, pkg, never), ", "))
			}
		}
	}
}

// TestRulesCatchAForbiddenArrow: the check fails on a dependency it
// forbids, so that a passing TestImportRules means something.
func TestRulesCatchAForbiddenArrow(t *testing.T) {
	root := moduleRoot(t)
	deps, imports := listDeps(t, root, module+"/coord/recipe")
	if !deps["github.com/go-zookeeper/zk"] || !imports["net"] {
		t.Fatal("coord/recipe depends on neither go-zookeeper nor net: listDeps reads nothing")
	}
}

// std reports whether pkg is in the standard library.
func std(pkg string) bool {
	first, _, _ := strings.Cut(pkg, "/")
	return !strings.Contains(first, ".")
}

// listDeps returns the packages pkg depends on, directly or not, and
// those it imports itself, outside its tests.
func listDeps(t *testing.T, root, pkg string) (deps, imports map[string]bool) {
	t.Helper()
	deps, imports = map[string]bool{}, map[string]bool{}
	for p, imps := range importGraph(t, root, pkg) {
		if p != pkg {
			deps[p] = true
			continue
		}
		for _, imp := range imps {
			imports[imp] = true
		}
	}
	return deps, imports
}

// importersOf returns the packages among pkg and its dependencies that
// import target directly: where the forbidden arrow starts.
func importersOf(t *testing.T, root, pkg, target string) []string {
	t.Helper()
	var from []string
	for p, imps := range importGraph(t, root, pkg) {
		if slices.Contains(imps, target) {
			from = append(from, p)
		}
	}
	slices.Sort(from)
	return from
}

// importGraph maps pkg and each package it depends on (outside tests) to
// the packages it imports.
func importGraph(t *testing.T, root, pkg string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, pkg)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	g := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		g[fields[0]] = fields[1:]
	}
	return g
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// moduleRoot is the directory of go.mod, two levels above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return root
}
