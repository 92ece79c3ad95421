package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
	"github.com/shepherd-dev/shepherd/monitor"
	"github.com/shepherd-dev/shepherd/scheduler"
	"github.com/shepherd-dev/shepherd/server/auth"
)

// chromiumPath is Debian's chromium (scripts/install-deps.sh).
const chromiumPath = "/usr/bin/chromium"

// screenshotsEnv names a directory to save the browser test's screenshots
// in (docs/console is where docs/console.md shows them from).
const screenshotsEnv = "SHEPHERD_CONSOLE_SCREENSHOTS"

// TestBrowserOperatorJourney drives a real chromium through the console
// of a real cluster: two private MariaDB servers, a core standing by for
// the task, a scheduler, the console reading through cluster.Poller. An
// admin logs in, tests the connection of a new task in the form and
// creates it, watches it turn RUNNING without reloading, stops it, runs a
// job now and sees its result, and finds both actions in the audit log;
// a viewer sees no controls.
func TestBrowserOperatorJourney(t *testing.T) {
	_, err := os.Stat(chromiumPath)
	testpeer.Require(t, "chromium", err == nil, fmt.Sprint(err))
	why, ok := testpeer.MariaDBAvailable()
	testpeer.Require(t, "mariadb", ok, why)
	tg := targets[0]
	tg.Require(t)

	src := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	dst := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	// A GTID replica of the source: the task's failover candidate.
	rep := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{ExtraArgs: []string{"--log-slave-updates"}})
	rep.Exec(t, "SET GLOBAL read_only = ON",
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d, MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos", src.Port()),
		"START SLAVE")
	for _, db := range []*testpeer.MariaDB{src, dst} {
		db.Exec(t, "CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT PRIMARY KEY, item VARCHAR(40))")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	connect := tg.Chroot(t, "browser")
	s := dial(t, connect, coordtest.Auth)
	log := slog.New(slog.DiscardHandler)
	store := auth.NewStore(s, auth.Options{BcryptCost: bcrypt.MinCost})
	for _, u := range []struct {
		name string
		role auth.Role
	}{{"alice", auth.Admin}, {"victor", auth.Viewer}} {
		if err := store.AddUser(ctx, u.name, u.role, []byte(testPassword), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := scheduler.NewAdmin(s).StoreJob(ctx, scheduler.Job{Name: "nightly-report", Schedule: "0 3 * * *", Command: "/bin/echo", Args: []string{"report done"}}); err != nil {
		t.Fatal(err)
	}
	runInBackground(t, ctx, "core", func(ctx context.Context) error {
		c, err := core.New(dial(t, connect, coordtest.Auth), core.Config{Host: "core1", Tasks: []string{"orders"}, Engine: core.MySQL{},
			CheckpointInterval: 200 * time.Millisecond, RetryBase: 100 * time.Millisecond, RetryMax: time.Second, Logger: log})
		if err != nil {
			return err
		}
		return c.Run(ctx)
	})
	runInBackground(t, ctx, "scheduler", func(ctx context.Context) error {
		sc, err := scheduler.New(dial(t, connect, coordtest.Auth), scheduler.Options{Host: "sched1", LogDir: t.TempDir(), Logger: log, Resync: time.Second})
		if err != nil {
			return err
		}
		return sc.Run(ctx)
	})
	hs, _ := browserConsole(t, ctx, s, time.Second, tg.Addr)

	shots := screenshotDir(t)
	b := newBrowser(t, ctx, hs.URL, shots)

	b.login("alice")
	b.run("overview", chromedp.WaitVisible(chromedp.CSS(".cards")))
	b.shot("overview")

	// The form: test the connection first, then create.
	b.run("open the new-task form", chromedp.Navigate(hs.URL+"/new/task"), chromedp.WaitVisible(chromedp.CSS("#task-form")))
	b.run("fill the form",
		chromedp.SetValue(chromedp.CSS("#f-name"), "orders"),
		chromedp.SetValue(chromedp.CSS("#f-source-host"), src.Host()),
		chromedp.SetValue(chromedp.CSS("#f-source-port"), strconv.Itoa(src.Port())),
		chromedp.SetValue(chromedp.CSS("#f-source-user"), "root"),
		chromedp.SetValue(chromedp.CSS("#f-target-host"), dst.Host()),
		chromedp.SetValue(chromedp.CSS("#f-target-port"), strconv.Itoa(dst.Port())),
		chromedp.SetValue(chromedp.CSS("#f-target-user"), "root"),
		chromedp.SetValue(chromedp.CSS("#f-include"), "shop.*"),
		chromedp.SetValue(chromedp.CSS("#f-source-hosts"), rep.Addr()),
		chromedp.SetValue(chromedp.CSS("#f-start"), "current"),
		chromedp.Click(chromedp.CSS("#test-connection")),
	)
	b.waitText("#validate-verdict", "All checks passed.")
	checks := browserValue(b, "read the checks", chromedp.Text(chromedp.CSS("#validate-result")))
	for _, want := range []string{"source binary log", "source privileges", "start position", "target connect", "shop.orders"} {
		if !strings.Contains(checks, want) {
			t.Errorf("test connection result lacks %q:\n%s", want, checks)
		}
	}
	b.shot("task-form")
	b.clickTo("create", "#save-task", "/tasks/orders", "#task-state")

	// The task page turns RUNNING by itself: the page is not reloaded
	// (a marker set on it survives).
	browserValue(b, "mark the page", chromedp.Evaluate[bool](`window.__notReloaded = true`))
	b.waitText("#task-state", "RUNNING")
	b.waitContains("#instances", "RUNNING")
	if !browserValue(b, "check no reload", chromedp.Evaluate[bool](`window.__notReloaded === true`)) {
		t.Fatal("the task page was reloaded to show RUNNING")
	}
	src.Exec(t, "INSERT INTO shop.orders VALUES (1, 'lamp'), (2, 'desk')")
	coordtest.WaitFor(t, 30*time.Second, "the rows copied to the target", func() error {
		var n int
		if err := dst.DB(t).QueryRow("SELECT COUNT(*) FROM shop.orders").Scan(&n); err != nil || n != 2 {
			return fmt.Errorf("%d rows, %v", n, err)
		}
		return nil
	})
	b.run("reload the task page", chromedp.Navigate(hs.URL+"/tasks/orders"), chromedp.WaitVisible(chromedp.CSS("#task-state")))
	b.shot("task")

	// Verify: source and target compare equal, and the report is kept.
	b.run("verify", chromedp.Click(chromedp.CSS("#verify")))
	b.waitContains("#flash", "Equal (")
	// The page shows the report once the console's snapshot (read every
	// second) has it: reloaded until then.
	coordtest.WaitFor(t, 30*time.Second, "the task page to show the verify report", func() error {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		if _, err := chromedp.Run(ctx, chromedp.Steps(chromedp.Navigate(hs.URL+"/tasks/orders"), chromedp.WaitVisible(chromedp.CSS("#task-state")))); err != nil {
			return err
		}
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById("last-verify") || {}).textContent || ""`))
		if err != nil {
			return err
		}
		if !strings.Contains(text, "Equal") {
			return fmt.Errorf("last verify reads %q", text)
		}
		return nil
	})

	// Switch the source to the replica, once it has the two rows too.
	coordtest.WaitFor(t, 30*time.Second, "the replica to have the rows", func() error {
		var n int
		if err := rep.DB(t).QueryRow("SELECT COUNT(*) FROM shop.orders").Scan(&n); err != nil || n != 2 {
			return fmt.Errorf("%d rows, %v", n, err)
		}
		return nil
	})
	b.waitText("#reading-source", src.Addr())
	b.acceptConfirm()
	b.run("switch the source", chromedp.SetValue(chromedp.CSS("#switch-to"), rep.Addr()), chromedp.Click(chromedp.CSS("#switch-source")))
	b.waitContains("#flash", "Asked the owner to switch from "+src.Addr()+" to "+rep.Addr())
	b.checkConfirmed("Make orders read from " + rep.Addr() + "?")
	tasks := core.NewAdmin(s, "")
	coordtest.WaitFor(t, 30*time.Second, "the task to read from the replica", func() error {
		ts, err := tasks.Task(ctx, "orders")
		if err != nil {
			return err
		}
		if done, err := tasks.SourceSwitched(ctx, &ts, rep.Addr()); err != nil || !done {
			return fmt.Errorf("not yet (%v): lastCommit %+v", err, ts.LastCommit)
		}
		return nil
	})
	src.Exec(t, "INSERT INTO shop.orders VALUES (3, 'chair')") // through the replica
	coordtest.WaitFor(t, 30*time.Second, "the row copied from the replica", func() error {
		var n int
		if err := dst.DB(t).QueryRow("SELECT COUNT(*) FROM shop.orders").Scan(&n); err != nil || n != 3 {
			return fmt.Errorf("%d rows, %v", n, err)
		}
		return nil
	})
	// The page shows the console's snapshot, polled each second: reload
	// until it has the switch.
	coordtest.WaitFor(t, 30*time.Second, "the task page to show the switch", func() error {
		b.run("reload the task page", chromedp.Navigate(hs.URL+"/tasks/orders"), chromedp.WaitVisible(chromedp.CSS("#task-state")))
		page := browserValue(b, "read the page", chromedp.Evaluate[string](`document.body.innerText`))
		if !strings.Contains(page, "asked for by console alice") {
			return errors.New("no switch shown yet")
		}
		return nil
	})
	b.waitText("#reading-source", rep.Addr())
	b.waitContains("#last-switch", "asked for by console alice")
	b.shot("task-switched")

	// Stop, with the confirmation.
	b.acceptConfirm()
	b.run("stop", chromedp.Click(chromedp.CSS("#action-stop")))
	b.waitText("#task-state", "STOPPED")
	b.checkConfirmed("Stop task orders?")

	// Run a job now and see its result arrive.
	b.run("open the job", chromedp.Navigate(hs.URL+"/jobs/nightly-report"), chromedp.WaitVisible(chromedp.CSS("#job-run")))
	b.acceptConfirm()
	b.run("run now", chromedp.Click(chromedp.CSS("#job-run")))
	b.waitText("#job-last", "succeeded")
	b.checkConfirmed("Run nightly-report now?")
	b.waitContains("#runs", "report done") // the history too, without a reload
	b.run("reload the job", chromedp.Navigate(hs.URL+"/jobs/nightly-report"), chromedp.WaitVisible(chromedp.CSS("#runs")))
	runs := browserValue(b, "read the history", chromedp.Text(chromedp.CSS("#runs")))
	if !strings.Contains(runs, "report done") || !strings.Contains(runs, "succeeded") {
		t.Errorf("job history lacks the run's output:\n%s", runs)
	}
	b.shot("job")

	// Both actions are in the audit log.
	b.run("open the audit log", chromedp.Navigate(hs.URL+"/audit"), chromedp.WaitVisible(chromedp.CSS("#audit")))
	audit := browserValue(b, "read the audit log", chromedp.Text(chromedp.CSS("#audit")))
	for _, want := range []string{"task.stop", "job.run", "task.create", "task.switch-source", "alice"} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit log lacks %q:\n%s", want, audit)
		}
	}
	b.shot("audit")
	b.run("tasks list", chromedp.Navigate(hs.URL+"/tasks"), chromedp.WaitVisible(chromedp.CSS("#tasks")))
	b.shot("tasks")
	b.run("users page", chromedp.Navigate(hs.URL+"/users"), chromedp.WaitVisible(chromedp.CSS("#users")))
	b.run("create a token", chromedp.SetValue(chromedp.CSS("#token-form input[name=user]"), "victor"),
		chromedp.SetValue(chromedp.CSS("#token-form input[name=note]"), "wallboard"),
		chromedp.Click(chromedp.CSS("#token-form button")))
	b.waitContains("#new-token", "Token for victor (shown this once): shp_")
	b.shot("users")
	b.run("znode browser", chromedp.Navigate(hs.URL+"/znodes?path=/mysql_replicator/tasks/orders"), chromedp.WaitVisible(chromedp.CSS("#znode")))
	b.shot("znodes")

	// Every page fits a phone (420 px) and a wide screen without
	// scrolling sideways; states are coloured (a stopped task is muted).
	for _, width := range []int64{420, 1920} {
		b.run(fmt.Sprintf("a %d px window", width), chromedp.EmulateViewport(width, 900))
		for _, page := range []string{"/", "/tasks", "/tasks/orders", "/jobs", "/jobs/nightly-report", "/collectors", "/coord", "/alerts", "/audit", "/users"} {
			b.run("open "+page, chromedp.Navigate(hs.URL+page), chromedp.WaitVisible(chromedp.CSS("main")))
			if over := browserValue(b, "measure "+page, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`)); over > 0 {
				t.Errorf("%s at %d px is %d px wider than the window", page, width, over)
			}
		}
		b.run("the tasks list", chromedp.Navigate(hs.URL+"/tasks"), chromedp.WaitVisible(chromedp.CSS("#tasks")))
		b.shot(fmt.Sprintf("tasks-%dpx", width))
	}
	colour := browserValue(b, "the stopped task's colour", chromedp.Evaluate[string](`getComputedStyle(document.querySelector('#tasks [data-field="state"]')).color`))
	if colour != "rgb(95, 107, 120)" {
		t.Errorf("a STOPPED task's state is drawn in %s, want the muted colour", colour)
	}
	b.run("back to a desktop window", chromedp.EmulateViewport(1280, 900))

	// A viewer sees the task but no control.
	b.run("log out", chromedp.Click(chromedp.CSS("form[action='/logout'] button")), chromedp.WaitVisible(chromedp.CSS("#login")))
	b.login("victor")
	b.run("viewer's task page", chromedp.Navigate(hs.URL+"/tasks/orders"), chromedp.WaitVisible(chromedp.CSS("#task-state")))
	controls := browserValue(b, "count controls", chromedp.Evaluate[int](`document.querySelectorAll("[data-action], #reset-form, #switch-form, #action-edit, #new-task").length`))
	if controls != 0 {
		t.Errorf("the viewer sees %d controls on the task page", controls)
	}
	b.shot("task-viewer")
}

// browser is one headless chromium on a fresh profile.
type browser struct {
	t     *testing.T
	ctx   context.Context
	base  string
	shots string

	mu     sync.Mutex
	errors []string        // what the pages logged as errors (see record)
	marks  map[string]bool // console.log marks seen (see checkNoErrors)
	// allowed are substrings of errors the test causes on purpose (a
	// refused request it checks the page's answer to).
	allowed []string
}

func newBrowser(t *testing.T, ctx context.Context, base, shots string) *browser {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	b := &browser{t: t, ctx: bctx, base: base, shots: shots, marks: map[string]bool{}}
	if err := chromedp.Listen(bctx, b.record); err != nil {
		t.Fatalf("listen to chromium: %v", err)
	}
	if _, err := chromedp.Call(bctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enable chromium's log: %v", err)
	}
	t.Cleanup(b.checkNoErrors) // before the browser closes (cleanups run last first)
	return b
}

// record keeps what a page reports as an error: an uncaught exception,
// console.error, or a browser log entry of level error (a failed load, a
// Content-Security-Policy violation).
func (b *browser) record(ev any) {
	var msg string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil && e.ExceptionDetails.Exception.Description != "" {
			msg += " " + e.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeLog && len(e.Args) == 1 {
			if mark, ok := strings.CutPrefix(strings.Trim(string(e.Args[0].Value), `"`), browserMark); ok {
				b.mu.Lock()
				b.marks[mark] = true
				b.mu.Unlock()
			}
		}
		if e.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		var args []string
		for _, a := range e.Args {
			args = append(args, strings.Trim(string(a.Value), `"`)+a.Description)
		}
		msg = "console.error: " + strings.Join(args, " ")
	case *cdplog.EventEntryAdded:
		if e.Entry.Level != cdplog.EntryLevelError {
			return
		}
		msg = fmt.Sprintf("log (%s): %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)
	default:
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errors = append(b.errors, msg)
}

// allow lets errors holding substr pass checkNoErrors: the test causes
// them on purpose.
func (b *browser) allow(substr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.allowed = append(b.allowed, substr)
}

// browserMark starts the console.log line checkNoErrors orders itself
// after.
const browserMark = "shepherd-test-mark-"

// checkNoErrors fails the test if any page logged an error it did not
// allow. It first logs a mark and waits for it to come back, so that what
// the page logged before has arrived (unless the page is gone: a test
// that failed may have closed it).
func (b *browser) checkNoErrors() {
	mark := strconv.FormatInt(time.Now().UnixNano(), 10)
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(console.log("`+browserMark+mark+`"), true)`)); err == nil {
		for ctx.Err() == nil {
			b.mu.Lock()
			seen := b.marks[mark]
			b.mu.Unlock()
			if seen {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var bad []string
	for _, e := range b.errors {
		if !slices.ContainsFunc(b.allowed, func(a string) bool { return strings.Contains(e, a) }) {
			bad = append(bad, e)
		}
	}
	if len(bad) > 0 {
		b.t.Errorf("the pages logged %d errors:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

func (b *browser) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	browserValue(b, what, chromedp.Steps(steps...))
}

// clickTo clicks sel, which opens the page at path (a link, or a script
// that sets the location), then waits for that page to have loaded and
// to show want. Waiting for want alone is not enough: chromedp may find
// want in the new document while it still resolves the next query's
// node in the old one ("Could not find node with given id").
func (b *browser) clickTo(what, sel, path, want string) {
	b.t.Helper()
	b.run(what, chromedp.Click(chromedp.CSS(sel)))
	coordtest.WaitFor(b.t, 60*time.Second, what+": "+path+" loaded", func() error {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		at, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + " " + document.readyState`))
		if err != nil { // the old document went away mid-evaluation
			return err
		}
		if at != path+" complete" {
			return fmt.Errorf("at %q", at)
		}
		return nil
	})
	b.run(what+": "+want, chromedp.WaitVisible(chromedp.CSS(want)))
}

// browserValue runs one action and returns its value; a failure ends the
// test with the page's text.
func browserValue[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		b.t.Fatalf("browser: %s: %v\npage text:\n%s", what, err, body)
	}
	return v
}

func (b *browser) login(user string) {
	b.t.Helper()
	b.run("log in as "+user,
		chromedp.Navigate(b.base+"/login"),
		chromedp.WaitVisible(chromedp.CSS("#login")),
		chromedp.SetValue(chromedp.CSS("#user"), user),
		chromedp.SetValue(chromedp.CSS("#password"), testPassword),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("header .who")),
	)
}

// waitText waits until the element's text is want (live updates).
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	var got string
	coordtest.WaitFor(b.t, 60*time.Second, sel+" to read "+want, func() error {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		var err error
		if got, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel))); err != nil {
			return err
		}
		if strings.TrimSpace(got) != want {
			return fmt.Errorf("it reads %q", got)
		}
		return nil
	})
}

// waitContains waits until the element's text holds want.
func (b *browser) waitContains(sel, want string) {
	b.t.Helper()
	coordtest.WaitFor(b.t, 60*time.Second, sel+" to hold "+want, func() error {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			return err
		}
		if !strings.Contains(got, want) {
			return fmt.Errorf("it reads %q", got)
		}
		return nil
	})
}

// acceptConfirm answers the next confirmation dialogs yes, recording
// their question (headless chromium cannot click a native dialog).
func (b *browser) acceptConfirm() {
	b.t.Helper()
	browserValue(b, "accept confirmations", chromedp.Evaluate[bool](`(window.confirm = (q) => { window.__asked = q; return true; }, true)`))
}

func (b *browser) checkConfirmed(want string) {
	b.t.Helper()
	asked := browserValue(b, "read the confirmation", chromedp.Evaluate[string](`window.__asked || ""`))
	if !strings.HasPrefix(asked, want) {
		b.t.Errorf("confirmation asked %q, want %q", asked, want)
	}
}

func (b *browser) shot(name string) {
	b.t.Helper()
	png := browserValue(b, "screenshot "+name, chromedp.CaptureScreenshot())
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// browserCluster starts what every browser test needs: chromium present,
// a fresh chroot of the first coordination server with user (of role)
// in it, and a context bounding the test. It returns the context, the
// connect string and an authenticated session.
func browserCluster(t *testing.T, chroot, user string, role auth.Role, d time.Duration) (context.Context, string, *recipe.Session) {
	t.Helper()
	_, err := os.Stat(chromiumPath)
	testpeer.Require(t, "chromium", err == nil, fmt.Sprint(err))
	tg := targets[0]
	tg.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	connect := tg.Chroot(t, chroot)
	s := dial(t, connect, coordtest.Auth)
	if err := auth.NewStore(s, auth.Options{BcryptCost: bcrypt.MinCost}).AddUser(ctx, user, role, []byte(testPassword), false); err != nil {
		t.Fatal(err)
	}
	return ctx, connect, s
}

// browserConsole serves a console over s for a browser test: its own
// poller reads the cluster every refresh (and, given coord servers, their
// health), and the console is up once the first snapshot is in. The HTTP
// server closes after the browser's cleanup (its event stream gone).
func browserConsole(t *testing.T, ctx context.Context, s *recipe.Session, refresh time.Duration, coord ...string) (*httptest.Server, *cluster.Poller) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	poller := cluster.NewPoller(cluster.NewReader(s, cluster.Options{CoordServers: coord}), refresh, log)
	runInBackground(t, ctx, "poller", poller.Run)
	srv, err := New(Config{}, Deps{Session: s, Feed: poller, Logger: log, BcryptCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	coordtest.WaitFor(t, 10*time.Second, "a first snapshot", func() error {
		if poller.Latest() == nil {
			return errors.New("none yet")
		}
		return nil
	})
	return hs, poller
}

// screenshotDir is where a test saves its screenshots:
// $SHEPHERD_CONSOLE_SCREENSHOTS (docs/console), or a directory of its own.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv(screenshotsEnv); d != "" {
		return d
	}
	return t.TempDir()
}

// runInBackground runs fn until the test ends, and fails the test if it
// returns an error before that.
func runInBackground(t *testing.T, ctx context.Context, what string, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("%s: %v", what, err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// TestBrowserAlerts drives chromium through an alert's life in the
// console: a real monitor (its own election, state machine and state in
// the tree) fires TaskFailed for task orders while an operator has the
// task page open, and the banner appears without a reload; the task
// page and the alerts page show the alert; the operator silences it from
// the alerts page (the banner goes), finds the silence in the audit log,
// removes it (the banner is back); the task recovers, the banner goes
// by itself on another page and the alert is in the resolved history.
func TestBrowserAlerts(t *testing.T) {
	ctx, connect, s := browserCluster(t, "browser-alerts", "olga", auth.Operator, 3*time.Minute)
	log := slog.New(slog.DiscardHandler)
	if err := core.NewAdmin(s, "").AddTask(ctx, mustSpec(t, specJSON), false); err != nil {
		t.Fatal(err)
	}
	hs, _ := browserConsole(t, ctx, s, 300*time.Millisecond)
	shots := screenshotDir(t)
	b := newBrowser(t, ctx, hs.URL, shots)
	b.login("olga")
	b.run("open the task", chromedp.Navigate(hs.URL+"/tasks/orders"), chromedp.WaitVisible(chromedp.CSS("#task-alerts")))
	if visible := browserValue(b, "banner before", chromedp.Evaluate[bool](`!document.getElementById("alert-banner").hidden`)); visible {
		t.Fatal("a banner before any alert")
	}
	browserValue(b, "mark the page", chromedp.Evaluate[bool](`window.__notReloaded = true`))

	// The monitor sees the task's instance FAILED (its own feed: no core
	// runs here) and fires TaskFailed, critical, at once.
	failed := &Snapshot{ReadAt: time.Now(), Tasks: []core.TaskStatus{{Name: "orders",
		Instances: []core.Instance{{Name: "core1", State: core.InstanceState{State: core.StateFailed, Error: "target refused the row: duplicate key"}}}}}}
	monitorFeed := cluster.NewFixed(failed)
	cfg := monitor.DefaultConfig()
	cfg.Name, cfg.Interval = "monitor-1", 200*time.Millisecond
	m, err := monitor.New(cfg, monitor.Deps{Session: dial(t, connect, coordtest.Auth), Feed: monitorFeed, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	runInBackground(t, ctx, "monitor", m.Run)

	const banner = "1 critical alert firing: TaskFailed task=orders"
	b.waitContains("#alert-banner", banner)
	b.run("see the banner", chromedp.WaitVisible(chromedp.CSS("#alert-banner")))
	// The task page's own alerts follow, as the banner does.
	b.waitContains("#task-alerts", "task orders instance core1 is FAILED: target refused the row: duplicate key")
	if !browserValue(b, "check no reload", chromedp.Evaluate[bool](`window.__notReloaded === true`)) {
		t.Fatal("the page was reloaded to show the banner and the task's alert")
	}
	live := browserValue(b, "read the live list", chromedp.Text(chromedp.CSS("#task-alerts")))
	b.run("reload the task", chromedp.Navigate(hs.URL+"/tasks/orders"), chromedp.WaitVisible(chromedp.CSS("#task-alerts")))
	b.waitContains("#task-alerts", "task orders instance core1 is FAILED: target refused the row: duplicate key")
	if served := browserValue(b, "read the served list", chromedp.Text(chromedp.CSS("#task-alerts"))); served != live {
		t.Errorf("the task's alerts read, live:\n%s\nand as served:\n%s", live, served)
	}
	b.shot("task-alert")

	b.clickTo("follow the banner", "#alert-banner a", "/alerts", "#alerts")
	page := browserValue(b, "read the alerts", chromedp.Text(chromedp.CSS("#alerts")))
	for _, want := range []string{"critical", "firing", "TaskFailed", "task=orders", "shepherd ctl task start orders", "ago"} {
		if !strings.Contains(page, want) {
			t.Errorf("the alerts page lacks %q:\n%s", want, page)
		}
	}
	b.waitContains("#monitor-status", "monitor-1")
	b.shot("alerts")

	// Silence it from the page: the banner goes.
	b.run("silence it",
		chromedp.SetValue(chromedp.CSS("#alerts form.silence-form input[name=for]"), "1h"),
		chromedp.SetValue(chromedp.CSS("#alerts form.silence-form input[name=comment]"), "replaying the batch by hand"),
		chromedp.Click(chromedp.CSS("#alerts form.silence-form button")))
	b.waitContains("#silences", "replaying the batch by hand")
	b.waitContains("#silences", "console olga")
	b.waitContains("#alerts", "silenced by s-")
	b.run("no banner while silenced", chromedp.WaitNotVisible(chromedp.CSS("#alert-banner")))
	b.shot("alerts-silenced")
	b.run("open the audit log", chromedp.Navigate(hs.URL+"/audit"), chromedp.WaitVisible(chromedp.CSS("#audit")))
	b.waitContains("#audit", "alert.silence")

	// Remove the silence: the banner is back.
	b.run("back to the alerts", chromedp.Navigate(hs.URL+"/alerts"), chromedp.WaitVisible(chromedp.CSS("#silences")))
	// The page reloads after the removal: the question is read before.
	if q := browserValue(b, "read the question", chromedp.Evaluate[string](`document.querySelector("#silences button[data-method=DELETE]").dataset.confirm`)); !strings.HasPrefix(q, "Remove silence s-") {
		t.Errorf("the removal asks %q", q)
	}
	b.acceptConfirm()
	b.run("remove the silence", chromedp.Click(chromedp.CSS("#silences button[data-method=DELETE]")))
	b.waitContains("#silences", "No silence.")
	b.run("the banner is back", chromedp.WaitVisible(chromedp.CSS("#alert-banner")))
	b.run("open the audit log", chromedp.Navigate(hs.URL+"/audit"), chromedp.WaitVisible(chromedp.CSS("#audit")))
	b.waitContains("#audit", "alert.unsilence")

	// The task recovers: the banner goes by itself, and the alert is
	// history.
	b.run("open the tasks", chromedp.Navigate(hs.URL+"/tasks"), chromedp.WaitVisible(chromedp.CSS("#alert-banner")))
	browserValue(b, "mark the page", chromedp.Evaluate[bool](`window.__notReloaded = true`))
	monitorFeed.Set(&Snapshot{ReadAt: time.Now(), Tasks: []core.TaskStatus{{Name: "orders"}}})
	b.run("the banner goes", chromedp.WaitNotVisible(chromedp.CSS("#alert-banner")))
	if !browserValue(b, "check no reload", chromedp.Evaluate[bool](`window.__notReloaded === true`)) {
		t.Fatal("the page was reloaded to hide the banner")
	}
	b.run("open the alerts", chromedp.Navigate(hs.URL+"/alerts"), chromedp.WaitVisible(chromedp.CSS("#resolved")))
	b.waitContains("#resolved", "TaskFailed")
	b.waitContains("#alerts", "No alert is firing or pending.")
}
