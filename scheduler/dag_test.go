package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// triggerKey asks for run key of job, as `ctl job run-now --run-key`.
func triggerKey(t *testing.T, s *recipe.Session, job, key string) {
	t.Helper()
	got, err := NewAdmin(s).TriggerRun(context.Background(), job, time.Now(), RunRequest{RunKey: key})
	if err != nil || got != key {
		t.Fatalf("TriggerRun %s %s = %q, %v", job, key, got, err)
	}
}

// awaitResult waits for the result of a run.
func awaitResult(t *testing.T, s *recipe.Session, job, key string) Result {
	t.Helper()
	var r Result
	coordtest.WaitFor(t, 60*time.Second, "result of "+job+" "+key, func() error {
		got, ok, err := readResult(context.Background(), s, job, key)
		if err != nil || !ok {
			return fmt.Errorf("no result yet (%v)", err)
		}
		r = got
		return nil
	})
	return r
}

// awaitWaiting waits until the run's master shows it waiting for the
// runs of upstream.
func awaitWaiting(t *testing.T, s *recipe.Session, job, key string, upstream ...string) {
	t.Helper()
	coordtest.WaitFor(t, 30*time.Second, job+" "+key+" waiting", func() error {
		runs, err := NewAdmin(s).Runs(context.Background(), job)
		if err != nil {
			return err
		}
		for _, r := range runs {
			if r.RunKey == key && r.Waiting != nil && slices.Equal(r.Waiting.Upstream, upstream) && r.Running && r.Result == nil {
				return nil
			}
		}
		return fmt.Errorf("runs %+v: want %s running and waiting for %v", runs, key, upstream)
	})
}

// masterPID is the pid in a run's binding.
func masterPID(t *testing.T, s *recipe.Session, job, key string) int {
	t.Helper()
	data, _, err := s.Get(context.Background(), BindingPath(job, key))
	if err != nil {
		t.Fatalf("binding of %s %s: %v", job, key, err)
	}
	var b binding
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	return b.PID
}

// TestDAGExactlyOnceOverMasterKills: extract → transform → load over
// scheduler processes; the masters of extract and of transform are
// killed -9 in the middle of their first attempts (held there by a file),
// and a new scheduler joins after each kill. Every job's run executes to
// its end exactly once, in dependency order, each downstream run with
// its upstream's result data, the killed ones at attempt 2 (extract's
// with the parameters it was asked with).
func TestDAGExactlyOnceOverMasterKills(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		dir := t.TempDir()
		out, hold := filepath.Join(dir, "effects"), filepath.Join(dir, "hold")
		if err := os.Mkdir(hold, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"extract.1", "transform.1"} {
			if err := os.WriteFile(filepath.Join(hold, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Each attempt logs its start; a held one sleeps until killed;
		// the end logs the upstream data it got and writes its own.
		script := fmt.Sprintf(`echo "start $SHEPHERD_JOB $SHEPHERD_ATTEMPT" >> %[1]s
[ -e "%[2]s/$SHEPHERD_JOB.$SHEPHERD_ATTEMPT" ] && exec sleep 60
echo "done $SHEPHERD_JOB $SHEPHERD_ATTEMPT $SHEPHERD_UPSTREAM_EXTRACT$SHEPHERD_UPSTREAM_TRANSFORM" >> %[1]s
echo "$SHEPHERD_JOB-$SHEPHERD_ATTEMPT$SHEPHERD_PARAM_batch" > "$SHEPHERD_RESULT_FILE"`, out, hold)
		quoted, _ := json.Marshal(script)
		jobs := fmt.Sprintf(`jobs:
- {name: extract, schedule: "@yearly", command: sh, args: ["-c", %[1]s]}
- {name: transform, schedule: "@yearly", command: sh, args: ["-c", %[1]s], after: [{job: extract}]}
- {name: load, schedule: "@yearly", command: sh, args: ["-c", %[1]s], after: [{job: transform}]}
`, quoted)
		n := 0
		startOne := func() {
			host := fmt.Sprintf("s%d", n)
			n++
			startChild(t, childConfig{Connect: connect, Jobs: jobs, Host: host, LogDir: filepath.Join(dir, host)})
		}
		for range 3 {
			startOne()
		}
		obs := dial(t, connect)
		const key = "2030-01-01"
		triggerKey(t, obs, "load", key)
		triggerKey(t, obs, "transform", key)
		awaitWaiting(t, obs, "load", key, "transform")
		awaitWaiting(t, obs, "transform", key, "extract")
		// extract's parameter reaches its second attempt, on another
		// scheduler, and through its data transform.
		if _, err := NewAdmin(obs).TriggerRun(context.Background(), "extract", time.Now(), RunRequest{RunKey: key, Params: map[string]string{"batch": "b7"}}); err != nil {
			t.Fatal(err)
		}

		for _, job := range []string{"extract", "transform"} {
			coordtest.WaitFor(t, 30*time.Second, job+" attempt 1 started", func() error {
				if !slices.Contains(lines(t, out), "start_"+job+"_1") {
					return fmt.Errorf("effects %q", lines(t, out))
				}
				return nil
			})
			if err := syscall.Kill(masterPID(t, obs, job, key), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			startOne()
		}
		r := awaitResult(t, obs, "load", key)
		if r.Status != Succeeded || r.Attempt != 1 || r.Upstream["transform"] != Succeeded {
			t.Errorf("load: %+v, want succeeded at attempt 1 after transform succeeded", r)
		}
		for job, up := range map[string]string{"extract": "", "transform": "extract"} {
			r := awaitResult(t, obs, job, key)
			if r.Status != Succeeded || r.Attempt != 2 || (up != "" && r.Upstream[up] != Succeeded) || (up == "") != (r.Params["batch"] == "b7") {
				t.Errorf("%s: %+v, want succeeded at attempt 2", job, r)
			}
		}
		want := []string{
			"start_extract_1", "start_extract_2", "done_extract_2_",
			"start_transform_1", "start_transform_2", "done_transform_2_extract-2b7",
			"start_load_1", "done_load_1_transform-2",
		}
		if got := lines(t, out); !slices.Equal(got, want) {
			t.Errorf("effects\n%q\nwant\n%q", got, want)
		}
	})
}

// TestDAGScheduledExactlyOnce: three jobs in a chain, every second, over
// three schedulers: for every run key, each job ran once, after its
// upstream job.
func TestDAGScheduledExactlyOnce(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		out := filepath.Join(t.TempDir(), "effects")
		var jobs []Job
		for i, name := range []string{"extract", "transform", "load"} {
			j := appendJob(name, "* * * * * *", out, "")
			j.Args = []string{"-c", `echo "$SHEPHERD_JOB $SHEPHERD_RUN_KEY" >> "$OUT"`}
			if i > 0 {
				j.After = after(jobs[i-1].Name)
			}
			jobs = append(jobs, j)
		}
		var stops []func()
		for i := range 3 {
			_, stop := startScheduler(t, connect, Options{Jobs: jobs, Host: fmt.Sprintf("s%d", i)}, nil)
			stops = append(stops, stop)
		}
		obs := dial(t, connect)
		coordtest.WaitFor(t, 60*time.Second, "5 runs of load", func() error {
			if n := len(finished(t, obs, "load")); n < 5 {
				return fmt.Errorf("%d runs of load finished, want 5", n)
			}
			return nil
		})
		for _, stop := range stops {
			stop()
		}
		at := map[string]int{} // "job key" -> line
		for i, l := range lines(t, out) {
			if _, dup := at[l]; dup {
				t.Errorf("%s ran twice", l)
			}
			at[l] = i
		}
		for _, r := range finished(t, obs, "load") {
			if r.Result.Status != Succeeded {
				t.Errorf("load %s: %s (%s)", r.RunKey, r.Result.Status, r.Result.Error)
				continue
			}
			e, okE := at["extract_"+r.RunKey]
			tr, okT := at["transform_"+r.RunKey]
			l, okL := at["load_"+r.RunKey]
			if !okE || !okT || !okL || e >= tr || tr >= l {
				t.Errorf("run %s: extract at %d (%v), transform at %d (%v), load at %d (%v); want each once, in that order", r.RunKey, e, okE, tr, okT, l, okL)
			}
		}
	})
}

// TestUpstreamConditions: a failed upstream run blocks its downstream
// runs (transitively); whenUpstream any and failed run after it; on a
// success the downstream runs get the upstream data (variable and file)
// and a whenUpstream failed job is blocked.
func TestUpstreamConditions(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		out := filepath.Join(t.TempDir(), "effects")
		const bad, good = "2030-01-01", "2030-01-02"
		job := func(name, shell string, when Condition, up ...string) Job {
			return Job{Name: name, Schedule: "@yearly", Command: "sh", Env: map[string]string{"OUT": out},
				Args:  []string{"-c", `echo "$SHEPHERD_JOB $SHEPHERD_RUN_KEY $SHEPHERD_ATTEMPT" >> "$OUT"; ` + shell},
				After: after(up...), WhenUpstream: when}
		}
		jobs := []Job{
			job("extract", `[ "$SHEPHERD_RUN_KEY" = `+bad+` ] && exit 3; printf rows=42 > "$SHEPHERD_RESULT_FILE"`, ""),
			job("transform", `echo "got=$SHEPHERD_UPSTREAM_EXTRACT file=$(cat "$SHEPHERD_UPSTREAM_EXTRACT_FILE")" >> "$OUT"`, "", "extract"),
			job("load", "", "", "transform"),
			job("cleanup", `echo "cleanup-saw-$SHEPHERD_UPSTREAM_EXTRACT_STATUS" >> "$OUT"`, UpstreamAny, "extract"),
			job("alert", "", UpstreamFailed, "extract"),
		}
		startScheduler(t, connect, Options{Jobs: jobs, Host: "a"}, nil)
		startScheduler(t, connect, Options{Jobs: jobs, Host: "b"}, nil)
		obs := dial(t, connect)
		for _, key := range []string{bad, good} {
			for _, j := range slices.Backward(jobs) {
				triggerKey(t, obs, j.Name, key)
			}
		}
		want := map[string]map[string]Status{
			bad:  {"extract": Failed, "transform": Blocked, "load": Blocked, "cleanup": Succeeded, "alert": Succeeded},
			good: {"extract": Succeeded, "transform": Succeeded, "load": Succeeded, "cleanup": Succeeded, "alert": Blocked},
		}
		for key, statuses := range want {
			for job, st := range statuses {
				r := awaitResult(t, obs, job, key)
				if r.Status != st {
					t.Errorf("%s %s: %s (%s), want %s", job, key, r.Status, r.Error, st)
				}
			}
		}
		if r := awaitResult(t, obs, "load", bad); !strings.Contains(r.Error, "transform blocked") || r.Upstream["transform"] != Blocked {
			t.Errorf("load %s: error %q, upstream %v; want it blocked by transform", bad, r.Error, r.Upstream)
		}
		count := map[string]int{}
		for _, l := range lines(t, out) {
			count[l]++
		}
		for _, l := range []string{
			"extract_" + bad + "_1", "cleanup_" + bad + "_1", "cleanup-saw-failed", "alert_" + bad + "_1",
			"extract_" + good + "_1", "transform_" + good + "_1", "got=rows=42_file=rows=42", "load_" + good + "_1",
			"cleanup_" + good + "_1", "cleanup-saw-succeeded",
		} {
			if count[l] != 1 {
				t.Errorf("effect %s seen %d times, want once (effects %q)", l, count[l], lines(t, out))
			}
		}
		if len(lines(t, out)) != 10 {
			t.Errorf("effects %q: blocked runs must not run", lines(t, out))
		}
	})
}

// TestUpstreamWaitPastDeadline: a run whose upstream run never comes is
// recorded missed once its starting deadline passed, saying for what it
// waited; a manual run of a key of its own does not wait.
func TestUpstreamWaitPastDeadline(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		out := filepath.Join(t.TempDir(), "effects")
		j := appendJob("transform", "@yearly", out, "")
		j.After, j.StartingDeadline = after("extract"), Duration(500*time.Millisecond)
		startScheduler(t, connect, Options{Jobs: []Job{j}, Host: "a"}, nil)
		obs := dial(t, connect)
		triggerKey(t, obs, "transform", "2030-01-01")
		r := awaitResult(t, obs, "transform", "2030-01-01")
		if r.Status != Missed || !strings.Contains(r.Error, "waited for the upstream runs of extract") {
			t.Errorf("result %+v, want missed waiting for extract", r)
		}
		key := trigger(t, obs, "transform")
		if r := awaitResult(t, obs, "transform", key); r.Status != Succeeded || len(r.Upstream) != 0 {
			t.Errorf("manual run %s: %+v, want succeeded without upstream", key, r)
		}
		if got := lines(t, out); len(got) != 1 || !strings.HasPrefix(got[0], key) {
			t.Errorf("effects %q, want the manual run only", got)
		}
		if _, err := NewAdmin(obs).TriggerRun(context.Background(), "transform", time.Now(), RunRequest{RunKey: "2030-01-01"}); !errors.Is(err, ErrRunDone) {
			t.Errorf("run-now of a run with a result: %v, want ErrRunDone", err)
		}
		if _, err := NewAdmin(obs).TriggerRun(context.Background(), "transform", time.Now(), RunRequest{RunKey: "manual-2030-01-01T00:00:00Z"}); !errors.Is(err, ErrInvalidJob) {
			t.Errorf("run-now of a manual key: %v, want ErrInvalidJob", err)
		}
	})
}

// TestAdminRefusesCycle: storing, creating or updating a job that would
// close a cycle with the stored jobs, or with a running scheduler's file
// jobs, is refused and stores nothing.
func TestAdminRefusesCycle(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := context.Background()
		s := dial(t, connect)
		a := NewAdmin(s)
		mk := func(name string, up ...string) Job {
			return Job{Name: name, Schedule: "@daily", Command: "true", After: after(up...)}
		}
		for _, j := range []Job{mk("b", "a"), mk("c", "b")} {
			if err := a.StoreJob(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.StoreJob(ctx, mk("a", "c")); !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), `job "a": after: cycle a → c → b → a`) {
			t.Errorf("StoreJob closing a cycle: %v", err)
		}
		if err := a.CreateJob(ctx, mk("a", "c")); !errors.Is(err, ErrInvalidJob) {
			t.Errorf("CreateJob closing a cycle: %v", err)
		}
		if err := a.UpdateJob(ctx, mk("b", "c"), AnyVersion); !errors.Is(err, ErrInvalidJob) {
			t.Errorf("UpdateJob closing a cycle: %v", err)
		}
		if _, err := a.LoadJob(ctx, "a"); !errors.Is(err, ErrNoSuchJob) {
			t.Errorf("LoadJob a after refusals: %v, want ErrNoSuchJob", err)
		}
		// A file job of a running scheduler counts.
		startScheduler(t, connect, Options{Jobs: []Job{mk("f", "g")}, Host: "a"}, nil)
		coordtest.WaitFor(t, 30*time.Second, "the scheduler's file jobs published", func() error {
			in, err := a.Schedulers(ctx)
			if err != nil || len(in) != 1 {
				return fmt.Errorf("schedulers %v (%v)", in, err)
			}
			return nil
		})
		if err := a.StoreJob(ctx, mk("g", "f")); !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), "g → f → g") {
			t.Errorf("StoreJob closing a cycle with a file job: %v", err)
		}
		g, err := a.Graph(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, j := range g.Jobs {
			names = append(names, j.Name)
		}
		if !slices.Equal(names, []string{"b", "f", "c"}) || len(g.Cycles) != 0 {
			t.Errorf("graph %+v, want b, f, c and no cycle", g)
		}
	})
}
