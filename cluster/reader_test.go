package cluster

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/scheduler"
)

var targets []*coordtest.Target

func TestMain(m *testing.M) {
	os.Exit(coordtest.Run(m, "cluster", 200*time.Millisecond, &targets))
}

func dial(t *testing.T, connect string) *recipe.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := recipe.Dial(ctx, connect, recipe.Options{SessionTimeout: 4 * time.Second, Auth: coordtest.Auth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

const taskSpec = `name: copy
source: {host: source.test, port: 3306, user: repl, password: s3cret, flavor: mariadb}
target: {host: target.test, port: 3306, user: apply, passwordFile: /etc/shepherd/target.pw, flavor: mariadb}
start: current
`

// populate writes one task, two jobs (one stored under another job's
// name) and one source, as ctl would.
func populate(t *testing.T, s *recipe.Session) {
	t.Helper()
	ctx := context.Background()
	sp, err := core.ParseSpec([]byte(taskSpec))
	if err != nil {
		t.Fatal(err)
	}
	if err := core.NewAdmin(s, "").AddTask(ctx, sp, false); err != nil {
		t.Fatal(err)
	}
	jobs := scheduler.NewAdmin(s)
	nightly := scheduler.Job{Name: "nightly", Schedule: "0 3 * * *", Command: "/bin/true", Env: map[string]string{"TOKEN": "hunter2"}}
	if err := jobs.StoreJob(ctx, nightly); err != nil {
		t.Fatal(err)
	}
	// A job stored at /scheduler/jobs/misnamed whose document names
	// "nightly": refused by every reader, as by the scheduler.
	if _, err := s.Create(ctx, scheduler.JobPath("misnamed"), nightly.Encode(), zk.FlagPersistent, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := collector.NewAdmin(s).AddSources(ctx, "file:///var/log/app.log", "https://reader:pa55word@logs.example/app.log"); err != nil {
		t.Fatal(err)
	}
}

func TestReaderReadsEverySectionOfARealCluster(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		connect := tg.Chroot(t, "cluster")
		s := dial(t, connect)
		populate(t, s)
		servers, err := coordhealth.Servers(connect)
		if err != nil {
			t.Fatal(err)
		}
		r := NewReader(s, Options{CoordServers: servers, RunsPerJob: 3})
		snap, err := r.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Errors) != 0 {
			t.Fatalf("Errors = %v", snap.Errors)
		}
		task, ok := snap.Task("copy")
		if !ok || task.Spec == nil || task.Spec.Source.Password != core.RedactedPassword {
			t.Fatalf("task = %+v, want it with its password redacted", task)
		}
		job, ok := snap.Job("nightly")
		if !ok || job.Job.Env["TOKEN"] != scheduler.RedactedValue || len(job.Next) != scheduler.MaxNext || !job.Stored || job.Error != "" {
			t.Fatalf("job = %+v, want it stored, redacted, with %d next times", job, scheduler.MaxNext)
		}
		if bad, ok := snap.Job("misnamed"); !ok || !strings.Contains(bad.Error, `named "nightly"`) || len(bad.Next) != 0 {
			t.Fatalf("misnamed job = %+v, want it refused for its name", bad)
		}
		if len(snap.Sources) != 2 || snap.Sources[0].URI != "file:///var/log/app.log" || snap.Sources[0].Collector != "" ||
			snap.Sources[1].URI != "https://reader:xxxxx@logs.example/app.log" {
			t.Fatalf("sources = %+v, want the second's password redacted", snap.Sources)
		}
		if len(snap.Coord) != 1 || !snap.Coord[0].OK || snap.Coord[0].Mode != "standalone" {
			t.Fatalf("coord = %+v", snap.Coord)
		}
	})
}

// A section the reader cannot read is an error of its own, not a
// failed snapshot: here an unreachable coordination server.
func TestReaderReportsASectionItCannotRead(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	s := dial(t, tg.Chroot(t, "cluster"))
	r := NewReader(s, Options{CoordServers: []string{"127.0.0.1:1"}})
	snap, err := r.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if why := snap.Errors[SectionCoord]; !strings.Contains(why, "127.0.0.1:1") || len(snap.Coord) != 1 || snap.Coord[0].OK {
		t.Fatalf("coord = %+v, errors %v", snap.Coord, snap.Errors)
	}
	if _, bad := snap.Errors[SectionTasks]; bad {
		t.Fatalf("tasks failed too: %v", snap.Errors)
	}
}

// With an hour's interval, a new job reaches subscribers only through
// the watch on /scheduler/jobs.
func TestPollerSeesANewJobThroughItsWatch(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		s := dial(t, tg.Chroot(t, "cluster"))
		_, ch := startPoller(t, NewReader(s, Options{}), time.Hour)
		if snap := next(t, ch); len(snap.Jobs) != 0 {
			t.Fatalf("jobs before any was stored: %+v", snap.Jobs)
		}
		err := scheduler.NewAdmin(s).StoreJob(context.Background(), scheduler.Job{Name: "hourly", Schedule: "@hourly", Command: "/bin/true"})
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, ok := next(t, ch).Job("hourly"); ok {
				return
			}
		}
	})
}
