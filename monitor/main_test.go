package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// The integration tests run against both coordination servers (shepherd
// coord in process, Apache ZooKeeper 3.8 as a child JVM) with a short
// tick, so that a dead monitor's session ends in about a second.
const testTick = 100 * time.Millisecond

const testSessionTimeout = time.Second

var targets []*coordtest.Target

func TestMain(m *testing.M) {
	if c := os.Getenv(childEnv); c != "" {
		os.Exit(runChild(c))
	}
	os.Exit(coordtest.Run(m, "monitor", testTick, &targets))
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// onEachTarget runs body per server with a connect string whose chroot
// is the test's own.
func onEachTarget(t *testing.T, body func(t *testing.T, connect string)) {
	t.Helper()
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		body(t, tg.Addr+"/"+fmt.Sprintf("%s-%d", unsafeChars.ReplaceAllString(t.Name(), "_"), time.Now().UnixNano()))
	})
}

func dial(t *testing.T, connect string, opts recipe.Options) *recipe.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts.Logger = coordtest.Logger(t)
	if opts.SessionTimeout == 0 {
		opts.SessionTimeout = testSessionTimeout
	}
	s, err := recipe.Dial(ctx, connect, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// receiver is a webhook receiver recording every notification.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	notes []Notification
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		data, _ := io.ReadAll(req.Body)
		var b struct {
			Version int `json:"version"`
			Batch
		}
		if err := json.Unmarshal(data, &b); err != nil || b.Version != WebhookVersion {
			t.Errorf("webhook body %q: %v", data, err)
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.notes = append(r.notes, b.Notifications...)
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

// count returns how many notifications of rule with status arrived.
func (r *receiver) count(rule, status string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.notes {
		if x.Rule == rule && x.Status == status {
			n++
		}
	}
	return n
}

func (r *receiver) all() []Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Notification(nil), r.notes...)
}

// waitCount waits until exactly want notifications of rule and status
// arrived, failing at once on more.
func (r *receiver) waitCount(t *testing.T, rule, status string, want int) {
	t.Helper()
	coordtest.WaitFor(t, 20*time.Second, fmt.Sprintf("%d %s %s", want, status, rule), func() error {
		got := r.count(rule, status)
		if got > want {
			t.Fatalf("%d %s %s notifications, want %d: %+v", got, status, rule, want, r.all())
		}
		if got < want {
			return fmt.Errorf("%d so far", got)
		}
		return nil
	})
}

// startMonitor runs a monitor until the test ends or stop is called.
func startMonitor(t *testing.T, s *recipe.Session, feed cluster.Feed, cfg Config, deps Deps) (m *Monitor, stop func()) {
	t.Helper()
	return startMonitorWith(t, s, feed, cfg, deps, nil)
}

// startMonitorWith is startMonitor with setup, if not nil, applied to the
// monitor before it runs.
func startMonitorWith(t *testing.T, s *recipe.Session, feed cluster.Feed, cfg Config, deps Deps, setup func(*Monitor)) (m *Monitor, stop func()) {
	t.Helper()
	deps.Session, deps.Feed, deps.Logger = s, feed, coordtest.Logger(t)
	m, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(m)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := m.Run(ctx); err != nil {
			t.Errorf("monitor run: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return m, stop
}

// evaluations reads the monitor's evaluation counter.
func evaluations(m *Monitor) int {
	ch := make(chan int, 1)
	mf, err := m.metrics.reg.Gather()
	if err != nil {
		return -1
	}
	for _, f := range mf {
		if f.GetName() == "shepherd_monitor_evaluations_total" {
			ch <- int(f.GetMetric()[0].GetCounter().GetValue())
		}
	}
	select {
	case n := <-ch:
		return n
	default:
		return 0
	}
}

// waitEvaluations waits until m has evaluated n more times.
func waitEvaluations(t *testing.T, m *Monitor, n int) {
	t.Helper()
	start := evaluations(m)
	coordtest.WaitFor(t, 20*time.Second, fmt.Sprintf("%d evaluations", n), func() error {
		if got := evaluations(m) - start; got < n {
			return fmt.Errorf("%d so far", got)
		}
		return nil
	})
}

// testWriter sends a child process's output to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
