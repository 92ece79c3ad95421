package server

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/monitor"
	"github.com/shepherd-dev/shepherd/monitor/series"
	"github.com/shepherd-dev/shepherd/scheduler"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// TestBrowserPlots opens, in chromium, a task page with an hour of
// series as the monitor stores it — a lag rising to 2 minutes, ten
// minutes with no owner, then caught up — and a job page with two runs:
// the uPlot canvases are drawn with their axis labels (time, lag with
// humanized ticks, rows/s, duration), the legend shows the value under
// the cursor ("unknown" over the gap: a gap, not a zero), the range
// buttons redraw at 6 h, the pages fit a phone, and the browser logs no
// error (a script, a stylesheet or the Content-Security-Policy).
func TestBrowserPlots(t *testing.T) {
	ctx, _, s := browserCluster(t, "browser-plots", "vera", auth.Viewer, 2*time.Minute)
	if err := core.NewAdmin(s, "").AddTask(ctx, mustSpec(t, specJSON), false); err != nil {
		t.Fatal(err)
	}
	// The hour as the active monitor records it, one sample a minute:
	// the lag steps up (20 s, 1 min, 2 min, ten minutes apart: the
	// cursor reads a step whichever bucket it lands on), then no owner
	// for ten minutes, then caught up.
	now := time.Now()
	var ring series.Ring
	for m := 59; m >= 0; m-- {
		lag, rows := 20.0, 1200.0
		switch {
		case m < 20:
			lag, rows = 0.4, 800
		case m < 30:
			lag, rows = math.NaN(), math.NaN() // no owner: nothing known
		case m < 40:
			lag = 120
		case m < 50:
			lag = 60
		}
		ring.Append(series.Sample{At: now.Add(-time.Duration(m) * time.Minute), Lag: lag, Rows: rows})
	}
	if err := s.EnsurePath(ctx, monitor.SeriesPath); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, monitor.SeriesPath+"/orders", ring.Encode(), zk.FlagPersistent, nil); err != nil {
		t.Fatal(err)
	}
	// A job with a succeeded run of 1.5 s and a failed one of 75 s.
	jobs := scheduler.NewAdmin(s)
	if err := jobs.StoreJob(ctx, scheduler.Job{Name: "nightly-report", Schedule: "0 3 * * *", Command: "/bin/true"}); err != nil {
		t.Fatal(err)
	}
	for i, r := range []struct {
		st   scheduler.Status
		took time.Duration
	}{{scheduler.Succeeded, 1500 * time.Millisecond}, {scheduler.Failed, 75 * time.Second}} {
		key := fmt.Sprintf("manual-%s", now.Add(-time.Duration(40-20*i)*time.Minute).UTC().Format(scheduler.RunKeyLayout))
		start := now.Add(-time.Duration(40-20*i) * time.Minute)
		res, _ := json.Marshal(scheduler.Result{Version: 1, Job: "nightly-report", RunKey: key, Status: r.st, Scheduled: start, Start: start, End: start.Add(r.took)})
		if err := s.EnsurePath(ctx, scheduler.RunPath("nightly-report", key)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, scheduler.ResultPath("nightly-report", key), res, zk.FlagPersistent, nil); err != nil {
			t.Fatal(err)
		}
	}
	hs, _ := browserConsole(t, ctx, s, 500*time.Millisecond)
	shots := screenshotDir(t)
	b := newBrowser(t, ctx, hs.URL, shots)
	b.login("vera")

	b.run("open the task", chromedp.Navigate(hs.URL+"/tasks/orders"), chromedp.WaitVisible(chromedp.CSS("#plot-lag canvas")),
		chromedp.WaitVisible(chromedp.CSS("#plot-rows canvas")))
	b.waitContains("#task-plots [data-plot-status]", "buckets of 1 min have a value")
	// 60 buckets, 10 of them the gap; the oldest is out of the range when
	// the page asked in the minute after the series was written.
	status := browserValue(b, "read the plot status", chromedp.Text(chromedp.CSS("#task-plots [data-plot-status]")))
	if !regexp.MustCompile(`^(50 of 60|49 of 59) buckets of 1 min have a value; stored by the monitor `).MatchString(status) {
		t.Errorf("the plots' status reads %q", status)
	}
	for _, sel := range []string{"#plot-lag canvas", "#plot-rows canvas"} {
		if !b.drawn(sel) {
			t.Errorf("%s is blank", sel)
		}
	}
	for sel, want := range map[string]string{"#plot-lag .u-legend": "lag", "#plot-rows .u-legend": "rows/s"} {
		if got := browserValue(b, "read "+sel, chromedp.Text(chromedp.CSS(sel))); !strings.Contains(got, want) {
			t.Errorf("%s reads %q, want the series %q", sel, got, want)
		}
	}
	// The value under the cursor: 45 minutes ago (lag 1 min), then in the
	// gap 25 minutes ago.
	b.hover("#plot-lag", 15.0/60)
	b.waitText("#plot-lag .u-legend .u-series:nth-child(2) .u-value", "1m")
	b.hover("#plot-rows", 15.0/60)
	b.waitText("#plot-rows .u-legend .u-series:nth-child(2) .u-value", "1,200 rows/s")
	b.hover("#plot-lag", 35.0/60)
	b.waitText("#plot-lag .u-legend .u-series:nth-child(2) .u-value", "unknown")
	b.shot("task-plots")

	// The axes' labels and ticks are drawn on the canvas: record what is
	// written on canvases, then choose 6 hours.
	browserValue(b, "record the canvas text", chromedp.Evaluate[bool](`(() => {
		window.__drawn = [];
		const fill = CanvasRenderingContext2D.prototype.fillText;
		CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) { window.__drawn.push(String(text)); return fill.call(this, text, ...rest); };
		return true;
	})()`))
	b.run("choose 6 hours", chromedp.Click(chromedp.CSS(`#task-plots button[data-range="6h"]`)))
	b.waitContains("#task-plots [data-plot-status]", "buckets of 5 min have a value")
	if p := browserValue(b, "read the pressed button", chromedp.Evaluate[string](`document.querySelector('#task-plots button[aria-pressed="true"]').dataset.range`)); p != "6h" {
		t.Errorf("the pressed range button is %q, want 6h", p)
	}
	drawn := browserValue(b, "read the canvas text", chromedp.Evaluate[[]string](`window.__drawn`))
	for _, want := range []string{"time (UTC)", "lag", "rows/s"} {
		if !slices.Contains(drawn, want) {
			t.Errorf("no axis label %q drawn; drawn: %q", want, drawn)
		}
	}
	if !slices.ContainsFunc(drawn, regexp.MustCompile(`^\d+m(\d+s)?$`).MatchString) {
		t.Errorf("no humanized lag tick (like 1m or 1m30s) drawn: %q", drawn)
	}
	if !slices.ContainsFunc(drawn, regexp.MustCompile(`^\d\d:\d\d$`).MatchString) {
		t.Errorf("no time tick (like 18:00, UTC) drawn: %q", drawn)
	}

	// The job: one point per run, coloured by outcome.
	b.run("open the job", chromedp.Navigate(hs.URL+"/jobs/nightly-report"), chromedp.WaitVisible(chromedp.CSS("#plot-durations canvas")))
	b.waitContains("#job-plots [data-plot-status]", "2 finished run(s) started in this range.")
	if !b.drawn("#plot-durations canvas") {
		t.Error("the durations plot is blank")
	}
	legend := browserValue(b, "read the durations legend", chromedp.Text(chromedp.CSS("#plot-durations .u-legend")))
	for _, want := range []string{"succeeded", "failed"} {
		if !strings.Contains(legend, want) {
			t.Errorf("the durations legend %q lacks %q", legend, want)
		}
	}
	b.hover("#plot-durations", 40.0/60)
	b.waitContains("#plot-durations .u-legend", "1m15s")
	b.shot("job-plots")

	// A phone: no page wider than the window.
	b.run("a 420 px window", chromedp.EmulateViewport(420, 900))
	for _, page := range []string{"/tasks/orders", "/jobs/nightly-report"} {
		b.run("open "+page, chromedp.Navigate(hs.URL+page), chromedp.WaitVisible(chromedp.CSS(".plot-area canvas")))
		if over := browserValue(b, "measure "+page, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`)); over > 0 {
			t.Errorf("%s at 420 px is %d px wider than the window", page, over)
		}
	}
}

// drawn reports whether the canvas has a pixel that is not transparent.
func (b *browser) drawn(sel string) bool {
	b.t.Helper()
	return browserValue(b, "look at "+sel, chromedp.Evaluate[bool](`(() => {
		const c = document.querySelector(`+fmt.Sprintf("%q", sel)+`);
		if (!c || !c.width || !c.height) return false;
		const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		for (let i = 3; i < px.length; i += 4) if (px[i] !== 0) return true;
		return false;
	})()`))
}

// hover moves the mouse over the plot in the box sel, at fraction x of
// its width (0: the start of the range, 1: now), half way up.
func (b *browser) hover(sel string, x float64) {
	b.t.Helper()
	browserValue(b, fmt.Sprintf("hover %s at %.2f", sel, x), chromedp.Evaluate[bool](`(() => {
		const over = document.querySelector(`+fmt.Sprintf("%q", sel+" .u-over")+`);
		const r = over.getBoundingClientRect();
		const at = {clientX: r.left + r.width * `+fmt.Sprint(x)+`, clientY: r.top + r.height / 2, bubbles: true};
		over.dispatchEvent(new MouseEvent("mouseenter", at));
		over.dispatchEvent(new MouseEvent("mousemove", at));
		return true;
	})()`))
}
