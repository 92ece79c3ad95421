package ctl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strings"

	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/server/audit"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// Changes ctl makes are audited in the console's audit log (package
// server/audit, below auth.AuditDir), with the console's action names and
// before/after, Via "ctl": one log of every change, whichever way it was
// made. Who is the credential's identity ("digest:admin", or anonymous
// without one); the OS user and host running ctl are the entry's Remote.

// viaCtl is the Via of ctl's audit entries.
const viaCtl = "ctl"

// anonymous is the user of an audit entry written without a credential.
const anonymous = "anonymous"

// record writes the audit entry of a change ctl made (err nil) or tried
// to make (err the failure) — action, target, before and after as the
// console records the same change, already redacted. A write that fails
// neither undoes nor hides the change: it is a warning on stderr, and the
// verb's exit status stays that of the change.
func (r *runner) record(action, target string, before, after any, err error) {
	r.recordEntry(action, target, before, after, err, true)
}

// recordEntry is record; with makeLog false, an entry is written only to
// a log that exists, and none is made.
func (r *runner) recordEntry(action, target string, before, after any, err error, makeLog bool) {
	s := r.sess
	if s == nil {
		return // never connected: nothing was changed
	}
	e := audit.Entry{User: s.Identity(), Via: viaCtl, Remote: osUserHost(), Action: action, Target: target, Before: before, After: after}
	if e.User == "" {
		e.User = anonymous
	}
	if err != nil {
		e.Error = err.Error()
	}
	// A signal after the change must not keep it out of the log.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.timeout)
	defer cancel()
	if !makeLog {
		if ok, _, xerr := s.Exists(ctx, auth.AuditDir); xerr == nil && !ok {
			return
		}
	}
	if werr := writeAudit(ctx, s, e, r.logger()); werr != nil {
		what := "was made"
		if err != nil {
			what = "failed"
		}
		r.warn("%s of %s %s, but is not in the audit log: %v", action, target, what, werr)
	}
}

// writeAudit appends e to the console's audit log, trimming by the
// retention the console published. The console's subtree is created as
// every process creates it (secret, Session.EnsureSubtree) and never by
// the write's EnsurePath: without a credential, ctl writes only to a log
// that exists, since a subtree it made would be world-writable and
// refused by the console.
func writeAudit(ctx context.Context, s *recipe.Session, e audit.Entry, log *slog.Logger) error {
	for _, st := range auth.Subtrees() {
		if _, err := s.EnsureSubtree(ctx, st); err != nil {
			return err
		}
	}
	if !s.Secured() {
		ok, _, err := s.Exists(ctx, auth.Root)
		if err != nil {
			return fmt.Errorf("audit: %s: %w", auth.Root, err)
		}
		if !ok {
			return fmt.Errorf("audit: no %s, and without a credential (--auth or --auth-file) ctl does not create it", auth.Root)
		}
	}
	return audit.New(s, auth.AuditDir, audit.Options{Follow: true, Logger: log}).Write(ctx, e)
}

// osUserHost is who runs ctl where: "user@host".
func osUserHost() string {
	who := "?"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	host, _ := os.Hostname()
	return who + "@" + host
}

// The before and after of changes, as the console records them
// (server/api.go, server/jobs.go, server/alerts.go).

// redactedSpec is sp with its passwords hidden; nil for nil.
func redactedSpec(sp *core.Spec) any {
	if sp == nil {
		return nil
	}
	return sp.Redacted()
}

// stateField is a task's desired state, as task.start and task.stop record it.
func stateField(state string) map[string]string { return map[string]string{"state": state} }

// positionFields are a task's positions before and after a move.
func positionFields(res core.PositionReset) (before, after map[string]string) {
	return map[string]string{"position": res.Before.String()}, map[string]string{"position": res.After.String()}
}

// sourcesFields are the before and after of sources.change: what is
// removed, what is added, with any password in a URI hidden.
func sourcesFields(add, remove []string) (before, after map[string][]string) {
	return map[string][]string{"remove": collector.RedactedURIs(remove)}, map[string][]string{"add": collector.RedactedURIs(add)}
}

// recordZnode audits a raw write (create, set, delete, deleteall, setacl,
// load) when it touches Shepherd's subtrees, where it changes what the
// processes act on; writes elsewhere (ctl used as a plain ZooKeeper
// client) are not Shepherd's to log. It joins the console's audit log if
// there is one and never makes it: a raw write is often how a tree is
// set up or mended, by any identity, and the log's subtree must be made
// by the cluster's own (see writeAudit). The data written is never
// recorded, since a task's spec holds a password: its length and SHA-256
// are.
func (r *runner) recordZnode(action, p string, data []byte, after map[string]any, err error) {
	if !shepherdPath(p, r.replicationRoot()) {
		return
	}
	if after == nil {
		after = map[string]any{}
	}
	if data != nil {
		sum := sha256.Sum256(data)
		after["bytes"], after["sha256"] = len(data), hex.EncodeToString(sum[:])
	}
	if len(after) == 0 {
		after = nil
	}
	r.recordEntry(action, "znode"+p, nil, after, err, false)
}

// shepherdPath reports whether p is one of Shepherd's subtree roots, is
// below one, or is an ancestor of one (deleting it deletes a subtree).
func shepherdPath(p, replicationRoot string) bool {
	for _, st := range Subtrees(replicationRoot) {
		if p == st.Path || strings.HasPrefix(p, st.Path+"/") || p == "/" || strings.HasPrefix(st.Path, p+"/") {
			return true
		}
	}
	return false
}

// replicationRoot is the replication root raw writes are judged against:
// $SHEPHERD_REPLICATION_ROOT, as the task verbs' --root, or the default.
func (r *runner) replicationRoot() string {
	if v := os.Getenv("SHEPHERD_REPLICATION_ROOT"); v != "" {
		return v
	}
	return core.DefaultRoot
}
