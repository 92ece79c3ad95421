package ctl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// znodeCommands are zkCli.sh's verbs.
func (r *runner) znodeCommands() []*cli.Command {
	s := func(usage string) *cli.BoolFlag { return &cli.BoolFlag{Name: "s", Usage: usage} }
	w := func(usage string) *cli.BoolFlag { return &cli.BoolFlag{Name: "w", Usage: usage} }
	v := func(usage string) *cli.IntFlag { return &cli.IntFlag{Name: "v", Value: -1, Usage: usage} }
	const watchUsage = "wait for the watch to fire, and print the event"
	return []*cli.Command{{
		Name:      "ls",
		Usage:     "list a node's children",
		ArgsUsage: "[-s] [-w] [-R] path",
		Flags:     []cli.Flag{s("also print the node's stat"), w(watchUsage), &cli.BoolFlag{Name: "R", Usage: "list the whole subtree, breadth first"}},
		Action:    r.ls,
	}, {
		Name:      "create",
		Usage:     "create a node",
		ArgsUsage: "[-s] [-e] [-c] [-t ttl] path [data] [acl]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "s", Usage: "sequential: the server appends a 10-digit number to the name"},
			&cli.BoolFlag{Name: "e", Usage: "ephemeral: deleted when this command's session ends"},
			&cli.BoolFlag{Name: "c", Usage: "container: deleted by the server once its last child is"},
			&cli.Int64Flag{Name: "t", Usage: "TTL in milliseconds: deleted by the server after that long without a change or a child"},
		},
		Action: r.create,
	}, {
		Name:      "get",
		Usage:     "print a node's data",
		ArgsUsage: "[-s] [-w] path",
		Flags:     []cli.Flag{s("also print the node's stat"), w(watchUsage)},
		Action:    r.get,
	}, {
		Name:      "set",
		Usage:     "write a node's data",
		ArgsUsage: "[-s] [-v version] path data",
		Flags:     []cli.Flag{s("print the node's new stat"), v("write only if the data version is this")},
		Action:    r.set,
	}, {
		Name:      "stat",
		Usage:     "print a node's stat",
		ArgsUsage: "[-w] path",
		Flags:     []cli.Flag{w(watchUsage)},
		Action:    r.stat,
	}, {
		Name:      "delete",
		Usage:     "delete a node without children",
		ArgsUsage: "[-v version] path",
		Flags:     []cli.Flag{v("delete only if the data version is this")},
		Action:    r.delete,
	}, {
		Name:      "deleteall",
		Usage:     "delete a node and its whole subtree",
		ArgsUsage: "[-b batch] path",
		Flags:     []cli.Flag{&cli.IntFlag{Name: "b", Value: 1000, Usage: "deletes per multi request"}},
		Action:    r.deleteAll,
	}, {
		Name:      "getacl",
		Aliases:   []string{"getAcl"},
		Usage:     "print a node's ACL",
		ArgsUsage: "[-s] path",
		Flags:     []cli.Flag{s("also print the node's stat")},
		Action:    r.getACL,
	}, {
		Name:      "setacl",
		Aliases:   []string{"setAcl"},
		Usage:     "set a node's ACL: scheme:id:perms[,…], perms letters of cdrwa",
		ArgsUsage: "[-s] [-v version] [-R] path acl",
		Flags: []cli.Flag{
			s("print the node's new stat"),
			v("set only if the ACL version is this"),
			&cli.BoolFlag{Name: "R", Usage: "set it on the whole subtree"},
		},
		Action: r.setACL,
	}, {
		Name:      "sync",
		Usage:     "make the server catch up with the ensemble's leader before the next read",
		ArgsUsage: "path",
		Action:    r.sync,
	}}
}

// pathCommand is the start of a verb that takes a path: between min and
// max arguments, the first a valid path, and a session to the servers.
func (r *runner) pathCommand(c *cli.Context, min, max int, sequential bool) (args []string, p string, s *recipe.Session, err error) {
	if args, err = argsN(c, min, max); err != nil {
		return nil, "", nil, err
	}
	if p, err = pathArg(args, sequential); err != nil {
		return nil, "", nil, err
	}
	s, err = r.session()
	return args, p, s, err
}

// pathArg returns a command's path argument, checked.
func pathArg(args []string, sequential bool) (string, error) {
	p := args[0]
	if err := checkPath(p, sequential); err != nil {
		return "", err
	}
	return p, nil
}

// version reads a -v flag.
func version(c *cli.Context) (int32, error) {
	v := c.Int("v")
	if v < -1 || v > math.MaxInt32 {
		return 0, usagef("%s: -v %d: want a version from 0 to %d, or -1 for any", c.Command.Name, v, math.MaxInt32)
	}
	return int32(v), nil
}

type lsResult struct {
	Path     string    `json:"path"`
	Children []string  `json:"children"`
	Stat     *jsonStat `json:"stat,omitempty"`
}

func (r *runner) ls(c *cli.Context) error {
	args, err := argsN(c, 1, 1)
	if err != nil {
		return err
	}
	if c.Bool("R") && c.Bool("w") {
		return usagef("ls: -R and -w cannot be combined: use \"watch -R path\" to follow a subtree")
	}
	p, err := pathArg(args, false)
	if err != nil {
		return err
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	if c.Bool("R") {
		return r.lsRecursive(s, p)
	}
	var names []string
	var st *zk.Stat
	var ch <-chan zk.Event
	err = r.retry(s, func(ctx context.Context) (err error) {
		if c.Bool("w") {
			names, st, ch, err = s.ChildrenW(ctx, p)
		} else {
			names, st, err = s.Children(ctx, p)
		}
		return err
	})
	if err != nil {
		return onPath(p, err)
	}
	sortJava(names)
	if r.json {
		res := lsResult{Path: p, Children: names}
		if c.Bool("s") {
			res.Stat = toJSONStat(st)
		}
		writeJSON(r.env.Stdout, res)
	} else {
		fmt.Fprintln(r.env.Stdout, childList(names))
		if c.Bool("s") {
			writeStat(r.env.Stdout, st, r.env.Location)
		}
	}
	return r.awaitWatch(p, ch)
}

// lsRecursive prints every path of the subtree at p, breadth first, each
// level sorted, as zkCli's ls -R does: as it finds them, so that a walk
// stopped by a node it may not read shows how far it got.
func (r *runner) lsRecursive(s *recipe.Session, p string) error {
	if r.json {
		paths, err := r.subtree(s, p, nil)
		if err != nil {
			return err
		}
		return writeJSON(r.env.Stdout, struct {
			Path  string   `json:"path"`
			Paths []string `json:"paths"`
		}{p, paths})
	}
	return r.walk(s, p, nil, func(q string) { fmt.Fprintln(r.env.Stdout, q) })
}

// subtree lists root and its descendants breadth first, children sorted,
// leaving out the descendants for which skip is true, and theirs. A node
// deleted while we walk is left out; a missing root is an error.
func (r *runner) subtree(s *recipe.Session, root string, skip func(string) bool) ([]string, error) {
	var paths []string
	err := r.walk(s, root, skip, func(p string) { paths = append(paths, p) })
	return paths, err
}

// walk is subtree calling visit with each path as it finds it.
func (r *runner) walk(s *recipe.Session, root string, skip func(string) bool, visit func(string)) error {
	queue := []string{root}
	visit(root)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		var names []string
		err := r.retry(s, func(ctx context.Context) (err error) {
			names, _, err = s.Children(ctx, p)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) && p != root {
			continue
		}
		if err != nil {
			return onPath(p, err)
		}
		sortJava(names)
		for _, n := range names {
			if q := zpath.Join(p, n); skip == nil || !skip(q) {
				queue = append(queue, q)
				visit(q)
			}
		}
	}
	return nil
}

func (r *runner) create(c *cli.Context) error {
	args, err := argsN(c, 1, 3)
	if err != nil {
		return err
	}
	seq, eph, container, ttl := c.Bool("s"), c.Bool("e"), c.Bool("c"), c.Int64("t")
	const maxTTL = 1<<40 - 1 // ZooKeeper keeps a TTL in 40 bits of the owner field
	switch {
	case container && (seq || eph):
		return usagef("create: -c cannot be combined with -s or -e: containers are neither sequential nor ephemeral")
	case c.IsSet("t") && (eph || container):
		return usagef("create: -t cannot be combined with -e or -c: only persistent nodes have a TTL")
	case c.IsSet("t") && (ttl <= 0 || ttl > maxTTL):
		return usagef("create: -t %d: want a TTL in milliseconds from 1 to %d", ttl, int64(maxTTL))
	}
	p, err := pathArg(args, seq)
	if err != nil {
		return err
	}
	if strings.HasSuffix(p, "/") && p != "/" {
		// zkCli sends it; coord/recipe, like most clients, refuses it.
		return fmt.Errorf("create -s %s: nameless sequential nodes are not supported: give a name prefix, as in %sn-", p, p)
	}
	var data []byte
	if len(args) > 1 {
		data = []byte(args[1])
	}
	var acl []zk.ACL
	if len(args) > 2 {
		if acl, err = parseACL(args[2]); err != nil {
			return err
		}
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	var created string
	switch {
	case container:
		created, err = s.CreateContainer(ctx, p, data, acl)
	case c.IsSet("t"):
		flags := int32(zk.FlagTTL)
		if seq {
			flags = zk.FlagPersistentSequentialWithTTL
		}
		created, err = s.CreateTTL(ctx, p, data, flags, acl, msDuration(ttl))
	default:
		var flags int32
		if seq {
			flags |= zk.FlagSequence
		}
		if eph {
			flags |= zk.FlagEphemeral
		}
		created, err = s.Create(ctx, p, data, flags, acl)
	}
	if err != nil {
		r.recordZnode("znode.create", p, data, nil, err)
		return onPath(p, err)
	}
	r.recordZnode("znode.create", created, data, createdDetail(seq, eph, container, ttl, acl), nil)
	if eph {
		r.warn("%s is ephemeral: it is deleted when this command's session ends, which is now; to hold a node while a command runs, use lock or elect", created)
	}
	if r.json {
		return writeJSON(r.env.Stdout, struct {
			Path string `json:"path"`
		}{created})
	}
	fmt.Fprintf(r.env.Stdout, "Created %s\n", created)
	return nil
}

// createdDetail is what a create's audit entry says of the node made.
func createdDetail(seq, eph, container bool, ttl int64, acl []zk.ACL) map[string]any {
	d := map[string]any{}
	switch {
	case container:
		d["mode"] = "container"
	case eph:
		d["mode"] = "ephemeral"
	case ttl > 0:
		d["mode"], d["ttlMs"] = "ttl", ttl
	default:
		d["mode"] = "persistent"
	}
	if seq {
		d["sequential"] = true
	}
	if acl != nil {
		d["acl"] = aclText(toJSONACL(acl))
	}
	return d
}

type getResult struct {
	Path     string    `json:"path"`
	Data     *string   `json:"data"`
	Encoding string    `json:"encoding,omitempty"`
	Stat     *jsonStat `json:"stat"`
}

func (r *runner) get(c *cli.Context) error {
	_, p, s, err := r.pathCommand(c, 1, 1, false)
	if err != nil {
		return err
	}
	var data []byte
	var st *zk.Stat
	var ch <-chan zk.Event
	err = r.retry(s, func(ctx context.Context) (err error) {
		if c.Bool("w") {
			data, st, ch, err = s.GetW(ctx, p)
		} else {
			data, st, err = s.Get(ctx, p)
		}
		return err
	})
	if err != nil {
		return onPath(p, err)
	}
	if r.json {
		d, enc := encodeData(data)
		writeJSON(r.env.Stdout, getResult{Path: p, Data: d, Encoding: enc, Stat: toJSONStat(st)})
	} else {
		writeData(r.env.Stdout, data)
		if c.Bool("s") {
			writeStat(r.env.Stdout, st, r.env.Location)
		}
	}
	return r.awaitWatch(p, ch)
}

type statResult struct {
	Path string    `json:"path"`
	Stat *jsonStat `json:"stat"`
}

func (r *runner) set(c *cli.Context) error {
	v, err := version(c)
	if err != nil {
		return err
	}
	args, p, s, err := r.pathCommand(c, 2, 2, false)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	st, err := s.Set(ctx, p, []byte(args[1]), v)
	r.recordZnode("znode.set", p, []byte(args[1]), map[string]any{"expectedVersion": v}, err)
	if err != nil {
		return onPath(p, err)
	}
	switch {
	case r.json:
		writeJSON(r.env.Stdout, statResult{p, toJSONStat(st)})
	case c.Bool("s"):
		writeStat(r.env.Stdout, st, r.env.Location)
	}
	return nil
}

func (r *runner) stat(c *cli.Context) error {
	_, p, s, err := r.pathCommand(c, 1, 1, false)
	if err != nil {
		return err
	}
	var ok bool
	var st *zk.Stat
	var ch <-chan zk.Event
	err = r.retry(s, func(ctx context.Context) (err error) {
		if c.Bool("w") {
			ok, st, ch, err = s.ExistsW(ctx, p)
		} else {
			ok, st, err = s.Exists(ctx, p)
		}
		return err
	})
	if err == nil && !ok {
		err = zk.ErrNoNode
	}
	if err != nil {
		return onPath(p, err)
	}
	if r.json {
		writeJSON(r.env.Stdout, statResult{p, toJSONStat(st)})
	} else {
		writeStat(r.env.Stdout, st, r.env.Location)
	}
	return r.awaitWatch(p, ch)
}

type deleteResult struct {
	Path    string `json:"path"`
	Deleted int    `json:"deleted"`
}

func (r *runner) delete(c *cli.Context) error {
	v, err := version(c)
	if err != nil {
		return err
	}
	_, p, s, err := r.pathCommand(c, 1, 1, false)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	err = s.Delete(ctx, p, v)
	r.recordZnode("znode.delete", p, nil, map[string]any{"expectedVersion": v}, err)
	if err != nil {
		return onPath(p, err)
	}
	if r.json {
		writeJSON(r.env.Stdout, deleteResult{p, 1})
	}
	return nil
}

func (r *runner) deleteAll(c *cli.Context) error {
	args, err := argsN(c, 1, 1)
	if err != nil {
		return err
	}
	batch := c.Int("b")
	if batch < 1 {
		return usagef("deleteall: -b %d: want a batch size of at least 1", batch)
	}
	p, err := pathArg(args, false)
	if err != nil {
		return err
	}
	if p == "/" {
		return errors.New("deleteall /: refusing to delete the whole tree; delete its children one by one")
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	n, err := r.deleteTree(s, p, batch)
	r.recordZnode("znode.deleteall", p, nil, map[string]any{"deleted": n}, err)
	if err != nil {
		return err
	}
	if r.json {
		writeJSON(r.env.Stdout, deleteResult{p, n})
	}
	return nil
}

// deleteTree deletes root's subtree, leaves first, batch nodes per multi
// request, and returns how many nodes it deleted. A batch that fails —
// someone else deleted one of its nodes — is retried node by node.
func (r *runner) deleteTree(s *recipe.Session, root string, batch int) (int, error) {
	paths, err := r.subtree(s, root, nil)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for end := len(paths); end > 0; end -= batch {
		start := max(end-batch, 0)
		ops := make([]any, 0, end-start)
		for i := end - 1; i >= start; i-- {
			ops = append(ops, &zk.DeleteRequest{Path: paths[i], Version: -1})
		}
		ctx, cancel := r.opCtx()
		_, err := s.Multi(ctx, ops...)
		cancel()
		if err == nil {
			deleted += len(ops)
			continue
		}
		if errors.Is(err, context.Canceled) {
			return deleted, err
		}
		for i := end - 1; i >= start; i-- {
			ctx, cancel := r.opCtx()
			err := s.Delete(ctx, paths[i], -1)
			cancel()
			switch {
			case err == nil:
				deleted++
			case errors.Is(err, zk.ErrNoNode):
			default:
				return deleted, onPath(paths[i], err)
			}
		}
	}
	return deleted, nil
}

type aclResult struct {
	Path string    `json:"path"`
	ACL  []jsonACL `json:"acl"`
	Stat *jsonStat `json:"stat"`
}

func (r *runner) getACL(c *cli.Context) error {
	_, p, s, err := r.pathCommand(c, 1, 1, false)
	if err != nil {
		return err
	}
	var acl []zk.ACL
	var st *zk.Stat
	err = r.retry(s, func(ctx context.Context) (err error) {
		acl, st, err = s.GetACL(ctx, p)
		return err
	})
	if err != nil {
		return onPath(p, err)
	}
	if r.json {
		return writeJSON(r.env.Stdout, aclResult{p, toJSONACL(acl), toJSONStat(st)})
	}
	writeACL(r.env.Stdout, acl)
	if c.Bool("s") {
		writeStat(r.env.Stdout, st, r.env.Location)
	}
	return nil
}

func (r *runner) setACL(c *cli.Context) error {
	args, err := argsN(c, 2, 2)
	if err != nil {
		return err
	}
	v, err := version(c)
	if err != nil {
		return err
	}
	if c.Bool("R") && v != -1 {
		return usagef("setacl: -v cannot be combined with -R: the subtree's nodes have their own ACL versions")
	}
	p, err := pathArg(args, false)
	if err != nil {
		return err
	}
	acl, err := parseACL(args[1])
	if err != nil {
		return err
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	paths := []string{p}
	if c.Bool("R") {
		if paths, err = r.subtree(s, p, nil); err != nil {
			return err
		}
	}
	var st *zk.Stat
	for _, q := range paths {
		ctx, cancel := r.opCtx()
		qst, err := s.SetACL(ctx, q, acl, v)
		cancel()
		if errors.Is(err, zk.ErrNoNode) && q != p {
			continue // deleted while we walked
		}
		if err != nil {
			r.recordZnode("znode.setacl", p, nil, map[string]any{"acl": aclText(toJSONACL(acl)), "recursive": c.Bool("R")}, err)
			return onPath(q, err)
		}
		if q == p {
			st = qst
		}
	}
	r.recordZnode("znode.setacl", p, nil, map[string]any{"acl": aclText(toJSONACL(acl)), "recursive": c.Bool("R"), "nodes": len(paths)}, nil)
	switch {
	case r.json:
		writeJSON(r.env.Stdout, aclResult{p, toJSONACL(acl), toJSONStat(st)})
	case c.Bool("s"):
		writeStat(r.env.Stdout, st, r.env.Location)
	}
	return nil
}

func (r *runner) sync(c *cli.Context) error {
	_, p, s, err := r.pathCommand(c, 1, 1, false)
	if err != nil {
		return err
	}
	if err := r.retry(s, func(ctx context.Context) error { return s.Sync(ctx, p) }); err != nil {
		return onPath(p, err)
	}
	if r.json {
		return writeJSON(r.env.Stdout, struct {
			Path   string `json:"path"`
			Synced bool   `json:"synced"`
		}{p, true})
	}
	fmt.Fprintln(r.env.Stdout, "Sync is OK")
	return nil
}

// retry runs a read with the session's retry policy, each attempt bounded
// by --timeout. Writes are not retried: a write cut off by a connection
// loss may have been applied, and repeating it is the user's decision.
func (r *runner) retry(s *recipe.Session, fn func(ctx context.Context) error) error {
	ctx, cancel := r.opCtx()
	defer cancel()
	return s.Retry(ctx, func() error { return fn(ctx) })
}

// awaitWatch waits for the watch set by a -w read to fire and prints the
// event, as zkCli prints it (with --json: as a second document). A nil ch
// (no -w) returns at once.
func (r *runner) awaitWatch(p string, ch <-chan zk.Event) error {
	if ch == nil {
		return nil
	}
	select {
	case ev, ok := <-ch:
		if !ok || ev.Type == zk.EventNotWatching {
			return fmt.Errorf("watch on %s ended without an event: the session was lost", p)
		}
		if r.json {
			return writeJSON(r.env.Stdout, toJSONEvent(ev))
		}
		fmt.Fprintln(r.env.Stdout, eventLine(ev))
		return nil
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
}
