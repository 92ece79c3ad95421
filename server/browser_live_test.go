package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/scheduler"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// TestBrowserListsFollowTheCluster: with the tasks page open in a real
// chromium, a task added the way `ctl task add` adds it appears without
// a reload, turns STOPPED when stopped, and leaves the list (the count
// dropping) when deleted; the task page's spec and desired state follow
// an edit made elsewhere; the overview and the jobs list gain what is
// defined while they are open; the task form's standby note follows
// what is typed and the cores that exist.
func TestBrowserListsFollowTheCluster(t *testing.T) {
	ctx, _, s := browserCluster(t, "browser-live", "alice", auth.Admin, 2*time.Minute)
	tasks := core.NewAdmin(s, "")
	// One task to begin with, so that the count has something to drop from.
	if err := tasks.AddTask(ctx, mustSpec(t, strings.Replace(specJSON, `"orders"`, `"first"`, 1)), false); err != nil {
		t.Fatal(err)
	}
	hs, _ := browserConsole(t, ctx, s, 500*time.Millisecond, targets[0].Addr)
	b := newBrowser(t, ctx, hs.URL, t.TempDir())
	b.login("alice")

	row := func(task, field string) string {
		return fmt.Sprintf("#tasks tr[data-key=%q] [data-field=%q]", task, field)
	}
	b.run("open the tasks page", chromedp.Navigate(hs.URL+"/tasks"), chromedp.WaitVisible(chromedp.CSS(row("first", "state"))))
	b.waitText("#task-count", "1")
	browserValue(b, "mark the page", chromedp.Evaluate[bool](`window.__notReloaded = true`))

	// ctl task add: the row appears, in name order, and the count rises.
	if err := tasks.AddTask(ctx, mustSpec(t, specJSON), false); err != nil {
		t.Fatal(err)
	}
	b.waitText(row("orders", "state"), cluster.TaskNotRunning)
	b.waitText(row("orders", "desired"), "running")
	b.waitText(row("orders", "standby"), "hot")
	b.waitText("#task-count", "2")
	if got := browserValue(b, "read the order", chromedp.Evaluate[string](`[...document.querySelectorAll("#tasks tbody tr")].map((r) => r.dataset.key).join(",")`)); got != "first,orders" {
		t.Errorf("rows in order %q, want first,orders", got)
	}
	link := browserValue(b, "read the link", chromedp.Evaluate[string](`document.querySelector("#tasks tr[data-key='orders'] a").getAttribute("href")`))
	if link != "/tasks/orders" {
		t.Errorf("the new row links to %q", link)
	}

	// ctl task stop: STOPPED.
	if err := tasks.SetState(ctx, "orders", core.DesiredStopped); err != nil {
		t.Fatal(err)
	}
	b.waitText(row("orders", "state"), cluster.TaskStopped)
	b.waitText(row("orders", "desired"), "stopped")

	// ctl task rm: the row goes, the count drops.
	if err := tasks.RemoveTask(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	b.waitText("#task-count", "1")
	b.waitGone("#tasks tr[data-key='orders']")
	if err := tasks.RemoveTask(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	b.waitText("#task-count", "0")
	b.waitContains("#tasks tbody", "No tasks yet.")
	if !browserValue(b, "check no reload", chromedp.Evaluate[bool](`window.__notReloaded === true`)) {
		t.Fatal("the tasks page was reloaded")
	}

	// The task page: an edit made elsewhere reaches the spec block, a
	// stop the desired state, without a reload.
	if err := tasks.AddTask(ctx, mustSpec(t, specJSON), false); err != nil {
		t.Fatal(err)
	}
	b.run("open the task page", chromedp.Navigate(hs.URL+"/tasks/orders"), chromedp.WaitVisible(chromedp.CSS("#task-spec")))
	browserValue(b, "mark the page", chromedp.Evaluate[bool](`window.__notReloaded = true`))
	sp, version, err := tasks.TaskVersion(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	sp.Filter.Include = []string{"shop.invoices"}
	if err := tasks.UpdateTask(ctx, sp, version); err != nil {
		t.Fatal(err)
	}
	b.waitContains("#task-spec", "shop.invoices")
	b.waitText("#task-spec-version", fmt.Sprint(version+1))
	if err := tasks.SetState(ctx, "orders", core.DesiredStopped); err != nil {
		t.Fatal(err)
	}
	b.waitText("[data-task='orders'][data-field='desired']", "stopped")
	b.waitText("#task-state", cluster.TaskStopped)
	b.waitContains("#task-spec", `"state": "stopped"`)
	if !browserValue(b, "check no reload", chromedp.Evaluate[bool](`window.__notReloaded === true`)) {
		t.Fatal("the task page was reloaded")
	}

	// The overview and the jobs list gain a job defined meanwhile.
	b.run("open the overview", chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible(chromedp.CSS(".cards")))
	b.waitText("#overview-job-count", "0")
	if err := scheduler.NewAdmin(s).StoreJob(ctx, scheduler.Job{Name: "nightly-report", Schedule: "0 3 * * *", Command: "/bin/true"}); err != nil {
		t.Fatal(err)
	}
	b.waitText("#overview-job-count", "1")
	b.waitContains("[data-list='overview-jobs'] li[data-key='nightly-report']", "nightly-report")
	b.waitText("#overview-task-count", "1")
	b.run("open the jobs list", chromedp.Navigate(hs.URL+"/jobs"), chromedp.WaitVisible(chromedp.CSS("#jobs")))
	b.waitText("#jobs tr[data-key='nightly-report'] [data-field='schedule']", "0 3 * * *")
	if err := scheduler.NewAdmin(s).StoreJob(ctx, scheduler.Job{Name: "hourly-sync", Schedule: "@hourly", Command: "/bin/true"}); err != nil {
		t.Fatal(err)
	}
	b.waitText("#jobs tr[data-key='hourly-sync'] [data-field='defined']", "stored")
	b.waitText("#job-count", "2")

	// The task form: hot by default while no core serves group default,
	// its note following the name, mode and group as they are changed.
	b.run("open the form", chromedp.Navigate(hs.URL+"/new/task"), chromedp.WaitVisible(chromedp.CSS("#standby-note")))
	if mode := browserValue(b, "read the mode", chromedp.Evaluate[string](`document.getElementById("f-standby-mode").value`)); mode != core.ModeHot {
		t.Errorf("form standby %q without cores, want hot", mode)
	}
	b.waitContains("#standby-note", "shepherd core --task <name>")
	b.run("name the task", chromedp.SendKeys(chromedp.CSS("#f-name"), "ledger"))
	b.waitContains("#standby-note", "shepherd core --task ledger")
	browserValue(b, "choose cold", chromedp.Evaluate[bool](`(() => { const m = document.getElementById("f-standby-mode"); m.value = "cold"; m.dispatchEvent(new Event("change")); return true; })()`))
	b.run("name the group", chromedp.SendKeys(chromedp.CSS("#f-standby-group"), "eu"))
	b.waitContains("#standby-note", "no core serves group eu: start `shepherd core --group eu`")
	m, err := recipe.Join(ctx, s, tasks.Layout().Cores("default"), "core1", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Leave(context.WithoutCancel(ctx)) }()
	b.run("reopen the form", chromedp.Navigate(hs.URL+"/new/task"), chromedp.WaitVisible(chromedp.CSS("#standby-note")))
	got := browserValue(b, "read the standby", chromedp.Evaluate[string](`document.getElementById("f-standby-mode").value + " " + document.getElementById("f-standby-group").value`))
	if got != "cold default" {
		t.Errorf("form standby %q with core1 in group default, want cold default", got)
	}
	b.waitContains("#standby-note", "served by the live cores of group default: core1")
}

// waitGone waits until no element matches sel.
func (b *browser) waitGone(sel string) {
	b.t.Helper()
	coordtest.WaitFor(b.t, 60*time.Second, sel+" to go", func() error {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		there, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q) !== null`, sel)))
		if err != nil {
			return err
		}
		if there {
			return fmt.Errorf("it is still there")
		}
		return nil
	})
}
