package coord

import (
	"fmt"
	"path"
	"strings"

	"github.com/shepherd-dev/shepherd/coord/proto"
	"github.com/shepherd-dev/shepherd/coord/tree"
)

// adminACL is the ACL of the admin credential in the file at path: its
// digest identity with every permission, as a client holding that
// credential would set it (coord/recipe's policy ACL without viewers).
// The line is read as recipe.ParseCredential reads it: "user:password",
// or "digest:user:password".
func adminACL(path string) ([]proto.ACL, error) {
	b, err := readAtMost(path, 4096)
	if err != nil {
		return nil, fmt.Errorf("coord: read admin credential %s: %w", path, err)
	}
	line := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if rest, ok := strings.CutPrefix(line, "digest:"); ok && strings.Contains(rest, ":") {
		line = rest
	}
	if user, pw, ok := strings.Cut(line, ":"); !ok || user == "" || pw == "" || strings.ContainsAny(line, "\r\n") {
		return nil, fmt.Errorf("%w: %s: want one line user:password", ErrDataDir, path)
	}
	return []proto.ACL{{Perms: proto.PermAll, Id: proto.Id{Scheme: "digest", ID: tree.DigestOf(line)}}}, nil
}

// createAdminRoots creates each of Config.AdminRoots that is missing, with
// its missing parents, with the admin credential's ACL, and makes them
// durable. It runs before the server listens, so no client can create a
// root first with an ACL of its own. Roots that exist are left as they
// are, whatever their ACL: the processes that act on them check it.
func (s *Server) createAdminRoots() error {
	if len(s.cfg.AdminRoots) == 0 {
		return nil
	}
	acl, err := adminACL(s.cfg.adminAuthPath())
	if err != nil {
		return err
	}
	var created []string
	for _, root := range s.cfg.AdminRoots {
		for _, p := range missingPath(s.pipe.tree, root) {
			if err := s.createAsServer(p, acl); err != nil {
				return fmt.Errorf("coord: create admin root %s: %w", p, err)
			}
			created = append(created, p)
		}
	}
	if len(created) == 0 {
		return nil
	}
	if err := s.store.Sync(); err != nil {
		return fmt.Errorf("coord: create admin roots: fsync: %w", err)
	}
	s.log.Info("created Shepherd's subtree roots, writable by the admin credential alone", "paths", created,
		"admin_auth_file", s.cfg.adminAuthPath())
	return nil
}

// missingPath returns the nodes of p, parents first, that t lacks.
func missingPath(t *tree.Tree, p string) []string {
	var missing []string
	for q := path.Clean(p); q != "/" && q != "."; q = path.Dir(q) {
		if _, ok := t.Stat(q); ok {
			break
		}
		missing = append([]string{q}, missing...)
	}
	return missing
}

// createAsServer logs and applies the creation of a persistent node at p,
// as the server itself (session 0, no ACL check). Only for use before
// the pipeline runs: it touches the tree and the log directly.
func (s *Server) createAsServer(p string, acl []proto.ACL) error {
	t := s.pipe.tree
	txn := t.Prepare(tree.Caller{Super: true}, t.LastZxid()+1, nowMs(),
		[]tree.Op{{Code: proto.OpCreate, Path: p, ACL: acl, Flags: proto.ModePersistent}}, false)
	if code := txn.Err(); code != proto.ErrOK {
		return fmt.Errorf("prepare: %v", code)
	}
	if err := s.store.Append(txn.Zxid(), tree.EncodeTxn(txn)); err != nil {
		return err
	}
	t.Apply(txn)
	return nil
}
