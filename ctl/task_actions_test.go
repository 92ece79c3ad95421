package ctl

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/core"
)

// TestTaskHandoverAndResetPositionVerbs: handover deletes the owner's
// instance node (the next in line takes over) and is refused without a
// standby; reset-position takes file:pos, file:pos@server and GTID sets
// of both flavors, refuses each malformed one as a usage error saying
// what is wrong, and refuses a task that is not stopped.
func TestTaskHandoverAndResetPositionVerbs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		mustCtlAuth(t, conn, "task", "add", "-f", writeSpec(t, taskYAML))
		if r := runCtlAuth(t, conn, "task", "handover", "copy_hot_item"); r.code != ExitFailure || !strings.Contains(r.stderr, "no standby instance") {
			t.Fatalf("handover without instances: %v", r)
		}
		s := dialSession(t, conn)
		ctx := context.Background()
		instances := "/mysql_replicator/tasks/copy_hot_item/instances"
		if err := s.EnsurePath(ctx, instances); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		for _, st := range []core.InstanceState{
			{Version: 1, State: core.StateRunning, Host: "db-a", Since: now},
			{Version: 1, State: core.StateStandby, Host: "db-b", Since: now},
		} {
			if _, err := s.Create(ctx, instances+"/"+st.Host+"-", st.Marshal(), zk.FlagEphemeralSequential, nil); err != nil {
				t.Fatal(err)
			}
		}
		out := mustCtlAuth(t, conn, "task", "handover", "copy_hot_item")
		if !strings.Contains(out, "db-a-0000000000 handed over to db-b-0000000001") {
			t.Fatalf("handover printed %q", out)
		}
		if names, _, err := s.Children(ctx, instances); err != nil || len(names) != 1 || names[0] != "db-b-0000000001" {
			t.Fatalf("instances after handover: %v, %v", names, err)
		}
		for _, tc := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"task", "reset-position", "--to", "nowhere", "copy_hot_item"}, ExitUsage, "want file:pos"},
			{[]string{"task", "reset-position", "--to", "0-1-x", "copy_hot_item"}, ExitUsage, "not a MariaDB GTID position"},
			{[]string{"task", "reset-position", "--to", "3e11fa47-71ca-11e1-9e33-c80aa9429562:9-1", "copy_hot_item"}, ExitUsage, "not a MySQL GTID set"},
			{[]string{"task", "reset-position", "--to", "mysql-bin.000003:4@", "copy_hot_item"}, ExitUsage, "names no server after @"},
			{[]string{"task", "reset-position", "--to", "mysql-bin.000003:4@maria:2", "copy_hot_item"}, ExitUsage, "want mariadb:<server_id> or mysql:<server_uuid>"},
			{[]string{"task", "reset-position", "--to", "mysql-bin.000003:2", "copy_hot_item"}, ExitUsage, "inside the file header"},
			{[]string{"task", "reset-position", "--to", "mysql-bin.000003:4@mariadb:2", "copy_hot_item"}, ExitFailure, "is running: stop it first"},
			{[]string{"task", "reset-position", "--to", "0-1-57,1-2-9", "copy_hot_item"}, ExitFailure, "is running: stop it first"},
			{[]string{"task", "reset-position", "--to", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-57", "copy_hot_item"}, ExitFailure, "is running: stop it first"},
			{[]string{"task", "reset-position", "--to", "mysql-bin.000003:4", "copy_hot_item"}, ExitFailure, "is running: stop it first"},
			{[]string{"task", "reset-position", "--to", "mysql-bin.000003:4", "nope"}, ExitFailure, "no such task: nope"},
			{[]string{"task", "handover", "nope"}, ExitFailure, "no such task: nope"},
			{[]string{"task", "skip-event", "copy_hot_item"}, ExitFailure, "is running: stop it first"},
		} {
			if r := runCtlAuth(t, conn, tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("ctl %s: %v\nwant exit %d and %q", strings.Join(tc.args, " "), r, tc.code, tc.want)
			}
		}

		// Stopped (db-b only stands by), with a lastCommit: the position
		// is completed on the source — an in-memory one, a single server
		// without GTIDs — and stored with its server, which task show
		// prints.
		mustCtlAuth(t, conn, "task", "stop", "copy_hot_item")
		lc := core.LastCommit{Version: 1, File: "mem-bin.000001", Pos: 10, Time: now, Owner: "db-a-0000000000", Epoch: 7}
		if _, err := s.Create(ctx, "/mysql_replicator/tasks/copy_hot_item/lastCommit", lc.Marshal(), zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
		env := Env{Engine: core.NewMemEngine(100)}
		for _, tc := range []struct {
			to   string
			code int
			want string
		}{
			{"mem-bin.000001:40@mariadb:2", ExitFailure, "is of server mariadb:2"},
			{"0-1-57", ExitFailure, "the source has no GTIDs"},
			{"mem-bin.000001:40", 0, "task copy_hot_item: lastCommit mem-bin.000001:10 → mem-bin.000001:40 of server mariadb:1; shepherd ctl task start copy_hot_item to resume\n"},
			{"mem-bin.000001:50@mariadb:1", 0, "→ mem-bin.000001:50 of server mariadb:1;"},
		} {
			r := runCtlEnvAuth(t, env, conn, "task", "reset-position", "--to", tc.to, "copy_hot_item")
			if out := r.stdout + r.stderr; r.code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("ctl task reset-position --to %s: %v\nwant exit %d and %q", tc.to, r, tc.code, tc.want)
			}
		}
		if show := mustCtlAuth(t, conn, "task", "show", "copy_hot_item"); !strings.Contains(show, "lastCommit: mem-bin.000001:50 of server mariadb:1 at ") {
			t.Errorf("task show after reset-position:\n%s", show)
		}
	})
}
