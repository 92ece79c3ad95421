package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// TestJobVerbs walks a job through add, list, show, pause, resume,
// run-now (answered by a scheduler), logs and rm.
func TestJobVerbs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		out := filepath.Join(t.TempDir(), "effects")
		mustCtlAuth(t, conn, "job", "add", "--schedule", "@yearly", "--timeout", "1m", "--env", "OUT="+out,
			"report", "--", "sh", "-c", `echo "ran $SHEPHERD_RUN_KEY" | tee -a "$OUT"`)

		var list []scheduler.JobStatus
		if err := json.Unmarshal([]byte(mustCtlAuth(t, conn, "--json", "job", "list")), &list); err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Name != "report" || list[0].Job.Schedule != "@yearly" || list[0].Paused {
			t.Fatalf("job list = %+v, want report, @yearly, not paused", list)
		}
		mustCtlAuth(t, conn, "job", "pause", "report")
		if got := mustCtlAuth(t, conn, "job", "list"); !strings.Contains(got, "report") || !strings.Contains(got, "true") {
			t.Fatalf("job list after pause:\n%s\nwant report paused", got)
		}
		mustCtlAuth(t, conn, "job", "resume", "report")
		if got := mustCtlAuth(t, conn, "job", "show", "report"); !strings.Contains(got, `"schedule": "@yearly"`) || !strings.Contains(got, "paused: false") {
			t.Fatalf("job show:\n%s\nwant the spec, not paused", got)
		}

		startScheduler(t, conn)
		r := runCtlAuth(t, conn, "job", "run-now", "--wait", "30s", "report")
		if r.code != 0 || !strings.Contains(r.stdout, "succeeded attempt 1") {
			t.Fatalf("job run-now --wait: %v", r)
		}
		key := strings.Fields(r.stdout)[0]
		if got := mustCtlAuth(t, conn, "job", "logs", "report", key); !strings.Contains(got, "ran "+key) {
			t.Fatalf("job logs:\n%s\nwant the command's output", got)
		}
		if got := mustCtlAuth(t, conn, "job", "show", "report"); !strings.Contains(got, key) || !strings.Contains(got, "succeeded") {
			t.Fatalf("job show:\n%s\nwant run %s succeeded", got, key)
		}
		mustCtlAuth(t, conn, "job", "rm", "report")
		if r := runCtlAuth(t, conn, "job", "rm", "report"); r.code != ExitFailure || !strings.Contains(r.stderr, "no such job") {
			t.Fatalf("second job rm: %v; want exit 1, no such job", r)
		}
		// Its runs are left, but nobody would answer a trigger.
		if r := runCtlAuth(t, conn, "job", "run-now", "report"); r.code != ExitFailure || !strings.Contains(r.stderr, "no such job") {
			t.Fatalf("job run-now of a removed job: %v; want exit 1, no such job", r)
		}
	})
}

// TestJobRunNowNoSuchJob: run-now of a job neither stored nor in a
// running scheduler's file fails, exit 1 with "no such job", and leaves
// no trigger behind for a scheduler that might start one day (issue 25:
// it exited 0 and left one).
func TestJobRunNowNoSuchJob(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		r := runCtlAuth(t, conn, "job", "run-now", "nosuchjob")
		if r.code != ExitFailure || r.stdout != "" || !strings.Contains(r.stderr, `no such job "nosuchjob"`) {
			t.Fatalf("job run-now nosuchjob: %v\nwant exit 1 and no such job", r)
		}
		if r := runCtlAuth(t, conn, "ls", scheduler.TriggersPath); r.code == 0 && r.stdout != "[]\n" {
			t.Fatalf("ls %s after a refused run-now: %v\nwant no trigger", scheduler.TriggersPath, r)
		}
	})
}

// TestJobAddRejectsBadSpecs: bad cron expressions and specs are usage
// errors naming the field, and nothing is stored.
func TestJobAddRejectsBadSpecs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		bad := filepath.Join(t.TempDir(), "jobs.yaml")
		if err := os.WriteFile(bad, []byte("jobs:\n- {name: x, schedule: '* * *', command: 'true'}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			args []string
			code int
			want string
		}{
			{[]string{"job", "add", "--schedule", "61 * * * *", "j", "--", "true"}, ExitUsage, "schedule"},
			{[]string{"job", "add", "--schedule", "@daily", "--time-zone", "Nowhere/Land", "j", "--", "true"}, ExitUsage, "timeZone"},
			{[]string{"job", "add", "--schedule", "@daily", "--concurrency-policy", "queue", "j", "--", "true"}, ExitUsage, "concurrencyPolicy"},
			{[]string{"job", "add", "--schedule", "@daily", "j"}, ExitUsage, "want a name and a command"},
			{[]string{"job", "add", "--file", bad}, ExitFailure, `job "x": schedule`},
			{[]string{"job", "frob"}, ExitUsage, "unknown verb"},
		}
		for _, tt := range tests {
			r := runCtlAuth(t, conn, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("ctl %s: %v\nwant exit %d mentioning %q", strings.Join(tt.args, " "), r, tt.code, tt.want)
			}
		}
		if got := mustCtlAuth(t, conn, "--json", "job", "list"); strings.TrimSpace(got) != "[]" {
			t.Errorf("job list after rejected adds = %s, want []", got)
		}
	})
}

// startScheduler runs a scheduler on conn until the test ends.
func startScheduler(t *testing.T, conn string) {
	t.Helper()
	startFileScheduler(t, conn, "test", "")
}

// startFileScheduler runs scheduler host on conn, with the jobs file
// jobsFile if not empty, as `shepherd scheduler --jobs` does. It stops
// when the test ends or stop is called.
func startFileScheduler(t *testing.T, conn, host, jobsFile string) (stop func()) {
	t.Helper()
	return startLabeledScheduler(t, conn, host, jobsFile, nil)
}

// startLabeledScheduler is startFileScheduler with labels (--labels).
func startLabeledScheduler(t *testing.T, conn, host, jobsFile string, labels map[string]string) (stop func()) {
	t.Helper()
	opts := scheduler.Options{Host: host, LogDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), Resync: time.Second, Labels: labels}
	if jobsFile != "" {
		data, err := os.ReadFile(jobsFile)
		if err != nil {
			t.Fatal(err)
		}
		if opts.Jobs, err = scheduler.ParseJobs(data); err != nil {
			t.Fatal(err)
		}
		opts.JobsFile = jobsFile
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := recipe.Dial(ctx, conn, recipe.Options{SessionTimeout: 2 * time.Second, Auth: coordtest.Auth, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scheduler.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("scheduler %s: %v", host, err)
			}
			s.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestJobListShowsFileJobs: jobs of the --jobs files of running
// schedulers are listed and shown (environment values hidden) beside the
// stored ones; a name two files define differently is flagged, a stored
// job overriding a file job says so, and a stopped scheduler's file jobs
// go from the list (issue 10).
func TestJobListShowsFileJobs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		dir := t.TempDir()
		write := func(name, text string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		fileA := write("a.yaml", `jobs:
- {name: nightly, schedule: "@daily", command: /bin/true, env: {TOKEN: s3cret}}
- {name: hourly, schedule: "@hourly", command: /bin/true}
`)
		fileB := write("b.yaml", `jobs:
- {name: nightly, schedule: "0 4 * * *", command: /bin/true}
`)
		list := func() map[string]scheduler.JobStatus {
			var l []scheduler.JobStatus
			if err := json.Unmarshal([]byte(mustCtlAuth(t, conn, "--json", "job", "list")), &l); err != nil {
				t.Fatal(err)
			}
			m := map[string]scheduler.JobStatus{}
			for _, j := range l {
				m[j.Name] = j
			}
			return m
		}
		want := func(what string, ok func(map[string]scheduler.JobStatus) bool) {
			t.Helper()
			coordtest.WaitFor(t, 30*time.Second, what, func() error {
				if l := list(); !ok(l) {
					return fmt.Errorf("job list = %+v", l)
				}
				return nil
			})
		}

		stopA := startFileScheduler(t, conn, "a", fileA)
		want("a's file jobs", func(l map[string]scheduler.JobStatus) bool {
			return len(l) == 2 && l["nightly"].Job.Schedule == "@daily" && slices.Equal(l["nightly"].FileHosts, []string{"a"}) &&
				!l["nightly"].Stored && slices.Equal(l["hourly"].FileHosts, []string{"a"})
		})
		if got := mustCtlAuth(t, conn, "job", "list"); !strings.Contains(got, "SOURCE") || !strings.Contains(got, "file(a)") {
			t.Errorf("job list:\n%s\nwant a SOURCE column saying file(a)", got)
		}
		got := mustCtlAuth(t, conn, "job", "show", "nightly")
		if !strings.Contains(got, `"schedule": "@daily"`) || !strings.Contains(got, "jobs file of a") || strings.Contains(got, "s3cret") {
			t.Errorf("job show nightly:\n%s\nwant a's spec, its origin, and no environment value", got)
		}

		startFileScheduler(t, conn, "b", fileB)
		want("nightly in two files that differ", func(l map[string]scheduler.JobStatus) bool {
			return slices.Equal(l["nightly"].FileHosts, []string{"a", "b"}) && l["nightly"].Differs
		})
		if r := runCtlAuth(t, conn, "job", "list"); r.code != 0 || !strings.Contains(r.stdout, "DIFFERS") || !strings.Contains(r.stderr, "define it differently") {
			t.Errorf("job list: %v; want nightly flagged as differing, with a warning", r)
		}

		mustCtlAuth(t, conn, "job", "add", "--schedule", "@every 2h", "hourly", "--", "/bin/true")
		want("a's hourly winning over the stored one", func(l map[string]scheduler.JobStatus) bool {
			return l["hourly"].Stored && l["hourly"].Job.Schedule != "@every 2h" && slices.Equal(l["hourly"].FileHosts, []string{"a"})
		})
		if got := mustCtlAuth(t, conn, "job", "list"); !strings.Contains(got, "file(a), stored one refused") {
			t.Errorf("job list:\n%s\nwant hourly: file(a), stored one refused", got)
		}

		stopA()
		want("a's file jobs gone with a", func(l map[string]scheduler.JobStatus) bool {
			return len(l) == 2 && slices.Equal(l["nightly"].FileHosts, []string{"b"}) && !l["nightly"].Differs &&
				l["nightly"].Job.Schedule == "0 4 * * *" && l["hourly"].Stored && len(l["hourly"].FileHosts) == 0
		})
	})
}

// TestJobStoredUnderAnotherNameIsRefused: a job document stored at
// /scheduler/jobs/alias naming the job "real" is refused by ctl as by the
// scheduler (scheduler's one decoder): list marks it invalid, show fails
// saying why and what to do.
func TestJobStoredUnderAnotherNameIsRefused(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		s := dialSession(t, conn)
		ctx := context.Background()
		if err := s.EnsurePath(ctx, scheduler.JobsPath); err != nil {
			t.Fatal(err)
		}
		doc := scheduler.Job{Name: "real", Schedule: "@daily", Command: "/bin/true"}.Encode()
		if _, err := s.Create(ctx, scheduler.JobPath("alias"), doc, 0, nil); err != nil {
			t.Fatal(err)
		}
		const why = `stored at /scheduler/jobs/alias but named "real"`
		if got := mustCtlAuth(t, conn, "job", "list"); !strings.Contains(got, "alias") || !strings.Contains(got, "refused: invalid job: "+why) {
			t.Errorf("job list:\n%s\nwant alias marked invalid: %s", got, why)
		}
		r := runCtlAuth(t, conn, "job", "show", "alias")
		if r.code != ExitFailure || !strings.Contains(r.stderr, why) || !strings.Contains(r.stderr, "shepherd ctl job rm alias") {
			t.Errorf("job show alias: %v; want exit 1 saying %q and the remedy", r, why)
		}
	})
}

// TestJobDependencies: job add --after stores dependencies and refuses a
// cycle (exit 2, naming the field, nothing stored; in a file, exit 1);
// job graph prints upstream jobs first; a run-now --run-key of a
// downstream job shows waiting in job show and job list until its
// upstream run of that key ends, then runs.
func TestJobDependencies(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		out := filepath.Join(t.TempDir(), "effects")
		add := func(name string, extra ...string) result {
			args := append([]string{"job", "add", "--schedule", "@yearly", "--env", "OUT=" + out}, extra...)
			return runCtlAuth(t, conn, append(args, name, "--", "sh", "-c", `echo "$SHEPHERD_JOB $SHEPHERD_UPSTREAM_EXTRACT" >> "$OUT"; printf "$SHEPHERD_JOB" > "$SHEPHERD_RESULT_FILE"`)...)
		}
		for _, a := range [][]string{{"extract"}, {"transform", "--after", "extract"}, {"load", "--after", "transform", "--when-upstream", "any"}} {
			if r := add(a[0], a[1:]...); r.code != 0 {
				t.Fatalf("job add %v: %v", a, r)
			}
		}
		if r := add("extract", "--after", "load"); r.code != ExitUsage || !strings.Contains(r.stderr, `job "extract": after: cycle extract → load → transform → extract`) {
			t.Fatalf("job add closing a cycle: %v; want exit 2 naming the cycle", r)
		}
		cyc := filepath.Join(t.TempDir(), "jobs.yaml")
		if err := os.WriteFile(cyc, []byte("jobs:\n- {name: extract, schedule: '@daily', command: 'true', after: [{job: load}]}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := runCtlAuth(t, conn, "job", "add", "--file", cyc); r.code != ExitFailure || !strings.Contains(r.stderr, "cycle") {
			t.Fatalf("job add --file closing a cycle: %v; want exit 1 naming the cycle", r)
		}
		if got := mustCtlAuth(t, conn, "job", "show", "extract"); strings.Contains(got, "after") {
			t.Fatalf("extract after refused adds:\n%s\nwant it unchanged", got)
		}
		graph := mustCtlAuth(t, conn, "job", "graph")
		want := []string{"JOB", "extract", "  transform", "    load"}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(graph), "\n") {
			f := strings.Fields(l)
			got = append(got, strings.Repeat(" ", len(l)-len(strings.TrimLeft(l, " ")))+f[0])
		}
		if !slices.Equal(got, want) || !strings.Contains(graph, "extract  ") || !strings.Contains(graph, "any") {
			t.Fatalf("job graph:\n%s\nwant extract, transform, load indented by level", graph)
		}
		var g scheduler.Graph
		if err := json.Unmarshal([]byte(mustCtlAuth(t, conn, "--json", "job", "graph")), &g); err != nil || len(g.Jobs) != 3 || g.Jobs[2].Level != 2 {
			t.Fatalf("job graph --json: %+v (%v)", g, err)
		}

		startScheduler(t, conn)
		const key = "2030-01-01"
		if r := runCtlAuth(t, conn, "job", "run-now", "--run-key", key, "transform"); r.code != 0 || strings.TrimSpace(r.stdout) != key {
			t.Fatalf("job run-now --run-key: %v", r)
		}
		coordtest.WaitFor(t, 30*time.Second, "transform waiting", func() error {
			show := mustCtlAuth(t, conn, "job", "show", "transform")
			list := mustCtlAuth(t, conn, "job", "list")
			if !strings.Contains(show, "waiting") || !strings.Contains(show, "for the runs of extract") || !strings.Contains(list, key+" (waiting)") {
				return fmt.Errorf("job show:\n%s\njob list:\n%s", show, list)
			}
			return nil
		})
		r := runCtlAuth(t, conn, "job", "run-now", "--run-key", key, "--wait", "30s", "extract")
		if r.code != 0 {
			t.Fatalf("job run-now extract: %v", r)
		}
		coordtest.WaitFor(t, 30*time.Second, "transform ran", func() error {
			if show := mustCtlAuth(t, conn, "job", "show", "transform"); !strings.Contains(show, "succeeded") {
				return fmt.Errorf("job show:\n%s", show)
			}
			return nil
		})
		if got, _ := os.ReadFile(out); string(got) != "extract \ntransform extract\n" {
			t.Errorf("effects %q, want extract, then transform with extract's data", got)
		}
		if r := runCtlAuth(t, conn, "job", "run-now", "--run-key", key, "extract"); r.code != ExitFailure || !strings.Contains(r.stderr, "never run again") {
			t.Errorf("run-now of a finished run key: %v; want exit 1", r)
		}
		if r := runCtlAuth(t, conn, "job", "run-now", "--run-key", "yesterday", "extract"); r.code != ExitUsage || !strings.Contains(r.stderr, "run key") {
			t.Errorf("run-now of a bad run key: %v; want exit 2", r)
		}
	})
}

// TestJobRunNowParams: run-now --param passes parameters to the run
// (SHEPHERD_PARAM_<name>) and --json shows them in its result; bad ones
// are usage errors naming the parameter, and leave no trigger.
func TestJobRunNowParams(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		mustCtlAuth(t, conn, "job", "add", "--schedule", "@yearly", "report", "--", "sh", "-c", `echo "day=$SHEPHERD_PARAM_day mode=$SHEPHERD_PARAM_mode"`)
		startScheduler(t, conn)
		r := runCtlAuth(t, conn, "--json", "job", "run-now", "--param", "day=2026-11-22", "--param", "mode=a=b", "--wait", "30s", "report")
		var res scheduler.Result
		if err := json.Unmarshal([]byte(r.stdout), &res); r.code != 0 || err != nil {
			t.Fatalf("run-now --param: %v (%v)", r, err)
		}
		if res.Params["day"] != "2026-11-22" || res.Params["mode"] != "a=b" || !strings.Contains(res.Output, "day=2026-11-22 mode=a=b") {
			t.Fatalf("result %+v, want the parameters recorded and in the output", res)
		}
		for _, tc := range []struct{ param, want string }{
			{"novalue", `param "novalue": want NAME=value`},
			{"a-b=1", `param "a-b"`},
			{"v=" + strings.Repeat("x", scheduler.MaxParamValueBytes+1), "param v: value of 4097 bytes"},
		} {
			if r := runCtlAuth(t, conn, "job", "run-now", "--param", tc.param, "report"); r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("run-now --param %.20s: %v; want exit 2 mentioning %q", tc.param, r, tc.want)
			}
		}
		if r := runCtlAuth(t, conn, "job", "run-now", "--param", "a=1", "--param", "a=2", "report"); r.code != ExitUsage || !strings.Contains(r.stderr, "given twice") {
			t.Errorf("run-now with a parameter twice: %v", r)
		}
		// The run's trigger goes once it settled; no refused one was made.
		coordtest.WaitFor(t, 30*time.Second, "no trigger left", func() error {
			if r := runCtlAuth(t, conn, "ls", scheduler.TriggersPath); r.code != 0 || r.stdout != "[]\n" {
				return fmt.Errorf("triggers: %v", r)
			}
			return nil
		})
	})
}

// TestJobShards: job add --shards stores a sharded job; job show lists
// each item of its runs under the run, and job logs prints each item's
// log.
func TestJobShards(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		if r := runCtlAuth(t, conn, "job", "add", "--schedule", "@yearly", "--shards", "300", "scan", "--", "true"); r.code != ExitUsage || !strings.Contains(r.stderr, "shards: 300") {
			t.Fatalf("job add --shards 300: %v; want exit 2 naming shards", r)
		}
		mustCtlAuth(t, conn, "job", "add", "--schedule", "@yearly", "--shards", "3", "scan", "--", "sh", "-c", `echo "item $SHEPHERD_SHARD of $SHEPHERD_SHARDS"`)
		startScheduler(t, conn)
		r := runCtlAuth(t, conn, "job", "run-now", "--wait", "30s", "scan")
		if r.code != 0 || !strings.Contains(r.stdout, "succeeded") {
			t.Fatalf("job run-now --wait: %v", r)
		}
		show := mustCtlAuth(t, conn, "job", "show", "scan")
		for i := range 3 {
			if !regexp.MustCompile(fmt.Sprintf(`(?m)^  item %d +succeeded +1 +test `, i)).MatchString(show) {
				t.Errorf("job show:\n%s\nwant item %d succeeded at attempt 1 on test", show, i)
			}
		}
		// job logs shows each item's own log.
		logs := mustCtlAuth(t, conn, "job", "logs", "scan")
		for i := range 3 {
			if !strings.Contains(logs, fmt.Sprintf("=== item %d of 3: succeeded on test, attempt 1\n", i)) || !strings.Contains(logs, fmt.Sprintf("item %d of 3\n", i)) {
				t.Errorf("job logs:\n%s\nwant item %d's header and output", logs, i)
			}
		}
	})
}

// TestJobNodeSelector: job add --node-selector and --routing store them;
// job show says which schedulers fire the job, or warns that none does;
// a run goes to a matching scheduler.
func TestJobNodeSelector(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		if r := runCtlAuth(t, conn, "job", "add", "--schedule", "@yearly", "--routing", "round", "x", "--", "true"); r.code != ExitUsage || !strings.Contains(r.stderr, "routing") {
			t.Fatalf("job add --routing round: %v; want exit 2 naming routing", r)
		}
		if r := runCtlAuth(t, conn, "job", "add", "--schedule", "@yearly", "--node-selector", "role", "x", "--", "true"); r.code != ExitUsage || !strings.Contains(r.stderr, "--node-selector") {
			t.Fatalf("job add --node-selector role: %v; want exit 2", r)
		}
		mustCtlAuth(t, conn, "job", "add", "--schedule", "@yearly", "--node-selector", "role=batch", "--routing", "spread", "batch", "--", "true")
		mustCtlAuth(t, conn, "job", "add", "--schedule", "@yearly", "--node-selector", "gpu=true", "gpu", "--", "true")
		startLabeledScheduler(t, conn, "web", "", map[string]string{"role": "web"})
		startLabeledScheduler(t, conn, "b1", "", map[string]string{"role": "batch"})
		coordtest.WaitFor(t, 30*time.Second, "b1 fires batch", func() error {
			if got := mustCtlAuth(t, conn, "job", "show", "batch"); !strings.Contains(got, "fired by: b1\n") || !strings.Contains(got, `"routing": "spread"`) {
				return fmt.Errorf("job show:\n%s", got)
			}
			return nil
		})
		if r := runCtlAuth(t, conn, "job", "show", "gpu"); r.code != 0 || !strings.Contains(r.stderr, "no running scheduler has labels matching its nodeSelector") {
			t.Errorf("job show gpu: %v; want a warning", r)
		}
		if r := runCtlAuth(t, conn, "job", "run-now", "--wait", "30s", "batch"); r.code != 0 || !strings.Contains(r.stdout, "succeeded attempt 1 on b1") {
			t.Errorf("run-now batch: %v; want it run on b1", r)
		}
	})
}

// TestJobHTTP: job add --http-url stores an HTTP job (its header values
// shown as *** by job show); a scheduler without --http-allow refuses to
// call it, and run-now says why.
func TestJobHTTP(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		if r := runCtlAuth(t, conn, "job", "add", "--schedule", "@yearly", "--http-url", "ftp://x/", "hook"); r.code != ExitUsage || !strings.Contains(r.stderr, "http.url") {
			t.Fatalf("job add --http-url ftp: %v; want exit 2 naming http.url", r)
		}
		if r := runCtlAuth(t, conn, "job", "add", "--schedule", "@yearly", "--http-url", "http://127.0.0.1:9/", "hook", "--", "true"); r.code != ExitUsage {
			t.Fatalf("job add --http-url with a command: %v; want exit 2", r)
		}
		mustCtlAuth(t, conn, "job", "add", "--schedule", "@yearly", "--http-url", "http://127.0.0.1:9/rebuild", "--http-method", "POST",
			"--http-header", "Authorization: Bearer s3cret", "--http-success", "202", "hook")
		show := mustCtlAuth(t, conn, "job", "show", "hook")
		if strings.Contains(show, "s3cret") || !strings.Contains(show, `"Authorization": "***"`) || !strings.Contains(show, `"url": "http://127.0.0.1:9/rebuild"`) {
			t.Fatalf("job show:\n%s", show)
		}
		startScheduler(t, conn)
		r := runCtlAuth(t, conn, "job", "run-now", "--wait", "30s", "hook")
		if r.code != ExitFailure || !strings.Contains(r.stderr, "--http-allow") {
			t.Errorf("run-now of an HTTP job on a scheduler without --http-allow: %v; want exit 1 naming --http-allow", r)
		}
	})
}
