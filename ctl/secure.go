package ctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/coord/zpath"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/dns"
	"github.com/shepherd-dev/shepherd/monitor"
	"github.com/shepherd-dev/shepherd/scheduler"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// secureCommand is "secure": apply the ACL policy of --auth to the trees
// Shepherd's processes act on, so that they trust them again.
func (r *runner) secureCommand() *cli.Command {
	return &cli.Command{
		Name:  "secure",
		Usage: "apply the ACL policy of --auth/--auth-file to Shepherd's trees (docs/security.md)",
		Description: `Sets the ACL of every node under Shepherd's subtrees (the replication root,
/scheduler, /master_election, /logs, /shepherd/monitor, /shepherd/console, /DDNS) to the policy of the
credential: its cdrwa, cdrwa for each --trusted-writers identity, plus READ for each --read-acl
viewer; its cdrwa alone on task specs holding an inline password and on the console's accounts.
Missing subtree roots are created with the policy, so that no one else can create them first
(shepherd coord creates them at its first start; every process when it starts). Prints each
node changed (old ACL -> new ACL); --dry-run changes nothing. Run it with the credential (and
--trusted-writers) every process uses: nodes it sets are then theirs. While the cluster was
open anyone could write these nodes: review the jobs, tasks and sources (ctl job list, task
list, source list) before or after securing them.`,
		ArgsUsage: "",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "report what would change, change nothing"},
			&cli.StringFlag{Name: "root", Value: core.DefaultRoot, EnvVars: []string{"SHEPHERD_REPLICATION_ROOT"},
				Usage: "root of the replication nodes, as given to shepherd core --root"},
		},
		Action: r.secure,
	}
}

// aclChange is one node secure changed, or would change.
type aclChange struct {
	Path    string    `json:"path"`
	Created bool      `json:"created,omitempty"`
	Old     []jsonACL `json:"old,omitempty"`
	New     []jsonACL `json:"new"`
	Error   string    `json:"error,omitempty"`
}

func (r *runner) secure(c *cli.Context) error {
	if c.Args().Present() {
		return usagef("secure: unexpected argument %q (usage: secure [--dry-run] [--root R])", c.Args().First())
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	if !s.Secured() {
		return usagef("secure: no credential: the policy is that of --auth or --auth-file (the admin.auth of shepherd coord's data directory)")
	}
	dry := c.Bool("dry-run")
	tasks := core.NewAdmin(s, c.String("root"))
	var changes []aclChange
	failed, secured := 0, 0 // nodes not changed; existing nodes whose ACL changed
	report := func(ch aclChange) error {
		changes = append(changes, ch)
		switch {
		case ch.Error != "":
			failed++
		case !ch.Created:
			secured++
		}
		if r.json {
			return nil
		}
		var err error
		switch {
		case ch.Error != "":
			_, err = fmt.Fprintf(r.env.Stdout, "%s: not changed: %s\n", ch.Path, ch.Error)
		case ch.Created && dry:
			_, err = fmt.Fprintf(r.env.Stdout, "%s: would create with %s\n", ch.Path, aclText(ch.New))
		case ch.Created:
			_, err = fmt.Fprintf(r.env.Stdout, "%s: created with %s\n", ch.Path, aclText(ch.New))
		case dry:
			_, err = fmt.Fprintf(r.env.Stdout, "%s: would set %s (was %s)\n", ch.Path, aclText(ch.New), aclText(ch.Old))
		default:
			_, err = fmt.Fprintf(r.env.Stdout, "%s: set %s (was %s)\n", ch.Path, aclText(ch.New), aclText(ch.Old))
		}
		return err
	}
	for _, st := range Subtrees(tasks.Layout().Root) {
		policy := func(ctx context.Context, p string) ([]zk.ACL, error) {
			switch st.Path {
			case tasks.Layout().Root:
				return tasks.PolicyACL(ctx, p)
			case auth.Root:
				return auth.PolicyACL(s, p), nil
			}
			return s.NodeACL(), nil
		}
		if err := r.secureTree(s, st, dry, policy, report); err != nil {
			r.recordSecure(changes, dry, err)
			return err
		}
	}
	r.recordSecure(changes, dry, nil)
	if r.json {
		if changes == nil {
			changes = []aclChange{}
		}
		return writeJSON(r.env.Stdout, changes)
	}
	n := len(changes) - failed
	switch {
	case dry:
		fmt.Fprintf(r.env.Stdout, "dry run: %d nodes would change\n", n)
	default:
		fmt.Fprintf(r.env.Stdout, "%d nodes changed\n", n)
	}
	if failed > 0 {
		return &exitError{code: ExitFailure, msg: fmt.Sprintf("secure: %d nodes could not be changed: give a credential with ADMIN on them (or ZooKeeper's superDigest identity, docs/security.md)", failed)}
	}
	if secured > 0 && !dry {
		r.warn("the nodes set were writable by others until now: review what they say (ctl job list, ctl task list, ctl source list) before trusting it")
	}
	return nil
}

// recordSecure audits what secure changed (nothing for a dry run): the
// ACL of each node before and after, by path; the console has no such
// action, so it is ctl's own, acl.secure. err is what stopped secure, if
// anything; nodes it could not change make an error too.
func (r *runner) recordSecure(changes []aclChange, dry bool, err error) {
	if dry || (len(changes) == 0 && err == nil) {
		return
	}
	before, after := map[string]string{}, map[string]string{}
	failed := 0
	for _, ch := range changes {
		if ch.Error != "" {
			failed++
			continue
		}
		if !ch.Created {
			before[ch.Path] = aclText(ch.Old)
		}
		after[ch.Path] = aclText(ch.New)
	}
	if err == nil && failed > 0 {
		err = fmt.Errorf("%d nodes could not be changed", failed)
	}
	r.record("acl.secure", "acls", before, after, err)
}

// Subtrees are the roots of Shepherd's subtrees, the replication one at
// replicationRoot: what `ctl secure` secures, and what `shepherd coord`
// creates at its first start.
func Subtrees(replicationRoot string) []recipe.Subtree {
	var out []recipe.Subtree
	for _, sts := range [][]recipe.Subtree{core.NewLayout(replicationRoot).Subtrees(), scheduler.Subtrees(),
		collector.Subtrees(), monitor.Subtrees(), auth.Subtrees(), dns.Subtrees()} {
		out = append(out, sts...)
	}
	return out
}

// secureTree applies policy to the subtree st and every node below it,
// creating its root (and its parents) if missing, as every process does
// (Session.EnsureSubtree).
func (r *runner) secureTree(s *recipe.Session, st recipe.Subtree, dry bool, policy func(context.Context, string) ([]zk.ACL, error), report func(aclChange) error) error {
	root := st.Path
	var exists bool
	if err := r.retry(s, func(ctx context.Context) (err error) {
		exists, _, err = s.Exists(ctx, root)
		return err
	}); err != nil {
		return onPath(root, err)
	}
	if !exists {
		created := aclChange{Path: root, Created: true, New: toJSONACL(s.SubtreeACL(st))}
		if dry {
			return report(created)
		}
		ctx, cancel := r.opCtx()
		made, err := s.EnsureSubtree(ctx, st) // retries by itself
		cancel()
		switch {
		case errors.Is(err, recipe.ErrUntrusted): // made meanwhile by someone else: the walk below sets it
		case err != nil:
			return onPath(root, err)
		case made:
			if err := report(created); err != nil {
				return err
			}
		}
	}
	// Breadth first, parents before children. Unlike walk, a node whose
	// children may not be listed is reported and passed over.
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		readable, err := r.secureNode(s, p, dry, policy, report)
		if err != nil {
			return err
		}
		if !readable {
			continue // reported; its children cannot be listed either
		}
		var names []string
		err = r.retry(s, func(ctx context.Context) (err error) {
			names, _, err = s.Children(ctx, p)
			return err
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue
		case errors.Is(err, zk.ErrNoAuth):
			if err := report(aclChange{Path: p, New: toJSONACL(s.NodeACL()), Error: "no permission to list its children (" + err.Error() + ")"}); err != nil {
				return err
			}
			continue
		case err != nil:
			return onPath(p, err)
		}
		sortJava(names)
		for _, n := range names {
			queue = append(queue, zpath.Join(p, n))
		}
	}
	return nil
}

// secureNode sets the ACL of p to policy's, if it differs. readable is
// false if p may not be read (reported as not changed) or is gone.
func (r *runner) secureNode(s *recipe.Session, p string, dry bool, policy func(context.Context, string) ([]zk.ACL, error), report func(aclChange) error) (readable bool, err error) {
	var old, want []zk.ACL
	err = r.retry(s, func(ctx context.Context) (err error) {
		if old, _, err = s.GetACL(ctx, p); err != nil {
			return err
		}
		want, err = policy(ctx, p)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, nil // deleted while walking
	case errors.Is(err, zk.ErrNoAuth):
		return false, report(aclChange{Path: p, New: toJSONACL(s.NodeACL()), Error: "no permission to read it (" + err.Error() + ")"})
	case err != nil:
		return false, onPath(p, err)
	}
	if sameACL(old, want) {
		return true, nil
	}
	ch := aclChange{Path: p, Old: toJSONACL(old), New: toJSONACL(want)}
	if !dry {
		err := r.retry(s, func(ctx context.Context) error {
			_, err := s.SetACL(ctx, p, want, -1)
			return err
		})
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return false, nil
		case errors.Is(err, zk.ErrNoAuth):
			ch.Error = "no ADMIN permission (" + err.Error() + ")"
		case err != nil:
			return false, onPath(p, err)
		}
	}
	return true, report(ch)
}

// sameACL reports whether a and b grant the same, in any order.
func sameACL(a, b []zk.ACL) bool {
	key := func(acl []zk.ACL) []string {
		out := make([]string, len(acl))
		for i, e := range acl {
			out[i] = fmt.Sprintf("%s:%s:%d", e.Scheme, e.ID, e.Perms)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// aclText is an ACL on one line, as zkCli's setAcl takes it.
func aclText(acl []jsonACL) string {
	if len(acl) == 0 {
		return "nothing"
	}
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = a.Scheme + ":" + a.ID + ":" + a.Perms
	}
	return strings.Join(parts, ",")
}

// digestCommand is "digest user:password": the id a digest ACL entry
// names for that credential, as ZooKeeper's DigestAuthenticationProvider
// prints it — for --read-acl and setAcl.
func (r *runner) digestCommand() *cli.Command {
	return &cli.Command{
		Name:      "digest",
		Usage:     "print the digest ACL id of user:password (for --read-acl digest:<id> and setAcl)",
		ArgsUsage: "user:password",
		Action: func(c *cli.Context) error {
			args, err := argsN(c, 1, 1)
			if err != nil {
				return err
			}
			cred, err := recipe.ParseCredential(args[0])
			if err != nil {
				return usagef("digest: %v", err)
			}
			if r.json {
				return writeJSON(r.env.Stdout, map[string]string{"user": cred.User, "id": cred.ID(), "acl": "digest:" + cred.ID()})
			}
			_, err = fmt.Fprintf(r.env.Stdout, "digest:%s\n", cred.ID())
			return err
		},
	}
}
