package scheduler

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestRunSurvivesServerRestart restarts the coordination server while a
// master runs a job: back within the session timeout, the run completes
// once, at attempt 1, and nobody else runs it.
func TestRunSurvivesServerRestart(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.Name, func(t *testing.T) {
			tg.Require(t)
			srv := coordtest.StartRestartable(t, tg.Name, 500*time.Millisecond)
			out := filepath.Join(t.TempDir(), "effects")
			job := appendJob("batch", "@yearly", out, "sleep 2")
			for _, h := range []string{"a", "b"} {
				startSchedulerOn(t, dialTimeout(t, srv.Addr, restartSessionTimeout), Options{Jobs: []Job{job}, Host: h}, nil)
			}
			s := dialTimeout(t, srv.Addr, restartSessionTimeout)
			key := trigger(t, s, "batch")
			coordtest.WaitFor(t, 20*time.Second, "condition", func() error {
				if len(lines(t, out)) == 0 {
					return fmt.Errorf("the run has not started")
				}
				return nil
			})
			srv.Restart(t)
			var r Result
			coordtest.WaitFor(t, 2*restartSessionTimeout, "condition", func() error {
				got, ok, err := readResult(context.Background(), s, "batch", key)
				if !ok {
					return fmt.Errorf("no result (%v)", err)
				}
				r = got
				return nil
			})
			if r.Status != Succeeded || r.Attempt != 1 {
				t.Errorf("result %+v, want succeeded at attempt 1", r)
			}
			if got := lines(t, out); len(got) != 1 {
				t.Errorf("effects %q, want one run", got)
			}
		})
	}
}

// restartSessionTimeout: see coordtest.RestartSessionTimeout.
const restartSessionTimeout = coordtest.RestartSessionTimeout
