package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
	"github.com/shepherd-dev/shepherd/replication"
)

// TestPagePatternsCompileUnderTheVFlag: every pattern attribute of the
// pages is a valid regular expression as browsers compile it, with the
// v flag (issue 25: [A-Za-z0-9_.-]+ is invalid there, so Chromium
// ignored it and the name check never ran). A rule that caught it (an
// unescaped '-' in a class must be a range), then Chromium compiles each.
func TestPagePatternsCompileUnderTheVFlag(t *testing.T) {
	attr := regexp.MustCompile(`pattern="([^"]*)"`)
	var patterns []string
	pages, _ := fs.Glob(templateFS, "web/*.html")
	for _, p := range pages {
		data, _ := fs.ReadFile(templateFS, p)
		for _, m := range attr.FindAllStringSubmatch(string(data), -1) {
			patterns = append(patterns, m[1])
		}
	}
	if len(patterns) < 2 {
		t.Fatalf("found %d pattern attributes, want those of the task form and the users page", len(patterns))
	}
	loneDash := regexp.MustCompile(`\[-|[^\\]-\]`)
	for _, p := range patterns {
		if loneDash.MatchString(p) {
			t.Errorf("pattern %q has an unescaped '-' that is not a range: invalid with the v flag", p)
		}
	}
	// And as a browser compiles them: Chromium, which the browser tests
	// need anyway.
	_, err := os.Stat(chromiumPath)
	testpeer.Require(t, "chromium", err == nil, fmt.Sprint(err))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBrowser(t, ctx, "about:blank", t.TempDir())
	for _, p := range patterns {
		js, _ := json.Marshal(p)
		compile := `(() => { try { new RegExp(` + string(js) + `, "v"); return ""; } catch (e) { return String(e); } })()`
		if msg := browserValue(b, "compile "+p, chromedp.Evaluate[string](compile)); msg != "" {
			t.Errorf("pattern %q does not compile with the v flag: %s", p, msg)
		}
	}
}

// TestTaskPageShowsWhatApplies: the task page has a favicon (no 404 on
// every page), names the spec's version for what it is, and shows Start,
// Stop and Hand over only when they apply (issue 25).
func TestTaskPageShowsWhatApplies(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		c := startConsole(t, tg, nil)
		if st, body := c.anonymous().do("GET", "/favicon.ico", nil, nil); st != http.StatusOK || !strings.HasPrefix(body, "\x00\x00\x01\x00") {
			t.Errorf("GET /favicon.ico: %d, %d bytes; want 200 and an icon", st, len(body))
		}
		c.addOrders()
		c.refresh()
		op := c.as("operator")
		shown := func(t *testing.T, want map[string]bool) {
			t.Helper()
			st, page := op.do("GET", "/tasks/orders", nil, nil)
			if st != http.StatusOK {
				t.Fatalf("GET /tasks/orders: %d", st)
			}
			if !strings.Contains(page, "znode version") {
				t.Errorf("task page does not say which version it shows")
			}
			for action, visible := range want {
				tag := regexp.MustCompile(`<button[^>]*id="action-` + action + `"[^>]*>`).FindString(page)
				if tag == "" {
					t.Fatalf("task page has no %s button", action)
				}
				if got := !strings.Contains(tag, " hidden"); got != visible {
					t.Errorf("%s button shown = %v, want %v: %s", action, got, visible, tag)
				}
			}
		}
		// Meant to run, no instance yet.
		shown(t, map[string]bool{"start": false, "stop": true, "handover": false})

		if st, body := op.do("POST", "/api/v1/tasks/orders/stop", nil, nil); st/100 != 2 {
			t.Fatalf("stop: %d %s", st, body)
		}
		c.refresh()
		shown(t, map[string]bool{"start": true, "stop": false, "handover": false})

		if st, body := op.do("POST", "/api/v1/tasks/orders/start", nil, nil); st/100 != 2 {
			t.Fatalf("start: %d %s", st, body)
		}
		c.refresh()
		// A hot task whose owner FAILED, with a second instance standing by.
		snap := *c.feed.Latest()
		snap.Tasks = append([]core.TaskStatus(nil), snap.Tasks...)
		snap.Tasks[0].Instances = []core.Instance{
			{Name: "i1", State: core.InstanceState{State: core.StateFailed, Host: "h1"}},
			{Name: "i2", State: core.InstanceState{State: core.StateStandby, Host: "h2"}},
		}
		snap.ReadAt = time.Now().UTC()
		c.feed.Set(&snap)
		shown(t, map[string]bool{"start": true, "stop": true, "handover": true})
	})
}

// TestTaskPageShowsTheCopy: a start: snapshot task whose owner copies
// tables has a progress bar and the words ctl task show has, on the page
// and in the live summary; a task with no copy has the bar hidden.
func TestTaskPageShowsTheCopy(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	c := startConsole(t, tg, nil)
	c.addOrders()
	c.refresh()
	op := c.as("operator")
	if _, page := op.do("GET", "/tasks/orders", nil, nil); !regexp.MustCompile(`<p id="task-copy"[^>]* hidden>`).MatchString(page) {
		t.Errorf("a task with no copy: the copy's bar is not hidden")
	}
	snap := *c.feed.Latest()
	snap.Tasks = append([]core.TaskStatus(nil), snap.Tasks...)
	snap.Tasks[0].Instances = []core.Instance{{Name: "i1", State: core.InstanceState{State: core.StateRunning, Host: "h1", RowsPerSecond: 500,
		Snapshot: &replication.SnapshotProgress{Rows: 250, Estimated: 1000, Tables: []replication.TableCopy{{DB: "shop", Table: "items", Rows: 250, Estimated: 1000}}}}}}
	snap.ReadAt = time.Now().UTC()
	c.feed.Set(&snap)
	_, page := op.do("GET", "/tasks/orders", nil, nil)
	const words = "copying: 250 of ~1000 rows (25%), 500 rows/s, about 2s left"
	if !strings.Contains(page, `<progress id="task-copy-bar" max="100" value="25">`) || !strings.Contains(page, words) ||
		regexp.MustCompile(`<p id="task-copy"[^>]* hidden>`).MatchString(page) {
		t.Errorf("the task page's copy: want a bar at 25 and %q:\n%s", words, section(page, "task-copy"))
	}
	lt := taskSummary(&snap, snap.Tasks[0])
	if lt.Copy != words || lt.CopyPercent != 25 {
		t.Errorf("live summary copy %q %v, want %q 25", lt.Copy, lt.CopyPercent, words)
	}
}

// TestTaskPageShowsLastVerify: the task page shows the last verify
// report with its differing keys to every role; operators get the
// Verify form, admins its Repair box too.
func TestTaskPageShowsLastVerify(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		c := startConsole(t, tg, nil)
		c.addOrders()
		c.refresh()
		if _, page := c.as("viewer").do("GET", "/tasks/orders", nil, nil); !strings.Contains(page, "None yet: <code>shepherd ctl task verify orders</code>") {
			t.Errorf("task page without a verify report:\n%s", page)
		}
		snap := *c.feed.Latest()
		snap.Tasks = append([]core.TaskStatus(nil), snap.Tasks...)
		snap.Tasks[0].Verify = &core.VerifyReport{Task: "orders", Finished: time.Now().UTC(), Chunks: 9, Rows: 6040, Differences: 2,
			Position: core.Position{File: "mysql-bin.000001", Pos: 4711},
			Tables: []core.TableVerify{{DB: "shop", Table: "items", Target: "`shop`.`items`", Keyed: true,
				Diffs: []core.ChunkDiff{{Through: []string{"999"}, Missing: [][]string{{"42"}}, Changed: [][]string{{"77"}}}}}}}
		snap.ReadAt = time.Now().UTC()
		c.feed.Set(&snap)
		for role, want := range map[string][2]bool{"viewer": {false, false}, "operator": {true, false}, "admin": {true, true}} {
			st, page := c.as(role).do("GET", "/tasks/orders", nil, nil)
			if st != http.StatusOK {
				t.Fatalf("GET /tasks/orders as %s: %d", role, st)
			}
			for _, s := range []string{"2 confirmed differences", "9 chunks, 6040 rows at mysql-bin.000001:4711",
				"shop.items keys after the start through [999]: missing on target [[42]]; different [[77]]"} {
				if !strings.Contains(page, s) {
					t.Errorf("task page as %s lacks %q", role, s)
				}
			}
			if got := [2]bool{strings.Contains(page, `id="verify-form"`), strings.Contains(page, `id="verify-repair"`)}; got != want {
				t.Errorf("as %s: verify form, repair box shown = %v, want %v", role, got, want)
			}
		}
	})
}
