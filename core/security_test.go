package core

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestAttackTaskReadAndRewrite: an anonymous session can neither read a
// running task's spec (its inline password) nor rewrite its target, nor
// add a task; the core keeps running the spec it was given.
func TestAttackTaskReadAndRewrite(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		anon := dialWith(t, connect, recipe.Options{SessionTimeout: testSessionTimeout}) // first: an open chroot, as a fresh ensemble's root
		a := NewAdmin(dial(t, connect, testSessionTimeout), "")
		sp := testSpec("t1")
		sp.Target.Password = "s3cret"
		mustAdd(t, a, sp)
		eng := NewMemEngine(100000)
		eng.delay = time.Millisecond
		startCore(t, connect, "h1", eng, func(c *Config) { c.Tasks = []string{"t1"} })
		waitOwner(t, a, "t1", "h1", StateRunning, 20*time.Second)

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		p := a.Layout().Task("t1")
		if data, _, err := anon.Get(ctx, p); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous read of the spec: %q, %v; want ErrNoAuth", data, err)
		}
		evil := testSpec("t1")
		evil.Target.Host = "attacker.test"
		if _, err := anon.Set(ctx, p, evil.Marshal(), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous rewrite of the spec: %v, want ErrNoAuth", err)
		}
		if err := NewAdmin(anon, "").AddTask(ctx, testSpec("t2"), false); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous task add: %v, want ErrNoAuth", err)
		}
		ts, err := a.Task(ctx, "t1")
		if err != nil || ts.Spec.Target.Host != "target.test" {
			t.Errorf("spec after the attack: %+v, %v; want the target unchanged", ts.Spec, err)
		}
	})
}

// TestAttackPreCreatedTasks: before the first core starts, an anonymous
// session stores task specs under a world-writable tree — one open, one
// with an ACL naming the cores' identity alone. The core connects to no
// database: each task is FAILED with the reason and the fix. Once the
// operator secures the tree, the open one runs (its content is the
// operator's to review: docs/security.md). With --insecure-open-acl a
// core runs it at once.
func TestAttackPreCreatedTasks(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		anon := dialWith(t, connect, recipe.Options{SessionTimeout: testSessionTimeout})
		mustAdd(t, NewAdmin(anon, ""), testSpec("open"))
		owner, _ := recipe.ParseCredential(coordtest.Auth)
		forged := NewLayout("").Task("forged")
		if _, err := anon.Create(ctx, forged, testSpec("forged").Marshal(), 0, zk.DigestACL(zk.PermAll, owner.User, owner.Password)); err != nil {
			t.Fatal(err)
		}

		trusted := dial(t, connect, testSessionTimeout)
		a := NewAdmin(trusted, "")
		fleet := memFleet{"open": NewMemEngine(1000), "forged": NewMemEngine(1000)}
		startCore(t, connect, "h1", fleet, func(c *Config) { c.Tasks = []string{"open", "forged"} })
		for task, why := range map[string]string{"open": "/mysql_replicator/tasks/open grants cdrwa to world:anyone", "forged": "its ancestor /mysql_replicator/tasks grants"} {
			in := waitOwner(t, a, task, "h1", StateFailed, 20*time.Second)
			if !strings.Contains(in.State.Error, why) || !strings.Contains(in.State.Error, "ctl --auth-file <admin.auth> secure") {
				t.Errorf("task %s FAILED with %q; want the reason (%q) and the fix", task, in.State.Error, why)
			}
			if _, _, opens, _ := fleet[task].stats(); opens != 0 {
				t.Errorf("task %s: the core opened its databases %d times", task, opens)
			}
		}

		// What shepherd ctl secure does, for the open task's branch.
		for _, p := range []string{"/mysql_replicator", "/mysql_replicator/tasks", "/mysql_replicator/tasks/open"} {
			if _, err := trusted.SetACL(ctx, p, trusted.NodeACL(), -1); err != nil {
				t.Fatalf("secure %s: %v", p, err)
			}
		}
		waitOwner(t, a, "open", "h1", StateRunning, 30*time.Second)
	})
}

// TestInsecureOpenACL: the opt-out runs a task from an open tree.
func TestInsecureOpenACL(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		connect := chrootOf(t, tg)
		anon := dialWith(t, connect, recipe.Options{SessionTimeout: testSessionTimeout})
		mustAdd(t, NewAdmin(anon, ""), testSpec("open"))
		insecure := dialWith(t, connect, recipe.Options{SessionTimeout: testSessionTimeout, Auth: coordtest.Auth, InsecureOpenACL: true})
		startCoreOn(t, insecure, "h1", NewMemEngine(1000), func(c *Config) { c.Tasks = []string{"open"} })
		waitOwner(t, NewAdmin(insecure, ""), "open", "h1", StateRunning, 20*time.Second)
	})
}
