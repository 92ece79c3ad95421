package ctl

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/collector"
)

// TestStatusShowsTheWholeCluster: a task, a job and a source, read by
// `ctl status` through the cluster snapshot; --json is that snapshot,
// passwords redacted. A down server of --zk is shown DOWN without
// failing the run while another answers.
func TestStatusShowsTheWholeCluster(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		mustCtlAuth(t, conn, "task", "add", "-f", writeSpec(t, taskYAML))
		mustCtlAuth(t, conn, "job", "add", "--schedule", "@daily", "--env", "TOKEN=hunter2", "report", "--", "/bin/true")
		mustCtlAuth(t, conn, "source", "add", "file:///var/log/app.log")
		mustCtlAuth(t, conn, "service", "register", "--addr", "10.0.0.1:80", "--ttl", "1h", "app1", "api.svc.example")

		out := mustCtlAuth(t, conn, "status")
		for _, want := range []string{"coordination servers:", "standalone", "tasks (1):", "copy_hot_item", "jobs (1, 0 schedulers running):", "report",
			"collectors (0 of 0 alive):", "sources (1):", "file:///var/log/app.log  unassigned",
			"DNS names (1, 0 with no served address):", "app1  api.svc.example  10.0.0.1:80"} {
			if !strings.Contains(out, want) {
				t.Errorf("status:\n%s\nwant %q", out, want)
			}
		}
		var snap cluster.Snapshot
		if err := json.Unmarshal([]byte(mustCtlAuth(t, conn, "--json", "status")), &snap); err != nil {
			t.Fatal(err)
		}
		task, ok := snap.Task("copy_hot_item")
		job, jok := snap.Job("report")
		if !ok || task.Spec.Source.Password != "***" || !jok || job.Job.Env["TOKEN"] != "***" || len(snap.Coord) != 1 || !snap.Coord[0].OK || len(snap.Errors) != 0 {
			t.Fatalf("--json status = %+v; want the task and job redacted, one server up, no errors", snap)
		}

		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := l.Addr().String()
		l.Close()
		hosts, chroot, _ := strings.Cut(conn, "/")
		r := runCtlAuth(t, hosts+","+down+"/"+chroot, "status")
		if r.code != 0 || !strings.Contains(r.stdout, down+"  DOWN") {
			t.Fatalf("status with %s down: %v; want it shown DOWN, exit 0", down, r)
		}

		// A part that cannot be read is shown so, the rest still is.
		s := dialSession(t, conn)
		if _, err := s.Set(context.Background(), collector.SourcesPath, []byte("{garbage"), -1); err != nil {
			t.Fatal(err)
		}
		r = runCtlAuth(t, conn, "status")
		if r.code != ExitFailure || !strings.Contains(r.stdout, "UNREADABLE: collector: malformed document: /logs/sources") ||
			!strings.Contains(r.stdout, "copy_hot_item") || !strings.Contains(r.stderr, "some parts could not be read: collectors:") {
			t.Fatalf("status with a malformed source list: %v; want collectors UNREADABLE, tasks shown, exit 1", r)
		}
	})
}
