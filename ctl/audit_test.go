package ctl

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/server/audit"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// auditEntries reads the console's audit log of connect, newest first.
func auditEntries(t *testing.T, connect string) []audit.Entry {
	t.Helper()
	s := dialSession(t, connect)
	es, err := audit.New(s, auth.AuditDir, audit.Options{}).List(t.Context(), 1000, "")
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// TestChangesAreAuditedInTheConsolesLog: each change a verb makes is one
// entry of the console's audit log, with the console's action name, Via
// ctl, the credential as the user, the OS user and host as the remote,
// before and after as the console records them, and no password, token
// or environment value in it; a failed change is audited with its error.
func TestChangesAreAuditedInTheConsolesLog(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		pw := filepath.Join(t.TempDir(), "pw")
		if err := os.WriteFile(pw, []byte("correct horse battery\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		mustCtlAuth(t, connect, "task", "add", "-f", writeSpec(t, taskYAML))
		mustCtlAuth(t, connect, "task", "stop", "copy_hot_item")
		mustCtlAuth(t, connect, "job", "add", "--schedule", "@yearly", "--env", "API_KEY=hunter2", "report", "--", "true")
		mustCtlAuth(t, connect, "job", "pause", "report")
		mustCtlAuth(t, connect, "user", "add", "--role", "operator", "--password-file", pw, "alice")
		tok := strings.TrimSpace(mustCtlAuth(t, connect, "token", "create", "--user", "alice"))
		mustCtlAuth(t, connect, "source", "add", "https://collector:pa55@logs.test/app.log")
		if r := runCtlAuth(t, connect, "task", "start", "nope"); r.code == 0 {
			t.Fatalf("task start of no task: %v", r)
		}

		es := auditEntries(t, connect)
		got := map[string]audit.Entry{}
		var seen []string
		for _, e := range es {
			key := e.Action + " " + e.Target
			seen = append(seen, key)
			if _, dup := got[key]; dup {
				t.Errorf("two entries of %s", key)
			}
			got[key] = e
		}
		id := strings.Split(tok, "_")[1]
		for _, want := range []struct {
			key, before, after, err string
		}{
			{"task.create task/copy_hot_item", "", `"password":"***"`, ""},
			{"task.stop task/copy_hot_item", `{"state":"running"}`, `{"state":"stopped"}`, ""},
			{"job.create job/report", "", `"env":{"API_KEY":"***"}`, ""},
			{"job.pause job/report", `{"paused":false}`, `{"paused":true}`, ""},
			{"user.add user/alice", "", `{"replace":false,"role":"operator"}`, ""},
			{"token.create token/" + id, "", `{"note":"","user":"alice"}`, ""},
			{"sources.change sources", `{"remove":null}`, `{"add":["https://collector:xxxxx@logs.test/app.log"]}`, ""},
			{"task.start task/nope", "", `{"state":"running"}`, "no such task"},
		} {
			e, ok := got[want.key]
			if !ok {
				t.Errorf("no entry of %s; the log has %q", want.key, seen)
				continue
			}
			before, _ := json.Marshal(e.Before)
			after, _ := json.Marshal(e.After)
			if e.Via != "ctl" || e.User != "digest:shepherd-test" || !strings.Contains(e.Remote, "@") ||
				!strings.Contains(string(before), want.before) || (want.before == "" && e.Before != nil) ||
				!strings.Contains(string(after), want.after) || !strings.Contains(e.Error, want.err) || (want.err == "") != (e.Error == "") {
				t.Errorf("%s: entry %+v (before %s, after %s); want via ctl, user digest:shepherd-test, a user@host remote, before %s, after %s, error %q",
					want.key, e, before, after, want.before, want.after, want.err)
			}
		}
		if len(es) != 8 {
			t.Errorf("%d entries for 8 changes: %q", len(es), seen)
		}
		all, _ := json.Marshal(es)
		for _, secret := range []string{"s3cret", "hunter2", "correct horse", tok, "pa55"} {
			if strings.Contains(string(all), secret) {
				t.Errorf("the audit log holds %q: %s", secret, all)
			}
		}
		if c := got["task.stop task/copy_hot_item"].Changes; len(c) != 1 || c[0].Text != "state: running → stopped" {
			t.Errorf("changes of task.stop: %+v", c)
		}
	})
}

// TestAnAuditFailureKeepsTheChange: when the entry cannot be written the
// change stands, exits 0 and says so on stderr; without a credential,
// ctl writes to an existing log as anonymous, and creates none.
func TestAnAuditFailureKeepsTheChange(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		r := runCtl(t, connect, "job", "pause", "nightly")
		if r.code != 0 || !strings.Contains(r.stderr, "warning: job.pause of job/nightly was made, but is not in the audit log") ||
			!strings.Contains(r.stderr, "does not create it") {
			t.Fatalf("job pause without a log to write to: %v", r)
		}
		if out := mustCtl(t, connect, "ls", "/"); strings.Contains(out, "shepherd") {
			t.Fatalf("ctl without a credential made the console's subtree: ls / = %s", out)
		}
		if out := mustCtl(t, connect, "ls", "/scheduler/paused"); !strings.Contains(out, "nightly") {
			t.Fatalf("the pause is gone: %s", out)
		}
		mustCtl(t, connect, "create", "/shepherd")
		mustCtl(t, connect, "create", "/shepherd/console") // not audited: no log yet, and a raw write makes none
		mustCtl(t, connect, "job", "resume", "nightly")
		es := auditEntries(t, connect)
		if len(es) != 1 || es[0].User != "anonymous" || es[0].Action != "job.resume" || es[0].Via != "ctl" {
			t.Fatalf("audit log %+v; want job.resume by anonymous", es)
		}
	})
}

// TestCtlFollowsTheConsolesRetention: ctl trims the log by the retention
// the console published, not by defaults of its own.
func TestCtlFollowsTheConsolesRetention(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		s := dialSession(t, connect)
		console := audit.New(s, auth.AuditDir, audit.Options{Keep: 3, PerActor: 3})
		if err := console.Write(t.Context(), audit.Entry{User: "admin", Via: "ui", Action: "job.pause", Target: "job/x"}); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			mustCtlAuth(t, connect, "job", "pause", fmt.Sprintf("j%d", i))
		}
		if es := auditEntries(t, connect); len(es) > 3+16 {
			t.Fatalf("%d entries kept; the console keeps 3 (trimming every 16th write)", len(es))
		}
	})
}

// TestRawWritesToShepherdsTreeAreAudited: create, set, setacl, delete,
// deleteall and load of nodes in Shepherd's subtrees are audited, with
// the data's length and SHA-256 but never the data; raw writes elsewhere
// (ctl as a plain ZooKeeper client) are not.
func TestRawWritesToShepherdsTreeAreAudited(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		mustCtlAuth(t, connect, "job", "add", "--schedule", "@yearly", "report", "--", "true") // makes the subtrees and the log
		const secret = "raw-secret-value"
		mustCtlAuth(t, connect, "create", "/scheduler/jobs/raw", secret)
		mustCtlAuth(t, connect, "set", "/scheduler/jobs/raw", secret+"2")
		mustCtlAuth(t, connect, "setacl", "/scheduler/jobs/raw", "world:anyone:r")
		mustCtlAuth(t, connect, "delete", "/scheduler/jobs/raw")
		mustCtlAuth(t, connect, "create", "/scheduler/jobs/tree")
		mustCtlAuth(t, connect, "create", "/scheduler/jobs/tree/leaf", secret)
		mustCtlAuth(t, connect, "deleteall", "/scheduler/jobs/tree")
		mustCtlAuth(t, connect, "create", "/elsewhere", secret)
		mustCtlAuth(t, connect, "set", "/elsewhere", secret)

		got := map[string]audit.Entry{}
		var seen []string
		for _, e := range auditEntries(t, connect) {
			if strings.HasPrefix(e.Action, "znode.") {
				key := e.Action + " " + e.Target
				seen = append(seen, key)
				got[key] = e
			}
		}
		sum := sha256.Sum256([]byte(secret))
		for _, want := range []struct{ key, after string }{
			{"znode.create znode/scheduler/jobs/raw", `"sha256":"` + hex.EncodeToString(sum[:]) + `"`},
			{"znode.set znode/scheduler/jobs/raw", `"bytes":17`},
			{"znode.setacl znode/scheduler/jobs/raw", `"acl":"world:anyone:r"`},
			{"znode.delete znode/scheduler/jobs/raw", `"expectedVersion":-1`},
			{"znode.deleteall znode/scheduler/jobs/tree", `"deleted":2`},
		} {
			e, ok := got[want.key]
			if !ok {
				t.Errorf("no entry of %s; the raw writes audited: %q", want.key, seen)
				continue
			}
			after, _ := json.Marshal(e.After)
			if !strings.Contains(string(after), want.after) || e.Via != "ctl" || e.User != "digest:shepherd-test" {
				t.Errorf("%s: %+v (after %s), want after holding %s", want.key, e, after, want.after)
			}
		}
		if len(seen) != 7 { // the five above, and the creates of tree and leaf
			t.Errorf("%d raw writes audited, want 7 (none of /elsewhere): %q", len(seen), seen)
		}
		all, _ := json.Marshal(auditEntries(t, connect))
		if strings.Contains(string(all), secret) {
			t.Errorf("the audit log holds the data written: %s", all)
		}
	})
}

func TestShepherdPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/scheduler": true, "/scheduler/jobs/x": true, "/shepherd": true, "/": true,
		"/mysql_replicator": true, "/elsewhere": false, "/schedulerx": false, "/app/scheduler": false,
	} {
		if got := shepherdPath(p, "/mysql_replicator"); got != want {
			t.Errorf("shepherdPath(%q) = %v, want %v", p, got, want)
		}
	}
}
