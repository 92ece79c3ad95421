package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/sessiontest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

const taskYAML = `name: copy_hot_item
source: {host: 127.0.0.1, port: 3306, user: repl, password: s3cret, flavor: mariadb}
target: {host: 127.0.0.1, port: 3307, user: apply, passwordFile: /etc/pw, flavor: mariadb}
filter: {include: [shop.*]}
routes: [{from: shop, to: shop_copy}]
start: current
`

func writeSpec(t testing.TB, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTaskVerbs walks a task through add, list, show, stop, start and rm,
// with a fake instance node standing for a running core.
func TestTaskVerbs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		spec := writeSpec(t, taskYAML)
		if got := mustCtlAuth(t, conn, "task", "add", "-f", spec); !strings.Contains(got, "task copy_hot_item added at /mysql_replicator/tasks/copy_hot_item (hot standby, running)") {
			t.Fatalf("task add printed %q", got)
		}
		if r := runCtlAuth(t, conn, "task", "add", "-f", spec); r.code != ExitFailure || !strings.Contains(r.stderr, "task exists: copy_hot_item (use --replace") {
			t.Fatalf("second add: %v", r)
		}
		mustCtlAuth(t, conn, "task", "add", "--replace", "-f", spec)

		// A core's instance: RUNNING, owning the task; and a standby.
		s := dialSession(t, conn)
		ctx := context.Background()
		instances := "/mysql_replicator/tasks/copy_hot_item/instances"
		if err := s.EnsurePath(ctx, instances); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		running := core.InstanceState{Version: 1, State: core.StateRunning, Host: "db-a", PID: 42, Epoch: 77,
			Position: core.Position{File: "mysql-bin.000003", Pos: 1234, GTID: "0-1-99"}, LagSeconds: 1.5, RowsPerSecond: 2500, Since: now, Updated: now}
		if _, err := s.Create(ctx, instances+"/db-a-", running.Marshal(), zk.FlagEphemeralSequential, nil); err != nil {
			t.Fatal(err)
		}
		standby := core.InstanceState{Version: 1, State: core.StateStandby, Host: "db-b", Since: now}
		if _, err := s.Create(ctx, instances+"/db-b-", standby.Marshal(), zk.FlagEphemeralSequential, nil); err != nil {
			t.Fatal(err)
		}
		lc := core.LastCommit{Version: 1, File: "mysql-bin.000003", Pos: 1200, Time: now, Owner: "db-a-0000000000", Epoch: 77}
		if _, err := s.Create(ctx, "/mysql_replicator/tasks/copy_hot_item/lastCommit", lc.Marshal(), zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}

		list := mustCtlAuth(t, conn, "task", "list")
		if !regexp.MustCompile(`(?m)^copy_hot_item\s+hot\s+running\s+db-a-0000000000\s+RUNNING\s+mysql-bin.000003:1234 \(gtid 0-1-99\)\s+1.5s\s+2$`).MatchString(list) {
			t.Fatalf("task list:\n%s", list)
		}
		show := mustCtlAuth(t, conn, "task", "show", "copy_hot_item")
		t.Logf("task list:\n%s\ntask show:\n%s", list, show)
		for _, want := range []string{
			"source:     repl@127.0.0.1:3306 (mariadb)",
			"target:     apply@127.0.0.1:3307 (mariadb), password from /etc/pw",
			"routes:     shop -> shop_copy",
			"lastCommit: mysql-bin.000003:1200 at ",
			"by db-a-0000000000, epoch 77",
		} {
			if !strings.Contains(show, want) {
				t.Errorf("task show lacks %q:\n%s", want, show)
			}
		}
		if !regexp.MustCompile(`(?m)^  db-a-0000000000\s+RUNNING\s+mysql-bin.000003:1234 \(gtid 0-1-99\)\s+1.5s\s+2500\s+\d+s ago\s+-$`).MatchString(show) ||
			!regexp.MustCompile(`(?m)^  db-b-0000000001\s+STANDBY\s+-\s+-\s+-\s+\d+s ago\s+-$`).MatchString(show) {
			t.Errorf("task show instances:\n%s", show)
		}
		if strings.Contains(show, "s3cret") {
			t.Errorf("task show printed the password:\n%s", show)
		}
		var ts core.TaskStatus
		js := mustCtlAuth(t, conn, "--json", "task", "show", "copy_hot_item")
		if err := json.Unmarshal([]byte(js), &ts); err != nil {
			t.Fatal(err)
		}
		if ts.Spec == nil || ts.Spec.Source.Password != "***" || len(ts.Instances) != 2 || ts.Instances[0].State.Position.Pos != 1234 {
			t.Fatalf("task show --json: %s", js)
		}

		if r := runCtlAuth(t, conn, "task", "reset-epoch", "copy_hot_item"); r.code != ExitFailure ||
			!strings.Contains(r.stderr, "copy_hot_item is running: shepherd ctl task stop copy_hot_item first") {
			t.Fatalf("reset-epoch of a running task: %v", r)
		}
		mustCtlAuth(t, conn, "task", "stop", "copy_hot_item")
		if got := mustCtlAuth(t, conn, "task", "list"); !strings.Contains(got, "stopped") {
			t.Fatalf("list after stop:\n%s", got)
		}
		if r := runCtlAuth(t, conn, "task", "reset-epoch", "copy_hot_item"); r.code != ExitFailure ||
			!strings.Contains(r.stderr, "copy_hot_item is still RUNNING on db-a-0000000000") {
			t.Fatalf("reset-epoch while an instance is RUNNING: %v", r)
		}
		if r := runCtlAuth(t, conn, "task", "rm", "copy_hot_item"); r.code != ExitFailure ||
			!strings.Contains(r.stderr, "has instances db-a-0000000000, db-b-0000000001: stop the cores started with --task copy_hot_item") {
			t.Fatalf("rm with instances: %v", r)
		}
		s.Close() // the cores go
		// Stopped, nobody RUNNING: the epochs go back to 0.
		eng := &fakeEngine{targetEpoch: 77}
		r := runCtlEnvAuth(t, Env{Engine: eng}, conn, "task", "reset-epoch", "copy_hot_item")
		if r.code != 0 || r.stdout != "task copy_hot_item: target checkpoint epoch 77 → 0, lastCommit epoch 77 → 0; shepherd ctl task start copy_hot_item to resume\n" || eng.resets != 1 {
			t.Fatalf("reset-epoch: %v (%d resets)", r, eng.resets)
		}
		if show := mustCtlAuth(t, conn, "task", "show", "copy_hot_item"); !strings.Contains(show, "mysql-bin.000003:1200") || !strings.Contains(show, "epoch 0") {
			t.Errorf("task show after reset-epoch:\n%s", show)
		}
		mustCtlAuth(t, conn, "task", "start", "copy_hot_item")
		if got := mustCtlAuth(t, conn, "task", "rm", "copy_hot_item"); got != "task copy_hot_item removed\n" {
			t.Fatalf("rm printed %q", got)
		}
		if r := runCtlAuth(t, conn, "task", "show", "copy_hot_item"); r.code != ExitFailure || !strings.Contains(r.stderr, "no such task: copy_hot_item") {
			t.Fatalf("show after rm: %v", r)
		}
		if got := mustCtlAuth(t, conn, "ls", "/mysql_replicator/tasks"); got != "[]\n" {
			t.Fatalf("tasks left after rm: %s", got)
		}
	})
}

// TestTaskVerbErrors: bad specs name the field; bad command lines are
// usage errors.
func TestTaskVerbErrors(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		bad := writeSpec(t, "name: t1\nsource: {host: a, user: u, port: 99999}\ntarget: {host: b}\nstart: yesterday\n")
		for _, tc := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"task", "add", "-f", bad}, ExitFailure, "source.port: 99999: want 1-65535; target.user: required; start: \"yesterday\""},
			{[]string{"task", "add", "-f", bad + ".missing"}, ExitFailure, "no such file"},
			{[]string{"task", "add"}, ExitUsage, "-f task.yaml is required"},
			{[]string{"task", "add", "x.yaml"}, ExitUsage, "give the spec with -f"},
			{[]string{"task"}, ExitUsage, "missing verb"},
			{[]string{"task", "frob"}, ExitUsage, "unknown verb \"frob\""},
			{[]string{"task", "show"}, ExitUsage, "want one task name"},
			{[]string{"task", "start", "nope"}, ExitFailure, "no such task: nope"},
			{[]string{"task", "reset-epoch", "nope"}, ExitFailure, "no such task: nope"},
			{[]string{"task", "reset-epoch"}, ExitUsage, "want one task name"},
			{[]string{"task", "show", "a/b"}, ExitFailure, "no such task"},
			{[]string{"task", "--root", "rel", "list"}, ExitUsage, "--root \"rel\""},
		} {
			r := runCtlAuth(t, conn, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("ctl %s: %v\nwant exit %d and %q", strings.Join(tc.args, " "), r, tc.code, tc.want)
			}
		}
		if got := mustCtlAuth(t, conn, "task", "list"); strings.Count(got, "\n") != 1 {
			t.Errorf("a rejected add stored something:\n%s", got)
		}
		// Standard input works too.
		env := Env{Stdin: strings.NewReader(taskYAML)}
		if r := runCtlEnvAuth(t, env, conn, "task", "add", "-f", "-"); r.code != 0 {
			t.Fatalf("add from stdin: %v", r)
		}
	})
}

// dialSession opens a session for the test's own writes.
func dialSession(t testing.TB, connect string) *recipe.Session {
	t.Helper()
	return sessiontest.DialAuth(t, connect, 2*time.Second)
}

// fakeEngine stands in for the target's checkpoint in reset-epoch.
type fakeEngine struct {
	targetEpoch int64
	resets      int
}

func (e *fakeEngine) Open(context.Context, *core.Spec, *slog.Logger) (core.Replicator, error) {
	return fakeReplicator{e}, nil
}

func (e *fakeEngine) ProbeSource(_ context.Context, ep core.Endpoint, _ *slog.Logger) core.SourceHealth {
	return core.SourceHealth{Addr: ep.Addr()}
}

type fakeReplicator struct{ e *fakeEngine }

func (f fakeReplicator) ResetEpoch(context.Context) (int64, error) {
	f.e.resets++
	prev := f.e.targetEpoch
	f.e.targetEpoch = 0
	return prev, nil
}

func (fakeReplicator) ResolveStart(context.Context, string) (core.Position, error) {
	return core.Position{}, errors.New("fakeReplicator: not used")
}

func (fakeReplicator) Locate(context.Context, core.Position) (core.Position, error) {
	return core.Position{}, errors.New("fakeReplicator: not used")
}

func (fakeReplicator) TargetCheckpoint(context.Context) (core.Checkpoint, bool, error) {
	return core.Checkpoint{}, false, errors.New("fakeReplicator: not used")
}

func (fakeReplicator) Run(context.Context, core.Position, int64, string, func(core.Progress)) error {
	return errors.New("fakeReplicator: not used")
}

func (fakeReplicator) Close() error { return nil }

// TestTaskGroups: task groups and task list show a cold group's spread
// over its live cores (member nodes) and the moves in progress.
func TestTaskGroups(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		s := dialSession(t, conn)
		ctx := context.Background()
		a := core.NewAdmin(s, "")
		for _, name := range []string{"c1", "c2", "c3"} {
			sp, err := core.ParseSpec([]byte(strings.Replace(taskYAML, "copy_hot_item", name, 1) + "standby: {mode: cold, group: g1}\n"))
			if err != nil {
				t.Fatal(err)
			}
			if err := a.AddTask(ctx, sp, false); err != nil {
				t.Fatal(err)
			}
		}
		now := time.Now().UTC()
		members := a.Layout().Cores("g1")
		if err := s.EnsurePath(ctx, members); err != nil {
			t.Fatal(err)
		}
		for _, m := range []core.CoreMember{
			{Version: 1, Host: "db-a", Capacity: 1, Since: now, Moves: []core.Move{{Task: "c2", From: "db-a", To: "db-b", Reason: core.MoveBalance, Share: 1, Since: now}}},
			{Version: 1, Host: "db-b", Capacity: 2, Since: now},
		} {
			if _, err := s.Create(ctx, members+"/"+m.Host, m.Marshal(), zk.FlagEphemeral, nil); err != nil {
				t.Fatal(err)
			}
		}
		running := core.InstanceState{Version: 1, State: core.StateRunning, Host: "db-a", Since: now, Updated: now}
		for _, name := range []string{"c1", "c3"} {
			dir := a.Layout().GroupInstances("g1", name)
			if err := s.EnsurePath(ctx, dir); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Create(ctx, dir+"/db-a-", running.Marshal(), zk.FlagEphemeralSequential, nil); err != nil {
				t.Fatal(err)
			}
		}
		out := mustCtlAuth(t, conn, "task", "groups")
		t.Logf("task groups:\n%s", out)
		for _, re := range []string{
			`(?m)^group g1: 3 tasks to run, 2 live cores$`,
			`(?m)^  db-a\s+1\s+1\s+2\s+c1, c3$`,
			`(?m)^  db-b\s+2\s+2\s+0\s+-$`,
			`(?m)^  moving: c2 db-a -> db-b \(balance, share 1, \d+s ago\)$`,
			`(?m)^  unowned: c2$`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("task groups lacks %s", re)
			}
		}
		if list := mustCtlAuth(t, conn, "task", "list"); !strings.Contains(list, "group g1: db-a 2/1, db-b 0/2 (tasks/share); 1 moving, 1 unowned") {
			t.Errorf("task list lacks the spread:\n%s", list)
		}
		var gs []core.GroupStatus
		if err := json.Unmarshal([]byte(mustCtlAuth(t, conn, "--json", "task", "groups", "g1")), &gs); err != nil {
			t.Fatal(err)
		}
		if len(gs) != 1 || gs[0].Tasks != 3 || len(gs[0].Cores) != 2 || len(gs[0].Moves) != 1 {
			t.Errorf("task groups --json g1: %+v", gs)
		}
		if r := runCtl(t, conn, "task", "groups", "a", "b"); r.code != ExitUsage {
			t.Errorf("task groups a b: %v", r)
		}
	})
}

// TestTaskListTrustWarnings: with many tasks, task list warns about each
// task node a process holding ctl's credential refuses (the trust checks
// are made in one batch), in the order of the list, and about no other.
func TestTaskListTrustWarnings(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		zk := chrootOf(t, tg)
		const n = 40
		for i := range n {
			mustCtlAuth(t, zk, "task", "add", "-f", writeSpec(t, strings.Replace(testSpecYAML, "name: t1", fmt.Sprintf("name: t%02d", i), 1)))
		}
		if r := runCtlAuth(t, zk, "task", "list"); r.code != 0 || r.stderr != "" {
			t.Fatalf("task list of %d trusted tasks: want no warning\n%v", n, r)
		}
		// t07 rewritable by anyone; t21 writable by another identity too.
		mallory := recipe.Credential{User: "mallory", Password: "mpw"}
		owner, _ := recipe.ParseCredential(coordtest.Auth)
		mustCtlAuth(t, zk, "setacl", "/mysql_replicator/tasks/t07", "world:anyone:cdrwa")
		mustCtlAuth(t, zk, "setacl", "/mysql_replicator/tasks/t21", "digest:"+owner.ID()+":cdrwa,digest:"+mallory.ID()+":cdrwa")
		r := runCtlAuth(t, zk, "task", "list")
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		if r.code != 0 || len(lines) != 2 ||
			!strings.HasPrefix(lines[0], "warning: recipe: untrusted node: /mysql_replicator/tasks/t07 grants cdrwa to world:anyone, but only this process's identity digest:"+owner.User+" may write") ||
			!strings.HasPrefix(lines[1], "warning: recipe: untrusted node: /mysql_replicator/tasks/t21 grants cdrwa to digest:"+mallory.ID()+", but only") {
			t.Fatalf("task list with t07 and t21 untrusted: want exactly their two warnings, in order\n%v", r)
		}
		if got := strings.Count(r.stdout, "\nt"); got != n {
			t.Errorf("task list shows %d tasks, want %d\n%s", got, n, r.stdout)
		}
	})
}

// TestTaskAddMany: task add -f takes a file of --- separated specs, a
// directory of spec files or standard input; it validates every spec
// before storing any, reports each invalid document (or, without
// --replace, each existing task) with its file and number, and then
// stores nothing.
func TestTaskAddMany(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		spec := func(name string) string { return strings.Replace(testSpecYAML, "name: t1", "name: "+name, 1) }
		stored := func() string {
			t.Helper()
			r := runCtlAuth(t, conn, "ls", "/mysql_replicator/tasks")
			if r.code != 0 {
				return "[]"
			}
			return strings.TrimSpace(r.stdout)
		}
		write := func(dir, name, text string) string {
			t.Helper()
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		tmp := t.TempDir()

		// Two invalid documents of four: both named, nothing stored.
		bad := write(tmp, "bad.yaml", spec("a1")+"---\n"+strings.Replace(spec("a2"), "port: 3306", "port: 70000", 1)+
			"---\n"+spec("a3")+"---\n"+spec("a4")+"fliter: {}\n")
		r := runCtlAuth(t, conn, "task", "add", "-f", bad)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != ExitFailure || len(lines) != 3 ||
			!strings.HasPrefix(lines[0], bad+": document 2 (line 4): core: invalid task spec: source.port: 70000") ||
			!strings.HasPrefix(lines[1], bad+": document 4 (line 12): ") || !strings.Contains(lines[1], "line 16: field fliter not found") ||
			lines[2] != "task add: nothing stored: 2 of 4 documents are invalid (each said above)" {
			t.Fatalf("add of a stream with two invalid documents: want each named and nothing stored\n%v", r)
		}
		if got := stored(); got != "[]" {
			t.Fatalf("after a refused add, tasks stored: %s", got)
		}

		// A valid stream: every task stored, in order.
		good := write(tmp, "good.yaml", "# three tasks\n---\n"+spec("a1")+"---\n"+spec("a2")+"---\n"+spec("a3"))
		out := mustCtlAuth(t, conn, "task", "add", "-f", good)
		if !regexp.MustCompile(`(?s)^task a1 added .*\ntask a2 added .*\ntask a3 added .*\n$`).MatchString(out) {
			t.Fatalf("add of three specs printed %q", out)
		}
		// Without --replace, a set with existing tasks is refused whole.
		more := write(tmp, "more.yaml", spec("a3")+"---\n"+spec("a9"))
		r = runCtlAuth(t, conn, "task", "add", "-f", more)
		if r.code != ExitFailure || !strings.Contains(r.stderr, more+": document 1 (line 1): core: task exists: a3") ||
			!strings.Contains(r.stderr, "nothing stored: 1 of the 2 tasks exist already (use --replace") {
			t.Fatalf("add of a set with an existing task: want it refused whole\n%v", r)
		}
		if got := stored(); got != "[a1, a2, a3]" {
			t.Fatalf("after a refused add, tasks stored: %s, want [a1, a2, a3]", got)
		}
		mustCtlAuth(t, conn, "task", "add", "--replace", "-f", more)

		// A directory: its .yaml, .yml and .json files, in name order;
		// other files ignored. The JSON one is the stored form of a spec.
		dir := t.TempDir()
		write(dir, "1.yaml", spec("d1"))
		write(dir, "2.yml", spec("d2")+"---\n"+spec("d3"))
		sp, err := core.ParseSpec([]byte(spec("d4")))
		if err != nil {
			t.Fatal(err)
		}
		write(dir, "3.json", string(sp.Marshal()))
		write(dir, "README.md", "not a spec")
		r = runCtlAuth(t, conn, "--json", "task", "add", "-f", dir)
		var added []struct{ Task, Path string }
		if err := json.Unmarshal([]byte(r.stdout), &added); r.code != 0 || err != nil || len(added) != 4 ||
			added[0].Task != "d1" || added[3].Task != "d4" || added[3].Path != "/mysql_replicator/tasks/d4" {
			t.Fatalf("--json add of a directory: want the four tasks in name order\n%v", r)
		}
		// Two specs naming one task are refused, with both places.
		write(dir, "4.yaml", spec("d2"))
		r = runCtlAuth(t, conn, "task", "add", "--replace", "-f", dir)
		if r.code != ExitFailure || !strings.Contains(r.stderr, filepath.Join(dir, "4.yaml")+": core: invalid task spec: task d2 is also in "+filepath.Join(dir, "2.yml")+": document 1 (line 1)") {
			t.Fatalf("add of a directory naming d2 twice: want it refused\n%v", r)
		}
		if r := runCtlAuth(t, conn, "task", "add", "-f", t.TempDir()); r.code != ExitUsage || !strings.Contains(r.stderr, "has no .yaml, .yml or .json file") {
			t.Fatalf("add of an empty directory: want a usage error\n%v", r)
		}

		// Standard input takes a stream too.
		r = runCtlEnvAuth(t, Env{Stdin: strings.NewReader(spec("s1") + "---\n" + spec("s2"))}, conn, "task", "add", "-f", "-")
		if r.code != 0 || !strings.Contains(r.stdout, "task s1 added") || !strings.Contains(r.stdout, "task s2 added") {
			t.Fatalf("add of two specs from standard input\n%v", r)
		}
		if got := stored(); got != "[a1, a2, a3, a9, d1, d2, d3, d4, s1, s2]" {
			t.Errorf("tasks stored at the end: %s", got)
		}
	})
}

// TestTaskAddEventTargets stores tasks whose target is a NATS JetStream
// stream or Kafka and shows them, their passwords hidden; a target
// missing a required field is refused with the field named.
func TestTaskAddEventTargets(t *testing.T) {
	for _, tc := range []struct {
		kind, target, shows, drop, refused string
	}{
		{"nats", "{kind: nats, url: 'nats://nats.example:4222', stream: SHOP_CDC, subjectPrefix: cdc, user: shepherd, password: t0ken}",
			"nats nats://nats.example:4222 stream SHOP_CDC, subjects cdc.>, user shepherd", "stream: SHOP_CDC, ", "target.stream: required"},
		{"kafka", "{kind: kafka, brokers: ['kafka.example:9093'], topicPrefix: cdc, format: canal, saslMechanism: PLAIN, user: shepherd, password: t0ken, tls: {}}",
			"kafka kafka.example:9093 topics cdc.<db>.<table> (canal), PLAIN user shepherd, TLS", "brokers: ['kafka.example:9093'], ", "target.brokers: required"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			onEachTarget(t, func(t *testing.T, tg *target) {
				conn := chrootOf(t, tg)
				dir := t.TempDir()
				spec := "name: n1\nsource: {host: db1.example, user: repl, flavor: mariadb}\ntarget: " + tc.target + "\n"
				good := filepath.Join(dir, "n1.yaml")
				if err := os.WriteFile(good, []byte(spec), 0o644); err != nil {
					t.Fatal(err)
				}
				mustCtlAuth(t, conn, "task", "add", "-f", good)
				out := mustCtlAuth(t, conn, "task", "show", "n1")
				if !strings.Contains(out, tc.shows) || strings.Contains(out, "t0ken") {
					t.Errorf("task show of a %s task: want %q, no password\n%s", tc.kind, tc.shows, out)
				}
				bad := filepath.Join(dir, "bad.yaml")
				if err := os.WriteFile(bad, []byte(strings.Replace(spec, tc.drop, "", 1)), 0o644); err != nil {
					t.Fatal(err)
				}
				if r := runCtlAuth(t, conn, "task", "add", "-f", bad); r.code == 0 || !strings.Contains(r.stderr, tc.refused) {
					t.Errorf("add of a %s target without %s: want refused naming it\n%v", tc.kind, tc.drop, r)
				}
			})
		})
	}
}

// TestTaskCheck: task check dry-runs specs from this host without a
// coordination server: a spec whose servers work is ready (exit 0), one
// whose target refuses connections is not, saying which check failed
// (exit 1), and an invalid spec is refused before any check.
func TestTaskCheck(t *testing.T) {
	src := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	dst := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	src.Exec(t, "CREATE DATABASE shop", "CREATE TABLE shop.items (id INT PRIMARY KEY)")
	closed := testpeer.FreePort(t) // nothing listens there
	dir := t.TempDir()
	spec := func(name string, targetPort int) string {
		return fmt.Sprintf("name: %s\nsource: {host: 127.0.0.1, port: %d, user: root, flavor: mariadb}\ntarget: {host: 127.0.0.1, port: %d, user: root, flavor: mariadb}\nfilter: {include: [shop.*]}\n",
			name, src.Port(), targetPort)
	}
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(spec("orders", dst.Port())), 0o600); err != nil {
		t.Fatal(err)
	}
	const noServer = "127.0.0.1:1" // task check needs no coordination server
	r := runCtl(t, noServer, "task", "check", "-f", good)
	if r.code != 0 || !strings.Contains(r.stdout, "task orders: ready") || !strings.Contains(r.stdout, "tables: 1)") || strings.Contains(r.stdout, "FAIL") {
		t.Errorf("task check of a working spec: %v", r)
	}
	both := filepath.Join(dir, "both.yaml")
	if err := os.WriteFile(both, []byte(spec("orders", dst.Port())+"---\n"+spec("broken", closed)), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCtl(t, noServer, "task", "check", "-f", both)
	if r.code != 1 || !strings.Contains(r.stdout, "task broken: NOT ready") || !regexp.MustCompile(`(?m)^\s+FAIL\s+target`).MatchString(r.stdout) ||
		!strings.Contains(r.stderr, "1 of 2 tasks could not run as specified") {
		t.Errorf("task check with an unreachable target: %v", r)
	}
	t.Logf("task check of a working and a broken spec:\n%s", r.stdout)
	r = runCtl(t, noServer, "--json", "task", "check", "-f", good)
	var reports []struct {
		Task   string `json:"task"`
		Report struct {
			OK bool `json:"ok"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &reports); r.code != 0 || err != nil || len(reports) != 1 || reports[0].Task != "orders" || !reports[0].Report.OK {
		t.Errorf("task check --json: %v (%v)", r, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nsource: {port: 3306}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCtl(t, noServer, "task", "check", "-f", bad); r.code == 0 || !strings.Contains(r.stderr, "source.host: required") || r.stdout != "" {
		t.Errorf("task check of an invalid spec: %v", r)
	}
}
