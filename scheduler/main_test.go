package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/sessiontest"
)

// Every integration test runs against both servers: shepherd coord in
// process and Apache ZooKeeper 3.8 as a child JVM, started once per test
// binary with a short tick so that sessions of dead schedulers expire in
// a fraction of a second. Each test works below its own chroot.
const testTick = 100 * time.Millisecond

// testSessionTimeout is the schedulers' session timeout: how long a
// killed master keeps its run.
const testSessionTimeout = time.Second

type target = coordtest.Target

var targets []*target

// childEnv, when set, makes the test binary a scheduler process (for the
// kill -9 tests) configured by the JSON childConfig in the variable.
const childEnv = "SCHEDULER_TEST_CHILD"

type childConfig struct {
	Connect string `json:"connect"`
	Jobs    string `json:"jobs"` // jobs file contents
	Host    string `json:"host"`
	LogDir  string `json:"logDir"`
	// HTTPAllow is its --http-allow.
	HTTPAllow []string `json:"httpAllow,omitempty"`
}

func TestMain(m *testing.M) {
	if c := os.Getenv(childEnv); c != "" {
		os.Exit(runChild(c))
	}
	os.Exit(runTests(m))
}

// runChild is a scheduler process until SIGTERM or SIGKILL.
func runChild(conf string) int {
	var c childConfig
	if err := json.Unmarshal([]byte(conf), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 2
	}
	jobs, err := ParseJobs([]byte(c.Jobs))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s, err := recipe.Dial(ctx, c.Connect, recipe.Options{SessionTimeout: testSessionTimeout, Auth: coordtest.Auth, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	sc, err := New(s, Options{Jobs: jobs, Host: c.Host, LogDir: c.LogDir, Logger: log, Resync: time.Second, HTTPAllow: c.HTTPAllow})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	if err := sc.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func runTests(m *testing.M) int {
	var stop func()
	targets, stop = coordtest.Start("scheduler", testTick)
	defer stop()
	return m.Run()
}

// onEachTarget runs body as a subtest per server, with a connect string
// whose chroot is the test's own.
func onEachTarget(t *testing.T, body func(t *testing.T, connect string)) {
	t.Helper()
	coordtest.OnEach(t, targets, func(t *testing.T, tg *target) {
		body(t, tg.Addr+"/"+chrootName(t))
	})
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func chrootName(t *testing.T) string {
	return fmt.Sprintf("%s-%d", unsafeChars.ReplaceAllString(t.Name(), "_"), time.Now().UnixNano())
}

func dial(t *testing.T, connect string) *recipe.Session {
	t.Helper()
	return dialTimeout(t, connect, testSessionTimeout)
}

func dialTimeout(t *testing.T, connect string, sessionTimeout time.Duration) *recipe.Session {
	t.Helper()
	return dialWith(t, connect, recipe.Options{SessionTimeout: sessionTimeout, Auth: coordtest.Auth})
}

// dialWith opens a session with opts (and the test's logger), closed when
// the test ends.
func dialWith(t *testing.T, connect string, opts recipe.Options) *recipe.Session {
	t.Helper()
	return sessiontest.Dial(t, connect, opts)
}

// startScheduler runs a scheduler on its own session until the test ends
// or the returned stop is called.
func startScheduler(t *testing.T, connect string, opts Options, funcs map[string]JobFunc) (sc *Scheduler, stop func()) {
	t.Helper()
	return startSchedulerOn(t, dial(t, connect), opts, funcs)
}

// startSchedulerOn is startScheduler on a given session, which it closes.
func startSchedulerOn(t *testing.T, s *recipe.Session, opts Options, funcs map[string]JobFunc) (sc *Scheduler, stop func()) {
	t.Helper()
	if opts.LogDir == "" {
		opts.LogDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = coordtest.Logger(t)
	}
	opts.Resync = time.Second
	sc, err := New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	for n, f := range funcs {
		sc.RegisterFunc(n, f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("scheduler %s: Run: %v", opts.Host, err)
			}
			s.Close()
		})
	}
	t.Cleanup(stop)
	return sc, stop
}

// finished returns the job's runs that have a result.
func finished(t *testing.T, s *recipe.Session, job string) []RunInfo {
	t.Helper()
	runs, err := listRuns(context.Background(), s, job)
	if err != nil {
		t.Fatal(err)
	}
	var out []RunInfo
	for _, r := range runs {
		if r.Result != nil {
			out = append(out, r)
		}
	}
	return out
}

// lines reads a side-effect file: one line per effect.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
}

// trigger asks for a run now, as `shepherd ctl job run-now` does.
func trigger(t *testing.T, s *recipe.Session, job string) string {
	t.Helper()
	key, err := NewAdmin(s).Trigger(context.Background(), job, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// One run-key format for scheduled and manual runs (docs/scheduler.md).
	if !manualKey.MatchString(key) {
		t.Errorf("manual run key %q is not manual-<RunKeyLayout in UTC>", key)
	}
	return key
}

var manualKey = regexp.MustCompile(`^manual-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z$`)
