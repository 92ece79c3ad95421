package scheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestAssignItems: items go round the workers in name order, each to one.
func TestAssignItems(t *testing.T) {
	ws := []string{"c-3", "a-1", "b-2"}
	got := map[string][]int{}
	for _, w := range ws {
		got[w] = assignItems(8, ws, w)
	}
	want := map[string][]int{"a-1": {0, 3, 6}, "b-2": {1, 4, 7}, "c-3": {2, 5}}
	for w, items := range want {
		if !slices.Equal(got[w], items) {
			t.Errorf("items of %s: %v, want %v", w, got[w], items)
		}
	}
	if got := assignItems(8, ws, "d-4"); got != nil {
		t.Errorf("items of a scheduler that is not a worker: %v", got)
	}
	if got := assignItems(2, []string{"a"}, "a"); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("one worker: %v", got)
	}
}

// TestAggregate: a sharded run succeeds when every item does; else it
// failed (or was replaced), naming the items.
func TestAggregate(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	ok := func(i int) Result {
		return Result{Status: Succeeded, Attempt: 1, Host: "a", Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Minute)}
	}
	items := map[int]Result{0: ok(0), 1: ok(1), 2: ok(2)}
	r := aggregate(Result{Job: "j"}, items, 3)
	if r.Status != Succeeded || r.Error != "" || len(r.Items) != 3 || !r.Start.Equal(t0) || !r.End.Equal(t0.Add(time.Minute)) {
		t.Errorf("all succeeded: %+v", r)
	}
	items[1] = Result{Status: Failed, ExitCode: 3, Error: strings.Repeat("x", 2*maxItemError)}
	items[2] = Result{Status: TimedOut}
	r = aggregate(Result{}, items, 3)
	if r.Status != Failed || r.ExitCode != 3 || r.Error != "2 of 3 items did not succeed: 1 failed, 2 timeout" || len(r.Items[1].Error) > maxItemError+len("…") {
		t.Errorf("two bad: %+v", r)
	}
	items[0] = Result{Status: Replaced}
	if r := aggregate(Result{}, items, 3); r.Status != Replaced {
		t.Errorf("one replaced: %s", r.Status)
	}
	if err := (&Job{Name: "j", Schedule: "@daily", Command: "true", Shards: MaxShards + 1}).Validate(); err == nil || !strings.Contains(err.Error(), "shards: 257") {
		t.Errorf("Validate of too many shards: %v", err)
	}
	dir := t.TempDir()
	if env, _ := commandEnv(Run{Shard: 3, Shards: 8}, filepath.Join(dir, "r"), dir); !slices.Contains(env, "SHEPHERD_SHARD=3") || !slices.Contains(env, "SHEPHERD_SHARDS=8") {
		t.Errorf("env of item 3 of 8: %q", env)
	}
	if env, _ := commandEnv(Run{}, filepath.Join(dir, "r"), dir); slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "SHEPHERD_SHARD") }) {
		t.Errorf("env of a run not sharded: %q", env)
	}
}

// shardEffects counts, per item, the "done <item>" lines of a run's
// items and returns the attempts started ("start <item> <attempt>").
func shardEffects(t *testing.T, out string) (done map[string]int, starts []string) {
	done = map[string]int{}
	for _, l := range lines(t, out) {
		switch f := strings.Split(l, "_"); f[0] {
		case "done":
			done[f[1]]++
		case "start":
			starts = append(starts, f[1]+"."+f[2])
		}
	}
	return done, starts
}

// TestShardedRunOverThreeSchedulers: a run of shards: 8 over three
// schedulers: each item executes once, the run succeeds with the items'
// summary; ctl's listing shows the items while they run.
func TestShardedRunOverThreeSchedulers(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		dir := t.TempDir()
		out, gate := filepath.Join(dir, "effects"), filepath.Join(dir, "go")
		job := Job{Name: "scan", Schedule: "@yearly", Command: "sh", Shards: 8,
			Args: []string{"-c", `echo "start $SHEPHERD_SHARD $SHEPHERD_ATTEMPT $SHEPHERD_SHARDS" >> "$OUT"
while [ ! -e "$GATE" ]; do sleep 0.05; done
echo "done $SHEPHERD_SHARD" >> "$OUT"`},
			Env: map[string]string{"OUT": out, "GATE": gate}}
		for i := range 3 {
			startScheduler(t, connect, Options{Jobs: []Job{job}, Host: fmt.Sprintf("s%d", i)}, nil)
		}
		obs := dial(t, connect)
		key := trigger(t, obs, "scan")
		coordtest.WaitFor(t, 30*time.Second, "every item running", func() error {
			runs, err := NewAdmin(obs).Runs(context.Background(), "scan")
			if err != nil || len(runs) != 1 || len(runs[0].Items) != 8 {
				return fmt.Errorf("runs %+v (%v)", runs, err)
			}
			for _, it := range runs[0].Items {
				if !it.Running || it.Attempt != 1 || it.Host == "" {
					return fmt.Errorf("item %+v not running", it)
				}
			}
			return nil
		})
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r := awaitResult(t, obs, "scan", key)
		if r.Status != Succeeded || len(r.Items) != 8 {
			t.Fatalf("result %+v, want succeeded with 8 items", r)
		}
		hosts := map[string]int{}
		for _, it := range r.Items {
			hosts[it.Host]++
		}
		t.Logf("items per host: %v", hosts)
		for i, it := range r.Items {
			if it.Item != i || it.Status != Succeeded || it.Attempt != 1 || it.Host == "" || !strings.HasSuffix(it.LogFile, fmt.Sprintf(".item-%d.log", i)) {
				t.Errorf("item %d: %+v", i, it)
			}
		}
		done, starts := shardEffects(t, out)
		for i := range 8 {
			if done[fmt.Sprint(i)] != 1 {
				t.Errorf("item %d done %d times, want once (starts %v)", i, done[fmt.Sprint(i)], starts)
			}
		}
		if len(starts) != 8 {
			t.Errorf("attempts started %v, want one per item", starts)
		}
		if !slices.Contains(lines(t, out), "start_0_1_8") {
			t.Errorf("effects %q: want SHEPHERD_SHARDS=8", lines(t, out))
		}
	})
}

// TestShardedItemFailsRun: an item that fails (after its retries) fails
// the run, naming it, while the others succeed once; history limits
// delete a sharded run's items with it.
func TestShardedItemFailsRun(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		out := filepath.Join(t.TempDir(), "effects")
		job := Job{Name: "part", Schedule: "@yearly", Command: "sh", Shards: 4, Retries: 1, RetryBackoff: Duration(10 * time.Millisecond), HistoryLimit: 1,
			Args: []string{"-c", `echo "start $SHEPHERD_SHARD $SHEPHERD_ATTEMPT" >> "$OUT"; [ "$SHEPHERD_SHARD" = 2 ] && exit 7; echo "done $SHEPHERD_SHARD" >> "$OUT"`},
			Env:  map[string]string{"OUT": out}}
		startScheduler(t, connect, Options{Jobs: []Job{job}, Host: "a"}, nil)
		startScheduler(t, connect, Options{Jobs: []Job{job}, Host: "b"}, nil)
		obs := dial(t, connect)
		const key, key2 = "2030-01-01", "2030-01-02"
		triggerKey(t, obs, "part", key)
		r := awaitResult(t, obs, "part", key)
		if r.Status != Failed || r.ExitCode != 7 || r.Error != "1 of 4 items did not succeed: 2 failed" || r.Items[2].Attempt != 2 {
			t.Errorf("result %+v, want failed naming item 2, tried twice", r)
		}
		done, starts := shardEffects(t, out)
		if len(done) != 3 || done["2"] != 0 || len(starts) != 5 {
			t.Errorf("done %v, starts %v; want items 0, 1, 3 once and item 2 twice", done, starts)
		}
		// A second run: the first, beyond historyLimit 1, goes with its items.
		triggerKey(t, obs, "part", key2)
		awaitResult(t, obs, "part", key2)
		coordtest.WaitFor(t, 30*time.Second, "the first run deleted", func() error {
			if ok, _, err := obs.Exists(context.Background(), RunPath("part", key)); err != nil || ok {
				return fmt.Errorf("run %s still there (%v)", key, err)
			}
			return nil
		})
	})
}

// TestShardedRunMasterKilled: shards: 8 over three scheduler processes;
// once every item runs, the scheduler holding item 0 is killed -9: its
// items run again elsewhere, at attempt 2, and every item executes to
// its end exactly once.
func TestShardedRunMasterKilled(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		dir := t.TempDir()
		out, gate := filepath.Join(dir, "effects"), filepath.Join(dir, "go")
		jobs := fmt.Sprintf(`jobs:
- name: scan
  schedule: "@yearly"
  shards: 8
  command: sh
  args: ["-c", "echo \"start $SHEPHERD_SHARD $SHEPHERD_ATTEMPT\" >> %[1]s; while [ ! -e %[2]s ]; do sleep 0.05; done; echo \"done $SHEPHERD_SHARD\" >> %[1]s"]
`, out, gate)
		for i := range 3 {
			host := fmt.Sprintf("s%d", i)
			startChild(t, childConfig{Connect: connect, Jobs: jobs, Host: host, LogDir: filepath.Join(dir, host)})
		}
		obs := dial(t, connect)
		key := trigger(t, obs, "scan")
		coordtest.WaitFor(t, 30*time.Second, "every item started", func() error {
			if _, starts := shardEffects(t, out); len(starts) != 8 {
				return fmt.Errorf("attempts started: %v", starts)
			}
			return nil
		})
		pid := 0
		coordtest.WaitFor(t, 10*time.Second, "item 0's master", func() error {
			data, _, err := obs.Get(context.Background(), unit{job: "scan", key: key, item: 0}.bindingPath())
			if err != nil {
				return err
			}
			_, err = fmt.Sscanf(string(data[strings.Index(string(data), `"pid":`)+6:]), "%d", &pid)
			return err
		})
		runs, err := NewAdmin(obs).Runs(context.Background(), "scan")
		if err != nil || len(runs) != 1 || len(runs[0].Items) != 8 {
			t.Fatalf("runs %+v (%v)", runs, err)
		}
		killedHost := runs[0].Items[0].Host
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Its items started again elsewhere before the gate opens: the
		// others' first attempts still hold.
		var killed []string
		for _, it := range runs[0].Items {
			if it.Host == killedHost {
				killed = append(killed, fmt.Sprint(it.Item))
			}
		}
		coordtest.WaitFor(t, 30*time.Second, "the killed scheduler's items started again", func() error {
			_, starts := shardEffects(t, out)
			for _, i := range killed {
				if !slices.Contains(starts, i+".2") {
					return fmt.Errorf("item %s not started again: %v", i, starts)
				}
			}
			return nil
		})
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r := awaitResult(t, obs, "scan", key)
		if r.Status != Succeeded || len(r.Items) != 8 {
			t.Fatalf("result %+v, want succeeded with 8 items", r)
		}
		done, starts := shardEffects(t, out)
		for _, it := range r.Items {
			i := fmt.Sprint(it.Item)
			wantAttempt := 1
			if slices.Contains(killed, i) {
				wantAttempt = 2
			}
			if done[i] != 1 || it.Attempt != wantAttempt || it.Status != Succeeded || it.Host == killedHost {
				t.Errorf("item %s: done %d times, %+v; want once, succeeded at attempt %d, not on %s", i, done[i], it, wantAttempt, killedHost)
			}
		}
		if len(starts) != 8+len(killed) {
			t.Errorf("attempts started %v, want one per item and one more for each of %v", starts, killed)
		}
	})
}
