package ctl

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/core"
)

// verifyEngine is the in-memory engine whose replicators verify with a
// fixed report: the verb's wiring, output and exit status are tested
// here; the comparison itself against real servers in package
// replication.
type verifyEngine struct {
	core.Engine
	rep  core.VerifyReport
	seen *core.VerifyOptions
}

func (e verifyEngine) Open(ctx context.Context, sp *core.Spec, log *slog.Logger) (core.Replicator, error) {
	r, err := e.Engine.Open(ctx, sp, log)
	return verifyReplicator{r, e}, err
}

type verifyReplicator struct {
	core.Replicator
	e verifyEngine
}

func (r verifyReplicator) Verify(_ context.Context, opts core.VerifyOptions) (core.VerifyReport, error) {
	*r.e.seen = opts
	return r.e.rep, nil
}

// TestTaskVerifyVerb: verify passes its flags on, prints each differing
// key under its chunk, exits 1 on a confirmed difference and 0 on none,
// and keeps the report in the task's verify node, which task show
// prints.
func TestTaskVerifyVerb(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		mustCtlAuth(t, conn, "task", "add", "-f", writeSpec(t, taskYAML))
		at := time.Now().UTC().Add(-time.Minute)
		rep := core.VerifyReport{
			Task: "copy_hot_item", Started: at, Finished: at.Add(1500 * time.Millisecond),
			Position: core.Position{File: "mysql-bin.000003", Pos: 4711},
			Chunks:   9, Rows: 4500, Differences: 4,
			Tables: []core.TableVerify{{
				DB: "shop", Table: "item", Target: "`shop_copy`.`item`", Keyed: true, Chunks: 8, Rows: 4000,
				Diffs: []core.ChunkDiff{
					{After: []string{"1000"}, Through: []string{"2000"}, Changed: [][]string{{"1234"}}, Missing: [][]string{{"1500"}}},
					{After: []string{"4000"}, Extra: [][]string{{"999999"}}, Unlisted: 5},
				},
			}, {DB: "shop", Table: "log", Target: "`shop_copy`.`log`", Chunks: 1, Rows: 500, Differs: true},
				{DB: "shop", Table: "gone", Target: "`shop_copy`.`gone`", Keyed: true, Missing: true}},
		}
		var seen core.VerifyOptions
		env := Env{Engine: verifyEngine{core.NewMemEngine(100), rep, &seen}}
		r := runCtlEnvAuth(t, env, conn, "task", "verify", "--tables", "shop.item,shop.log", "--repair", "--chunk-rows", "500", "copy_hot_item")
		if r.code != ExitFailure || !strings.Contains(r.stderr, "4 confirmed differences") {
			t.Fatalf("verify with differences: %v\nwant exit 1", r)
		}
		for _, want := range []string{
			"task copy_hot_item: verified 3 tables, 9 chunks, 4500 rows at mysql-bin.000003:4711 in 1.5s: 4 confirmed differences\n",
			"  shop.item -> `shop_copy`.`item` keys (1000, 2000]:\n    missing on target 1500\n    different         1234\n",
			"  shop.item -> `shop_copy`.`item` keys (4000, end):\n    extra on target   999999\n    and 5 more keys\n",
			"  shop.log -> `shop_copy`.`log`: the rows differ (no key: compared whole, not repaired)\n",
			"  shop.gone -> `shop_copy`.`gone`: missing on the target\n",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("verify output lacks %q:\n%s", want, r.stdout)
			}
		}
		if !seen.Repair || seen.ChunkRows != 500 || strings.Join(seen.Tables, " ") != "shop.item shop.log" {
			t.Errorf("verify passed options %+v", seen)
		}
		show := mustCtlAuth(t, conn, "task", "show", "copy_hot_item")
		if !verifyLine(show, "4 confirmed differences (") || !strings.Contains(show, "9 chunks at mysql-bin.000003:4711)") {
			t.Errorf("task show after verify:\n%s", show)
		}
		var ts core.TaskStatus
		if err := json.Unmarshal([]byte(mustCtlAuth(t, conn, "--json", "task", "show", "copy_hot_item")), &ts); err != nil || ts.Verify == nil || ts.Verify.Differences != 4 {
			t.Errorf("task show --json: verify %+v, %v", ts.Verify, err)
		}

		env = Env{Engine: verifyEngine{core.NewMemEngine(100), core.VerifyReport{Task: "copy_hot_item", Chunks: 9, Rows: 4500}, &seen}}
		if r := runCtlEnvAuth(t, env, conn, "task", "verify", "copy_hot_item"); r.code != 0 || !strings.Contains(r.stdout, ": equal\n") {
			t.Fatalf("verify without differences: %v\nwant exit 0", r)
		}
		if show := mustCtlAuth(t, conn, "task", "show", "copy_hot_item"); !verifyLine(show, "equal (") {
			t.Errorf("task show after a clean verify:\n%s", show)
		}
	})
}

// verifyLine reports whether task show's verify line starts with want.
func verifyLine(show, want string) bool {
	for _, l := range strings.Split(show, "\n") {
		if v, ok := strings.CutPrefix(l, "verify:"); ok {
			return strings.HasPrefix(strings.TrimSpace(v), want)
		}
	}
	return false
}
