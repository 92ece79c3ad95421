package ctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestSecure moves an open tree to the policy: what anonymous ctl runs
// stored is world-writable (and said so), secure --dry-run changes
// nothing, secure makes every node the credential's (with READ for the
// viewer, none on a spec holding a password), and a second run has
// nothing to do.
func TestSecure(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		owner, _ := recipe.ParseCredential(coordtest.Auth)
		viewer := recipe.Credential{User: "viewer", Password: "vpw"}
		asOwner := []string{"--auth-file", coordtest.AuthFile(t), "--read-acl", "digest:" + viewer.ID()}
		asViewer := []string{"--auth", viewer.Auth()}

		// Stored without a credential: world-writable, and ctl says so.
		r := runCtl(t, zk, "job", "add", "--schedule", "@daily", "j", "true")
		if r.code != 0 || !strings.Contains(r.stderr, "no credential") || !strings.Contains(r.stderr, "schedulers refuse the job") {
			t.Fatalf("anonymous job add: want success with a warning about the missing credential\n%v", r)
		}
		mustCtl(t, zk, "source", "add", "file:///var/log/app.log")
		spec := filepath.Join(t.TempDir(), "task.yaml")
		if err := os.WriteFile(spec, []byte(testSpecYAML), 0o600); err != nil {
			t.Fatal(err)
		}
		mustCtl(t, zk, "task", "add", "-f", spec)
		if got := mustCtl(t, zk, "getacl", "/scheduler/jobs/j"); got != "'world,'anyone\n: cdrwa\n" {
			t.Fatalf("anonymous job's ACL = %q, want world:anyone:cdrwa", got)
		}

		if r := runCtl(t, zk, "secure"); r.code != ExitUsage || !strings.Contains(r.stderr, "no credential") {
			t.Errorf("secure without a credential: want a usage error\n%v", r)
		}
		dry := mustCtl(t, zk, append(asOwner, "secure", "--dry-run")...)
		for _, want := range []string{"/scheduler/jobs/j: would set", "/logs/sources: would set", "/mysql_replicator/tasks/t1: would set", "nodes would change"} {
			if !strings.Contains(dry, want) {
				t.Errorf("secure --dry-run output lacks %q:\n%s", want, dry)
			}
		}
		if got := mustCtl(t, zk, "getacl", "/scheduler/jobs/j"); got != "'world,'anyone\n: cdrwa\n" {
			t.Errorf("after --dry-run the job's ACL is %q, want it unchanged", got)
		}

		// The list verbs show what the processes would refuse, and why.
		for _, c := range []struct{ verb, path string }{{"job", "/scheduler/jobs/j"}, {"source", "/logs/sources"}, {"task", "/mysql_replicator/tasks/t1"}} {
			r := runCtl(t, zk, append(asOwner, c.verb, "list")...)
			if r.code != 0 || !strings.Contains(r.stderr, "warning: recipe: untrusted node: "+c.path+" grants cdrwa to world:anyone") {
				t.Errorf("%s list of an open tree: want a warning that %s is refused\n%v", c.verb, c.path, r)
			}
		}

		r = runCtl(t, zk, append(asOwner, "secure")...)
		if r.code != 0 || !strings.Contains(r.stdout, "/scheduler/jobs/j: set digest:"+owner.ID()+":cdrwa,digest:"+viewer.ID()+":r (was world:anyone:cdrwa)") ||
			!strings.Contains(r.stdout, "/master_election: created with digest:"+owner.ID()+":cdrwa,") || !strings.Contains(r.stderr, "review") {
			t.Fatalf("secure: want the job's new ACL reported and a review warning\n%v", r)
		}
		ownerACL := "'digest,'" + owner.ID() + "\n: cdrwa\n"
		if got := mustCtl(t, zk, append(asOwner, "getacl", "/scheduler/jobs/j")...); got != ownerACL+"'digest,'"+viewer.ID()+"\n: r\n" {
			t.Errorf("secured job's ACL = %q", got)
		}
		if got := mustCtl(t, zk, append(asOwner, "getacl", "/mysql_replicator/tasks/t1")...); got != ownerACL {
			t.Errorf("secured spec with an inline password: ACL = %q, want the owner's alone", got)
		}
		if got := mustCtl(t, zk, append(asOwner, "getacl", "/master_election")...); !strings.HasPrefix(got, ownerACL) {
			t.Errorf("missing subtree root not created with the policy: ACL = %q", got)
		}
		if got := mustCtl(t, zk, append(asOwner, "getacl", "/shepherd/console")...); got != ownerACL {
			t.Errorf("the console's root, which holds accounts: ACL = %q, want the owner's alone", got)
		}
		// Anonymous sessions may no longer write or read; the viewer reads
		// all but the password.
		for _, args := range [][]string{{"set", "/scheduler/jobs/j", "x"}, {"get", "/scheduler/jobs/j"}, {"create", "/scheduler/jobs/evil", "x"}} {
			if r := runCtl(t, zk, args...); r.code != ExitFailure || !strings.Contains(r.stderr, "Insufficient permission") {
				t.Errorf("anonymous %v after secure: want Insufficient permission\n%v", args, r)
			}
		}
		mustCtl(t, zk, append(asViewer, "get", "/scheduler/jobs/j")...)
		if r := runCtl(t, zk, append(asViewer, "get", "/mysql_replicator/tasks/t1")...); r.code != ExitFailure || strings.Contains(r.stdout, "s3cret") {
			t.Errorf("viewer read a spec holding a password\n%v", r)
		}
		if r := runCtl(t, zk, append(asViewer, "task", "show", "t1")...); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "readable by its writer alone") || strings.Contains(r.stdout, "s3cret") {
			t.Errorf("viewer task show of a spec holding a password: want the task, the spec said unreadable\n%v", r)
		}

		for _, verb := range []string{"job", "source", "task"} {
			if r := runCtl(t, zk, append(asOwner, verb, "list")...); r.code != 0 || r.stderr != "" {
				t.Errorf("%s list of a secured tree: want no warning\n%v", verb, r)
			}
		}
		if got := mustCtl(t, zk, append(asOwner, "secure")...); got != "0 nodes changed\n" {
			t.Errorf("second secure: %q, want nothing to change", got)
		}
		// task add applies the same policy: a spec with an inline
		// password is the owner's alone, one without is the viewer's too.
		noPassword := filepath.Join(t.TempDir(), "t2.yaml")
		if err := os.WriteFile(noPassword, []byte(strings.NewReplacer("t1", "t2", "password: s3cret", "passwordFile: /etc/pw").Replace(testSpecYAML)), 0o600); err != nil {
			t.Fatal(err)
		}
		mustCtl(t, zk, append(asOwner, "task", "add", "-f", noPassword)...)
		if got := mustCtl(t, zk, append(asOwner, "getacl", "/mysql_replicator/tasks/t2")...); got != ownerACL+"'digest,'"+viewer.ID()+"\n: r\n" {
			t.Errorf("task add without an inline password: ACL = %q, want the owner's and the viewer's READ", got)
		}
		mustCtl(t, zk, append(asOwner, "task", "add", "--replace", "-f", noPassword)...)
		withPassword := strings.NewReplacer("t1", "t2").Replace(testSpecYAML)
		if err := os.WriteFile(noPassword, []byte(withPassword), 0o600); err != nil {
			t.Fatal(err)
		}
		mustCtl(t, zk, append(asOwner, "task", "add", "--replace", "-f", noPassword)...)
		if got := mustCtl(t, zk, append(asOwner, "getacl", "/mysql_replicator/tasks/t2")...); got != ownerACL {
			t.Errorf("task add --replace with an inline password: ACL = %q, want the owner's alone", got)
		}

		if got := mustCtl(t, zk, "digest", "viewer:vpw"); got != "digest:"+viewer.ID()+"\n" {
			t.Errorf("digest viewer:vpw = %q", got)
		}
	})
}

// testSpecYAML is a hot-standby task with an inline target password.
const testSpecYAML = `name: t1
source: {host: 127.0.0.1, port: 3306, user: repl, passwordFile: /etc/shepherd/src.pw}
target: {host: 127.0.0.1, port: 3307, user: apply, password: s3cret}
`

// TestSecureForeignNode: a node whose ACL shuts the credential out is
// reported, not skipped, and secure exits 1 saying how to take it over.
func TestSecureForeignNode(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		mustCtl(t, zk, "create", "/scheduler")
		mustCtl(t, zk, "--auth", "other:pw", "create", "/scheduler/foreign", "x")
		r := runCtl(t, zk, "--auth", coordtest.Auth, "secure")
		if r.code != ExitFailure || !strings.Contains(r.stdout, "/scheduler/foreign: not changed: no permission") ||
			!strings.Contains(r.stderr, "1 nodes could not be changed") || !strings.Contains(r.stderr, "superDigest") {
			t.Errorf("secure with a node of another identity: want it reported and exit 1\n%v", r)
		}
		if got := mustCtl(t, zk, "--auth", coordtest.Auth, "getacl", "/scheduler"); !strings.Contains(got, "'digest,'shepherd-test:") || strings.Contains(got, "world") {
			t.Errorf("the rest is secured all the same: /scheduler ACL %q", got)
		}
		mustCtl(t, zk, "--auth", coordtest.Auth, "delete", "/scheduler/foreign") // the parent's owner may; other tests dump the whole tree
	})
}

// TestSecureTrustedWriters: in a two-team set-up each team's processes
// list the other's identity with --trusted-writers. secure gives the
// writers cdrwa beside the credential's, so either team may add below
// what the other created, and each trusts what the other wrote: the list
// verbs, which warn about what processes would refuse, stay silent.
// Without the other team in its list, a team refuses the other's job.
func TestSecureTrustedWriters(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		a := recipe.Credential{User: "team-a", Password: "apw"}
		b := recipe.Credential{User: "team-b", Password: "bpw"}
		asA := []string{"--auth", a.Auth(), "--trusted-writers", "digest:" + b.ID()}
		asB := []string{"--auth", b.Auth(), "--trusted-writers", "digest:" + a.ID()}

		// Secured by team A, the test's tree is closed to the tests'
		// credential: delete it after, or a later dump of the whole
		// server (TestDumpSkipsZooKeeper, run again by -count) could not
		// read it.
		t.Cleanup(func() {
			mustCtl(t, tg.Addr, "--auth", a.Auth(), "deleteall", strings.TrimPrefix(zk, tg.Addr))
		})
		mustCtl(t, zk, append(asA, "secure")...)
		want := "'digest,'" + a.ID() + "\n: cdrwa\n'digest,'" + b.ID() + "\n: cdrwa\n"
		if got := mustCtl(t, zk, append(asA, "getacl", "/scheduler")...); got != want {
			t.Errorf("/scheduler after team A's secure: ACL %q, want %q", got, want)
		}
		mustCtl(t, zk, append(asA, "job", "add", "--schedule", "@daily", "from-a", "true")...)
		mustCtl(t, zk, append(asB, "job", "add", "--schedule", "@daily", "from-b", "true")...)
		for name, as := range map[string][]string{"team A": asA, "team B": asB} {
			if r := runCtl(t, zk, append(as, "job", "list")...); r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "from-a") || !strings.Contains(r.stdout, "from-b") {
				t.Errorf("%s's job list: want both jobs, no refusal\n%v", name, r)
			}
		}
		r := runCtl(t, zk, "--auth", b.Auth(), "job", "list")
		if !strings.Contains(r.stderr, "untrusted node: /scheduler/jobs/from-a") {
			t.Errorf("team B without --trusted-writers: want team A's job refused\n%v", r)
		}
	})
}
