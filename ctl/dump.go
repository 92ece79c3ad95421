package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/coord/zpath"
	"github.com/shepherd-dev/shepherd/internal/boundedfile"
)

// dumpVersion is the version of the dump format; load refuses others.
const dumpVersion = 1

// dumpFile is what dump writes and load reads (docs/ctl.md describes it).
// Nodes are in breadth-first order: every node after its parent.
type dumpFile struct {
	Version int        `json:"version"`
	Root    string     `json:"root"`
	Nodes   []dumpNode `json:"nodes"`
}

// dumpNode is one znode of a dump. Stat is for the reader; load ignores it.
type dumpNode struct {
	Path      string    `json:"path"`
	Data      *string   `json:"data"`
	Encoding  string    `json:"encoding,omitempty"`
	ACL       []jsonACL `json:"acl"`
	Ephemeral bool      `json:"ephemeral,omitempty"`
	Stat      *jsonStat `json:"stat,omitempty"`
}

func (r *runner) dumpCommand() *cli.Command {
	return &cli.Command{
		Name:      "dump",
		Usage:     "print a subtree (data, ACLs, stats) as JSON, for load",
		ArgsUsage: "path",
		Description: `Walks the subtree breadth first and prints it as one JSON document. The server's
own /zookeeper subtree is left out. The walk is not a snapshot: a subtree that changes
meanwhile may be caught half-way.`,
		Action: r.dump,
	}
}

func (r *runner) dump(c *cli.Context) error {
	args, err := argsN(c, 1, 1)
	if err != nil {
		return err
	}
	root, err := pathArg(args, false)
	if err != nil {
		return err
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	skip := func(string) bool { return false }
	if s.Chroot() == "" {
		// Below a chroot, /zookeeper is an ordinary node of the user's.
		skip = func(p string) bool { return within(p, "/zookeeper") }
	}
	paths, err := r.subtree(s, root, skip)
	if err != nil {
		return err
	}
	d := dumpFile{Version: dumpVersion, Root: root, Nodes: make([]dumpNode, 0, len(paths))}
	for _, p := range paths {
		n, err := r.dumpNode(s, p)
		if errors.Is(err, zk.ErrNoNode) && p != root {
			continue // deleted while we walked
		}
		if err != nil {
			return onPath(p, err)
		}
		d.Nodes = append(d.Nodes, n)
	}
	enc := json.NewEncoder(r.env.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// dumpNode reads one node's data, stat and ACL.
func (r *runner) dumpNode(s *recipe.Session, p string) (dumpNode, error) {
	var data []byte
	var st *zk.Stat
	var acl []zk.ACL
	err := r.retry(s, func(ctx context.Context) (err error) {
		if data, st, err = s.Get(ctx, p); err != nil {
			return err
		}
		acl, _, err = s.GetACL(ctx, p)
		return err
	})
	if err != nil {
		return dumpNode{}, err
	}
	d, enc := encodeData(data)
	return dumpNode{
		Path: p, Data: d, Encoding: enc, ACL: toJSONACL(acl),
		Ephemeral: st.EphemeralOwner != 0, Stat: toJSONStat(st),
	}, nil
}

func (r *runner) loadCommand() *cli.Command {
	return &cli.Command{
		Name:      "load",
		Usage:     "recreate a subtree from a dump (file, or - for stdin)",
		ArgsUsage: "[--overwrite] [--to path] file",
		Description: `Creates the dump's nodes with their data and ACLs, parents first, and the
missing ancestors of its root as empty nodes. If any node exists already nothing is
written, unless --overwrite, which sets the data and ACL of existing nodes. Ephemeral
nodes belong to sessions, not to the data: they are skipped with a warning. Container
and TTL nodes come back as persistent nodes (ZooKeeper does not tell clients a node's
kind). The root node / is never created; --overwrite sets its data and ACL.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "overwrite", Usage: "replace the data and ACL of nodes that exist"},
			&cli.StringFlag{Name: "to", Usage: "load the dump's root at this path instead of its own"},
		},
		Action: r.load,
	}
}

// loadResult is load's --json output.
type loadResult struct {
	Root    string `json:"root"`
	Created int    `json:"created"`
	Updated int    `json:"updated"`
	Skipped int    `json:"skipped"`
}

func (r *runner) load(c *cli.Context) error {
	args, err := argsN(c, 1, 1)
	if err != nil {
		return err
	}
	d, err := r.readDump(args[0])
	if err != nil {
		return err
	}
	to := d.Root
	if c.IsSet("to") {
		to = c.String("to")
		if err := checkPath(to, false); err != nil {
			return fmt.Errorf("load --to %s: %w", to, err)
		}
	}
	nodes := relocate(d, to)
	s, err := r.session()
	if err != nil {
		return err
	}
	overwrite := c.Bool("overwrite")
	var ephemerals []string
	var todo []loadNode
	for _, n := range nodes {
		if n.ephemeral {
			ephemerals = append(ephemerals, n.path)
			continue
		}
		if n.path == "/" && !overwrite {
			continue
		}
		todo = append(todo, n)
	}
	if !overwrite {
		if err := r.refuseExisting(s, todo); err != nil {
			return err
		}
	}
	res := loadResult{Root: to, Skipped: len(nodes) - len(todo)}
	if to != "/" {
		ctx, cancel := r.opCtx()
		err := s.EnsurePath(ctx, zpath.Parent(to))
		cancel()
		if err != nil {
			return fmt.Errorf("load: create the ancestors of %s: %w", to, onPath(zpath.Parent(to), err))
		}
	}
	for _, n := range todo {
		created, err := r.loadNode(s, n, overwrite)
		if err != nil {
			r.recordZnode("znode.load", to, nil, map[string]any{"file": args[0], "created": res.Created, "updated": res.Updated}, err)
			return fmt.Errorf("load: %w (%d nodes created, %d updated before it)", err, res.Created, res.Updated)
		}
		if created {
			res.Created++
		} else {
			res.Updated++
		}
	}
	r.recordZnode("znode.load", to, nil, map[string]any{"file": args[0], "created": res.Created, "updated": res.Updated, "skipped": res.Skipped}, nil)
	if len(ephemerals) > 0 {
		r.warn("skipped %d ephemeral nodes, which belong to sessions, not to the data: %s", len(ephemerals), strings.Join(ephemerals, ", "))
	}
	if r.json {
		return writeJSON(r.env.Stdout, res)
	}
	fmt.Fprintf(r.env.Stdout, "Loaded %s: %d created, %d updated, %d skipped\n", to, res.Created, res.Updated, res.Skipped)
	return nil
}

// readDump reads and checks a dump file ("-": stdin).
func (r *runner) readDump(name string) (*dumpFile, error) {
	data, err := r.readInput("load", name, boundedfile.MaxDump)
	if err != nil {
		return nil, err
	}
	var d dumpFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("load %s: not a dump file: %w", name, err)
	}
	if d.Version != dumpVersion {
		return nil, fmt.Errorf("load %s: dump format version %d, this ctl reads version %d", name, d.Version, dumpVersion)
	}
	if err := checkPath(d.Root, false); err != nil {
		return nil, fmt.Errorf("load %s: root %q: %w", name, d.Root, err)
	}
	seen := map[string]bool{}
	for i, n := range d.Nodes {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("load %s: node %d (%s): %s", name, i, n.Path, fmt.Sprintf(format, args...))
		}
		if err := checkPath(n.Path, false); err != nil {
			return nil, bad("%v", err)
		}
		if !within(n.Path, d.Root) {
			return nil, bad("not below the dump's root %s", d.Root)
		}
		if seen[n.Path] {
			return nil, bad("listed twice")
		}
		if n.Path != d.Root && !seen[zpath.Parent(n.Path)] {
			return nil, bad("its parent is not listed before it")
		}
		if _, err := decodeData(n.Data, n.Encoding); err != nil {
			return nil, bad("%v", err)
		}
		if _, err := fromJSONACL(n.ACL); err != nil {
			return nil, bad("%v", err)
		}
		seen[n.Path] = true
	}
	return &d, nil
}

// loadNode is a dump node ready to load, at its destination path.
type loadNode struct {
	path      string
	data      []byte
	acl       []zk.ACL
	ephemeral bool
}

// relocate moves the (checked) dump's nodes from its root to to.
func relocate(d *dumpFile, to string) []loadNode {
	out := make([]loadNode, len(d.Nodes))
	for i, n := range d.Nodes {
		rest := strings.TrimPrefix(n.Path, d.Root)
		if d.Root == "/" && n.Path != "/" {
			rest = n.Path
		}
		p := to + rest
		switch {
		case rest == "":
			p = to
		case to == "/":
			p = rest
		}
		data, _ := decodeData(n.Data, n.Encoding)
		acl, _ := fromJSONACL(n.ACL)
		out[i] = loadNode{path: p, data: data, acl: acl, ephemeral: n.Ephemeral}
	}
	return out
}

// refuseExisting fails, before anything is written, if a node to load
// exists already.
func (r *runner) refuseExisting(s *recipe.Session, nodes []loadNode) error {
	var existing []string
	for _, n := range nodes {
		var ok bool
		err := r.retry(s, func(ctx context.Context) (err error) {
			ok, _, err = s.Exists(ctx, n.path)
			return err
		})
		if err != nil {
			return onPath(n.path, err)
		}
		if ok {
			existing = append(existing, n.path)
		}
	}
	if len(existing) == 0 {
		return nil
	}
	return fmt.Errorf("load: %d of the %d nodes exist already (first: %s); nothing was written: use --overwrite to replace their data and ACLs, or --to to load elsewhere",
		len(existing), len(nodes), existing[0])
}

// loadNode creates n, or with overwrite sets the data and ACL of an
// existing n, and reports whether it created it.
func (r *runner) loadNode(s *recipe.Session, n loadNode, overwrite bool) (bool, error) {
	acl := n.acl
	if len(acl) == 0 {
		acl = nil // the session's policy (open without a credential)
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	if n.path != "/" {
		_, err := s.Create(ctx, n.path, n.data, zk.FlagPersistent, acl)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) || !overwrite {
			return false, onPath(n.path, err)
		}
	}
	if _, err := s.Set(ctx, n.path, n.data, -1); err != nil {
		return false, onPath(n.path, err)
	}
	if acl == nil {
		acl = s.NodeACL()
	}
	if _, err := s.SetACL(ctx, n.path, acl, -1); err != nil {
		return false, onPath(n.path, err)
	}
	return false, nil
}
