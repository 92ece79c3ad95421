package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestFuncJobs runs jobs implemented in Go: the returned bytes are the
// result data, an error fails the run, a timeout ends ctx, an unknown
// function is a failed run naming it.
func TestFuncJobs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		jobs := []Job{
			{Name: "ok", Schedule: "@yearly", Func: "sum"},
			{Name: "bad", Schedule: "@yearly", Func: "fail"},
			{Name: "slow", Schedule: "@yearly", Func: "block", Timeout: Duration(200 * time.Millisecond)},
			{Name: "missing", Schedule: "@yearly", Func: "nobody"},
		}
		funcs := map[string]JobFunc{
			"sum": func(_ context.Context, run Run, log io.Writer) ([]byte, error) {
				fmt.Fprintln(log, "summing for", run.RunKey)
				return []byte("42"), nil
			},
			"fail": func(context.Context, Run, io.Writer) ([]byte, error) { return nil, errors.New("disk full") },
			"block": func(ctx context.Context, _ Run, _ io.Writer) ([]byte, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
		}
		reg := prometheus.NewRegistry()
		sc, _ := startScheduler(t, connect, Options{Jobs: jobs, Host: "a", Registerer: reg}, funcs)
		sub, cancel := sc.Subscribe(8)
		defer cancel()
		s := dial(t, connect)
		for _, j := range jobs {
			trigger(t, s, j.Name)
		}
		got := map[string]Result{}
		for len(got) < len(jobs) {
			select {
			case r := <-sub:
				got[r.Job] = r
			case <-time.After(20 * time.Second):
				t.Fatalf("results within 20s: %+v", got)
			}
		}
		tests := []struct {
			job    string
			status Status
			text   string // in Error, or in Data for ok
		}{
			{"ok", Succeeded, "42"},
			{"bad", Failed, "disk full"},
			{"slow", TimedOut, "timeout"},
			{"missing", Failed, `unknown job function: "nobody"`},
		}
		for _, tt := range tests {
			r := got[tt.job]
			text := r.Error
			if tt.status == Succeeded {
				text = string(r.Data)
				if !strings.Contains(r.Output, "summing for") {
					t.Errorf("%s: output %q, want the function's log", tt.job, r.Output)
				}
			}
			if r.Status != tt.status || !strings.Contains(text, tt.text) {
				t.Errorf("%s: status %s, error %q, data %q; want %s with %q", tt.job, r.Status, r.Error, r.Data, tt.status, tt.text)
			}
			if n := counter(t, reg, "shepherd_scheduler_results_total", tt.job, string(tt.status)); n != 1 {
				t.Errorf("%s: shepherd_scheduler_results_total{status=%q} = %v, want 1", tt.job, tt.status, n)
			}
			if n := counter(t, reg, "shepherd_scheduler_elections_total", tt.job, "won"); n != 1 {
				t.Errorf("%s: shepherd_scheduler_elections_total{outcome=won} = %v, want 1", tt.job, n)
			}
		}
	})
}

// counter is the value of the counter name whose label values are values,
// in label order; 0 if absent.
func counter(t *testing.T, reg *prometheus.Registry, name string, values ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i, lp := range m.GetLabel() {
				if i >= len(values) || lp.GetValue() != values[i] {
					continue metric
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
