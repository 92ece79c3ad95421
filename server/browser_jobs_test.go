package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/scheduler"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// TestBrowserJobFromTheForm drives chromium through a job's life in the
// console, with a real scheduler: an admin defines a job in the New job
// form (a bad schedule first, refused with the field named), runs it
// now, and sees its two lines of output on two lines — as the event
// stream brings the run, and after a reload — with the output as a text
// download; the jobs page's run grid has a coloured cell linking to the
// run; the edit form shows the environment value as *** and keeps it
// when the schedule is changed; the job is deleted with a confirmation;
// and every change is in the audit log.
func TestBrowserJobFromTheForm(t *testing.T) {
	ctx, connect, s := browserCluster(t, "browser-jobs", "alice", auth.Admin, 2*time.Minute)
	log := slog.New(slog.DiscardHandler)
	runInBackground(t, ctx, "scheduler", func(ctx context.Context) error {
		sc, err := scheduler.New(dial(t, connect, coordtest.Auth), scheduler.Options{Host: "sched1", LogDir: t.TempDir(), Logger: log, Resync: time.Second})
		if err != nil {
			return err
		}
		return sc.Run(ctx)
	})
	hs, _ := browserConsole(t, ctx, s, 500*time.Millisecond)
	shots := screenshotDir(t)
	b := newBrowser(t, ctx, hs.URL, shots)
	b.login("alice")

	// The form: a bad schedule is refused naming the field, then fixed.
	b.allow("status of 400 (Bad Request) " + hs.URL + "/api/v1/jobs") // the refusal
	b.run("open the jobs", chromedp.Navigate(hs.URL+"/jobs"), chromedp.WaitVisible(chromedp.CSS("#new-job")))
	b.clickTo("open the form", "#new-job", "/new/job", "#job-form")
	b.run("fill the form",
		chromedp.SetValue(chromedp.CSS("#j-name"), "echo-lines"),
		chromedp.SetValue(chromedp.CSS("#j-schedule"), "61 3 * * *"),
		chromedp.SetValue(chromedp.CSS("#j-command"), "/bin/sh"),
		chromedp.SetValue(chromedp.CSS("#j-args"), "-c\n"+`printf "line one\nline two\n"`),
		chromedp.SetValue(chromedp.CSS("#j-env"), "API_TOKEN=tok-secret"),
		chromedp.SetValue(chromedp.CSS("#j-timeout"), "1m"),
		chromedp.Click(chromedp.CSS("#save-job")),
	)
	b.waitContains("#flash", `job "echo-lines": schedule: "61 3 * * *"`)
	b.shot("job-form")
	b.run("fix the schedule", chromedp.SetValue(chromedp.CSS("#j-schedule"), "0 3 * * *"))
	b.clickTo("save", "#save-job", "/jobs/echo-lines", "#job-run")
	jobs := scheduler.NewAdmin(s)
	stored, err := jobs.LoadJob(ctx, "echo-lines")
	if err != nil || stored.Command != "/bin/sh" || len(stored.Args) != 2 || stored.Args[1] != `printf "line one\nline two\n"` || stored.Env["API_TOKEN"] != "tok-secret" || stored.Timeout.D() != time.Minute {
		t.Fatalf("stored job: %+v, %v", stored, err)
	}

	// Run it now: the output arrives without a reload, line by line.
	browserValue(b, "mark the page", chromedp.Evaluate[bool](`window.__notReloaded = true`))
	b.acceptConfirm()
	b.run("run now", chromedp.Click(chromedp.CSS("#job-run")))
	b.waitText("#job-last", "succeeded")
	b.checkConfirmed("Run echo-lines now?")
	b.waitContains("#runs pre.output", "line two")
	outputLines := func(when string) {
		t.Helper()
		got := browserValue(b, "read the output "+when, chromedp.Evaluate[string](`document.querySelector("#runs pre.output").innerText`))
		if strings.TrimRight(got, "\n") != "line one\nline two" {
			t.Errorf("the output %s reads %q: want its two lines on two lines", when, got)
		}
		ws := browserValue(b, "read its white-space", chromedp.Evaluate[string](`getComputedStyle(document.querySelector("#runs pre.output")).whiteSpace`))
		if ws != "pre-wrap" {
			t.Errorf("the output %s has white-space %s, want pre-wrap", when, ws)
		}
	}
	outputLines("as the run arrives")
	if !browserValue(b, "check no reload", chromedp.Evaluate[bool](`window.__notReloaded === true`)) {
		t.Fatal("the job page was reloaded to show the run")
	}
	b.run("reload the job", chromedp.Navigate(hs.URL+"/jobs/echo-lines"), chromedp.WaitVisible(chromedp.CSS("#runs pre.output")))
	outputLines("after a reload")
	key := browserValue(b, "read the run key", chromedp.Evaluate[string](`document.querySelector("#runs tbody.run").id.replace(/^run-/, "")`))
	if !strings.HasPrefix(key, scheduler.ManualPrefix) {
		t.Fatalf("the run's row is %q", key)
	}
	href := browserValue(b, "read the download link", chromedp.Evaluate[string](`document.querySelector("#run-" + CSS.escape(`+fmt.Sprintf("%q", key)+`) + " a[download]").getAttribute("href")`))
	if p, err := url.PathUnescape(href); err != nil || p != "/api/v1/jobs/echo-lines/runs/"+key+"/output" {
		t.Errorf("the output's download link is %q", href)
	}
	b.shot("job-run")

	// The run grid: a green cell that opens the run.
	b.run("open the jobs", chromedp.Navigate(hs.URL+"/jobs"), chromedp.WaitVisible(chromedp.CSS("#run-grid")))
	cell := `#run-grid tr[data-key="echo-lines"] a.cell`
	b.run("see the cell", chromedp.WaitVisible(chromedp.CSS(cell+`[data-state="succeeded"]`)))
	if colour := browserValue(b, "the cell's colour", chromedp.Evaluate[string](`getComputedStyle(document.querySelector('`+cell+`')).backgroundColor`)); colour != "rgb(31, 122, 58)" {
		t.Errorf("a succeeded run's cell is %s, want the ok green", colour)
	}
	b.shot("run-grid")
	b.clickTo("open the run from the grid", cell, "/jobs/echo-lines", "#runs")
	if at := browserValue(b, "the run opened", chromedp.Evaluate[string](`location.pathname + " " + decodeURIComponent(location.hash)`)); at != "/jobs/echo-lines #run-"+key {
		t.Errorf("the grid's cell opened %q", at)
	}
	if !browserValue(b, "the run's row", chromedp.Evaluate[bool](`document.getElementById(decodeURIComponent(location.hash.slice(1))) !== null`)) {
		t.Error("the page the cell opened has no row for the run")
	}

	// The pages fit a phone without scrolling sideways.
	b.run("a 420 px window", chromedp.EmulateViewport(420, 900))
	for _, page := range []string{"/jobs", "/jobs/echo-lines", "/new/job", "/jobs/echo-lines/edit"} {
		b.run("open "+page, chromedp.Navigate(hs.URL+page), chromedp.WaitVisible(chromedp.CSS("main")))
		if over := browserValue(b, "measure "+page, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`)); over > 0 {
			t.Errorf("%s at 420 px is %d px wider than the window", page, over)
		}
	}
	b.run("back to a desktop window", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(hs.URL+"/jobs/echo-lines"), chromedp.WaitVisible(chromedp.CSS("#job-edit")))

	// Edit the schedule: the environment value shows as *** and is kept.
	b.clickTo("edit", "#job-edit", "/jobs/echo-lines/edit", "#job-form")
	if env := browserValue(b, "read the env", chromedp.Evaluate[string](`document.getElementById("j-env").value`)); env != "API_TOKEN=***" {
		t.Errorf("the edit form's environment reads %q", env)
	}
	if html := browserValue(b, "read the form", chromedp.Evaluate[string](`document.documentElement.outerHTML`)); strings.Contains(html, "tok-secret") {
		t.Error("the edit form holds the environment value in clear")
	}
	b.run("change the schedule", chromedp.SetValue(chromedp.CSS("#j-schedule"), "30 4 * * *"))
	b.clickTo("save", "#save-job", "/jobs/echo-lines", "#job-run")
	b.waitText("#job-schedule", "30 4 * * *")
	if stored, err := jobs.LoadJob(ctx, "echo-lines"); err != nil || stored.Schedule != "30 4 * * *" || stored.Env["API_TOKEN"] != "tok-secret" {
		t.Fatalf("stored after the edit: %+v, %v", stored, err)
	}

	// Delete, confirmed (the question is read first: the page moves on).
	if q := browserValue(b, "read the question", chromedp.Evaluate[string](`document.getElementById("job-delete").dataset.confirm`)); !strings.HasPrefix(q, "Delete job echo-lines?") {
		t.Errorf("the deletion asks %q", q)
	}
	b.acceptConfirm()
	b.clickTo("delete", "#job-delete", "/jobs", "#jobs")
	b.waitGone(`#jobs tr[data-key="echo-lines"]`)
	b.waitGone(`#run-grid tr[data-key="echo-lines"]`)
	if _, err := jobs.LoadJob(ctx, "echo-lines"); !errors.Is(err, scheduler.ErrNoSuchJob) {
		t.Errorf("after the deletion: %v, want ErrNoSuchJob", err)
	}

	b.run("open the audit log", chromedp.Navigate(hs.URL+"/audit"), chromedp.WaitVisible(chromedp.CSS("#audit")))
	audit := browserValue(b, "read the audit log", chromedp.Text(chromedp.CSS("#audit")))
	for _, want := range []string{"job.create", "job.run", "job.update", "job.delete", "job/echo-lines"} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit log lacks %q:\n%s", want, audit)
		}
	}
	if strings.Contains(audit, "tok-secret") {
		t.Error("the environment value is in the audit log")
	}
}
