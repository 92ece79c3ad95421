package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestLabelsAndSelectors: --labels and nodeSelector are checked, errors
// naming the label; a selector matches labels that have all its pairs.
func TestLabelsAndSelectors(t *testing.T) {
	got, err := ParseLabels([]string{"zone=eu-1,role=batch", "gpu=true"})
	if err != nil || !maps.Equal(got, map[string]string{"zone": "eu-1", "role": "batch", "gpu": "true"}) {
		t.Errorf("ParseLabels = %v, %v", got, err)
	}
	for _, tc := range []struct {
		items []string
		want  string
	}{
		{[]string{"role"}, `"role": want key=value`},
		{[]string{"a=1,a=2"}, "a given twice"},
		{[]string{"-x=1"}, `label "-x"`},
		{[]string{"k=a b"}, `label k="a b"`},
	} {
		if _, err := ParseLabels(tc.items); !errors.Is(err, ErrInvalidLabels) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseLabels(%q) = %v, want ErrInvalidLabels mentioning %q", tc.items, err, tc.want)
		}
	}
	for _, tc := range []struct {
		edit func(j *Job)
		want string
	}{
		{func(j *Job) { j.NodeSelector = map[string]string{"role": "batch"}; j.Routing = RouteSpread }, ""},
		{func(j *Job) { j.NodeSelector = map[string]string{"ro le": "batch"} }, `nodeSelector: label "ro le"`},
		{func(j *Job) { j.Routing = "random" }, `routing: "random": want any or spread`},
	} {
		j := Job{Name: "j", Schedule: "@daily", Command: "true"}
		tc.edit(&j)
		err := j.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && (!errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("Validate = %v, want %q", err, tc.want)
		}
	}
	labels := map[string]string{"role": "batch", "zone": "eu"}
	for sel, want := range map[string]bool{"": true, "role=batch": true, "role=batch,zone=eu": true, "role=web": false, "gpu=true": false} {
		s, _ := ParseLabels([]string{sel})
		if Matches(s, labels) != want {
			t.Errorf("Matches(%s) = %v, want %v", sel, !want, want)
		}
	}
	if _, err := New(nil, Options{Labels: map[string]string{"a": "b c"}}); !errors.Is(err, ErrInvalidLabels) {
		t.Errorf("New with bad labels: %v", err)
	}
}

// TestDecideTurn: a scheduler that ran one of the latest runs lets the
// others go first; with one scheduler, or when every other one ran more
// recently, it goes.
func TestDecideTurn(t *testing.T) {
	for _, tc := range []struct {
		self             string
		joined, expected []string
		recent           []string
		want             turn
	}{
		{"a", []string{"a"}, nil, []string{"a"}, turnMine},                             // alone
		{"a", []string{"a", "b"}, nil, nil, turnMine},                                  // no history
		{"a", []string{"a", "b"}, nil, []string{"a"}, turnWaitJoined},                  // b's turn, b is here
		{"b", []string{"a", "b"}, nil, []string{"a"}, turnMine},                        // b's turn
		{"a", []string{"a"}, []string{"a", "b"}, []string{"a"}, turnWaitExpected},      // b's turn, b not here yet
		{"a", []string{"a", "b", "c"}, nil, []string{"b", "a", "c"}, turnWaitJoined},   // c's turn
		{"c", []string{"a", "b", "c"}, nil, []string{"b", "a", "c"}, turnMine},         // c ran longest ago
		{"a", []string{"a", "b"}, nil, []string{"x", "a", "b"}, turnWaitJoined},        // x is gone: not counted
		{"a", []string{"a", "b"}, []string{"c"}, []string{"b", "c", "a"}, turnMine},    // a ran longest ago
		{"a", []string{"a", "b"}, []string{"c"}, []string{"a", "b"}, turnWaitExpected}, // c's turn, c not here yet
	} {
		if got := decideTurn(tc.self, tc.joined, tc.expected, tc.recent); got != tc.want {
			t.Errorf("decideTurn(%s, joined %v, expected %v, recent %v) = %v, want %v", tc.self, tc.joined, tc.expected, tc.recent, got, tc.want)
		}
	}
	if h := memberHost("web-1.example-7f3a"); h != "web-1.example" {
		t.Errorf("memberHost = %q", h)
	}
}

// TestNodeSelector: a job runs only on the schedulers whose labels match
// its nodeSelector; the others neither fire it nor answer its run-now;
// Admin says which schedulers fire it.
func TestNodeSelector(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		batch := Job{Name: "batch", Schedule: "@yearly", Command: "true", NodeSelector: map[string]string{"role": "batch"}}
		gpu := Job{Name: "gpu", Schedule: "@yearly", Command: "true", NodeSelector: map[string]string{"gpu": "true"}}
		jobs := []Job{batch, gpu}
		web, _ := startScheduler(t, connect, Options{Jobs: jobs, Host: "web", Labels: map[string]string{"role": "web"}}, nil)
		startScheduler(t, connect, Options{Jobs: jobs, Host: "b1", Labels: map[string]string{"role": "batch", "zone": "eu"}}, nil)
		startScheduler(t, connect, Options{Jobs: jobs, Host: "b2", Labels: map[string]string{"role": "batch"}}, nil)
		obs := dial(t, connect)
		a := NewAdmin(obs)
		coordtest.WaitFor(t, 30*time.Second, "three schedulers published", func() error {
			js, err := a.Job(context.Background(), "batch", 1)
			if err != nil || !slices.Equal(js.FiredBy, []string{"b1", "b2"}) {
				return fmt.Errorf("batch fired by %v (%v), want b1, b2", js.FiredBy, err)
			}
			return nil
		})
		for i := range 4 {
			key := fmt.Sprintf("2030-01-%02d", i+1)
			triggerKey(t, obs, "batch", key)
			if r := awaitResult(t, obs, "batch", key); r.Status != Succeeded || (r.Host != "b1" && r.Host != "b2") {
				t.Errorf("run %s: %+v, want it run by b1 or b2", key, r)
			}
		}
		// web never stood for a run of batch.
		if n := counterSum(t, web.metrics.elections); n != 0 {
			t.Errorf("web stood in %v elections, want none", n)
		}
		if js, err := a.Job(context.Background(), "gpu", 1); err != nil || len(js.FiredBy) != 0 {
			t.Errorf("gpu fired by %v (%v), want nobody", js.FiredBy, err)
		}
	})
}

// withSpreadWait sets how long a scheduler waits for its turn, for the
// test: long, so that the test's order does not hang on it.
func withSpreadWait(t *testing.T, d time.Duration) {
	old := spreadWait
	spreadWait = d
	t.Cleanup(func() { spreadWait = old })
}

// TestRoutingSpread: the runs of a job with routing spread go round the
// three schedulers that fire it: any three runs in a row ran on three
// different schedulers.
func TestRoutingSpread(t *testing.T) {
	withSpreadWait(t, 10*time.Minute)
	onEachTarget(t, func(t *testing.T, connect string) {
		job := Job{Name: "rr", Schedule: "@yearly", Command: "true", Routing: RouteSpread}
		for _, h := range []string{"a", "b", "c"} {
			startScheduler(t, connect, Options{Jobs: []Job{job}, Host: h}, nil)
		}
		obs := dial(t, connect)
		coordtest.WaitFor(t, 30*time.Second, "three schedulers published", func() error {
			if in, err := NewAdmin(obs).Schedulers(context.Background()); err != nil || len(in) != 3 {
				return fmt.Errorf("schedulers %v (%v)", in, err)
			}
			return nil
		})
		var hosts []string
		for i := range 7 {
			key, err := NewAdmin(obs).TriggerRun(context.Background(), "rr", time.Now(), RunRequest{RunKey: fmt.Sprintf("2030-01-%02d", i+1)})
			if err != nil {
				t.Fatal(err)
			}
			r := awaitResult(t, obs, "rr", key)
			hosts = append(hosts, r.Host)
		}
		for i := 2; i < len(hosts); i++ {
			w := slices.Sorted(slices.Values(hosts[i-2 : i+1]))
			if len(slices.Compact(w)) != 3 {
				t.Fatalf("masters %v: runs %d-%d are not on three schedulers", hosts, i-1, i+1)
			}
		}
	})
}

// counterSum is the sum of a counter vector's counters.
func counterSum(t *testing.T, c *prometheus.CounterVec) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	sum := 0.0
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		sum += pb.GetCounter().GetValue()
	}
	return sum
}
