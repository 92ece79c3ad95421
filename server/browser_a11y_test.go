package server

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/dns"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/scheduler"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// axeSource is axe-core (testdata/axe/README.md), injected into each page
// by the test, never served.
//
//go:embed testdata/axe/axe.min.js
var axeSource string

// axeViolation is the part of an axe-core result the test reports.
type axeViolation struct {
	ID    string `json:"id"`
	Help  string `json:"help"`
	Nodes []struct {
		Target []string `json:"target"`
		// Summary says what fails at that node (e.g. the contrast ratio).
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// TestBrowserAccessibility runs axe-core's WCAG 2 A and AA checks (labels,
// contrast, names, landmarks, ...) on every page of the console, logged
// out and logged in, with a task and a job defined, at the desktop and
// the phone width: every page passes with no violation.
func TestBrowserAccessibility(t *testing.T) {
	ctx, _, s := browserCluster(t, "browser-a11y", "alice", auth.Admin, 3*time.Minute)
	if err := core.NewAdmin(s, "").AddTask(ctx, mustSpec(t, specJSON), false); err != nil {
		t.Fatal(err)
	}
	if err := scheduler.NewAdmin(s).StoreJob(ctx, scheduler.Job{Name: "nightly-report", Schedule: "0 3 * * *", Command: "/bin/true"}); err != nil {
		t.Fatal(err)
	}
	for i, a := range []string{"10.0.0.1:8080", "[fd00::1]:8080"} {
		addr, _ := dns.ParseAddr(a)
		n, _ := dns.NewName("app1", "api.svc.example")
		if _, err := dns.Register(ctx, s, n, dns.Registration{Addr: addr}); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if _, err := dns.NewAdmin(s).Block(ctx, n, addr, "alice", "upgrade"); err != nil {
				t.Fatal(err)
			}
		}
	}
	hs, poller := browserConsole(t, ctx, s, 500*time.Millisecond, targets[0].Addr)
	coordtest.WaitFor(t, 10*time.Second, "a first snapshot with the task", func() error {
		if snap := poller.Latest(); snap == nil || len(snap.Tasks) == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	b := newBrowser(t, ctx, hs.URL, t.TempDir())

	check := func(page, ready string) {
		t.Helper()
		b.run("open "+page, chromedp.Navigate(hs.URL+page), chromedp.WaitVisible(chromedp.CSS(ready)))
		res := browserValue(b, "run axe-core on "+page, chromedp.Evaluate[string](axeSource+`;
			axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}, resultTypes: ["violations"]})
				.then((r) => JSON.stringify(r.violations))`, chromedp.EvalAwaitPromise))
		var vs []axeViolation
		if err := json.Unmarshal([]byte(res), &vs); err != nil {
			t.Fatalf("%s: axe-core's answer %q: %v", page, res, err)
		}
		for _, v := range vs {
			var where []string
			for _, n := range v.Nodes {
				where = append(where, fmt.Sprintf("%s: %s", strings.Join(n.Target, " "), strings.ReplaceAll(n.Summary, "\n", " ")))
			}
			t.Errorf("%s: %s (%s) at %d places:\n  %s", page, v.ID, v.Help, len(v.Nodes), strings.Join(where, "\n  "))
		}
	}
	for _, width := range []int64{1280, 420} {
		b.run(fmt.Sprintf("a %d px window", width), chromedp.EmulateViewport(width, 900))
		check("/login", "#login")
		b.login("alice")
		for _, p := range []struct{ page, ready string }{
			{"/", "header .who"},
			{"/tasks", "#tasks"},
			{"/tasks/orders", "header .who"},
			{"/new/task", "form"},
			{"/tasks/orders/edit", "form"},
			{"/jobs", "header .who"},
			{"/jobs/nightly-report", "header .who"},
			{"/new/job", "#job-form"},
			{"/collectors", "header .who"},
			{"/services", "#services"},
			{"/coord", "header .who"},
			{"/users", "header .who"},
			{"/znodes", "header .who"},
			{"/alerts", "header .who"},
			{"/audit", "header .who"},
		} {
			check(p.page, p.ready)
		}
		b.run("log out", chromedp.Navigate(hs.URL+"/login")) // a fresh login page for the next width
		browserValue(b, "drop the cookie", chromedp.Evaluate[bool](`(document.cookie.split(";").forEach((c) => { document.cookie = c.split("=")[0] + "=; max-age=0; path=/"; }), true)`))
	}
}
