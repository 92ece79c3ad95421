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
// standby; reset-position refuses a task that is not stopped and a
// position that is not file:pos.
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
			{[]string{"task", "reset-position", "--to", "mysql-bin.000003:4", "copy_hot_item"}, ExitFailure, "is running: stop it first"},
			{[]string{"task", "reset-position", "--to", "mysql-bin.000003:4", "nope"}, ExitFailure, "no such task: nope"},
			{[]string{"task", "handover", "nope"}, ExitFailure, "no such task: nope"},
			{[]string{"task", "skip-event", "copy_hot_item"}, ExitFailure, "is running: stop it first"},
		} {
			if r := runCtlAuth(t, conn, tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("ctl %s: %v\nwant exit %d and %q", strings.Join(tc.args, " "), r, tc.code, tc.want)
			}
		}
	})
}
