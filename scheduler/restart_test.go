package scheduler

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestRunSurvivesServerRestart restarts the coordination server while a
// master runs a job: back within the session timeout, the run completes
// once, at attempt 1, and nobody else runs it. How long the server takes
// to come back is the machine's (a JVM restart has taken 84 s next to a
// CPU hog and heavy fsyncs): when a scheduler's session did not survive
// it, the run is done again, once per attempt, never twice at a time.
func TestRunSurvivesServerRestart(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.Name, func(t *testing.T) {
			tg.Require(t)
			srv := coordtest.StartRestartable(t, tg.Name, 500*time.Millisecond)
			out := filepath.Join(t.TempDir(), "effects")
			job := appendJob("batch", "@yearly", out, "sleep 2")
			var sessions []*recipe.Session
			for _, h := range []string{"a", "b"} {
				ss := dialTimeout(t, srv.Addr, restartSessionTimeout)
				sessions = append(sessions, ss)
				startSchedulerOn(t, ss, Options{Jobs: []Job{job}, Host: h}, nil)
			}
			ids := []int64{sessions[0].ID(), sessions[1].ID()}
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
			survived := sessions[0].ID() == ids[0] && sessions[1].ID() == ids[1]
			var want []string
			for a := 1; a <= r.Attempt; a++ {
				want = append(want, fmt.Sprintf("%s_%d", key, a))
			}
			switch got := lines(t, out); {
			case survived && (r.Status != Succeeded || r.Attempt != 1 || len(got) != 1):
				t.Errorf("result %+v, effects %q; want succeeded at attempt 1, one run: the sessions survived the restart", r, got)
			case !survived && (r.Status != Succeeded || r.Attempt > 2 || !slices.Equal(got, want)):
				t.Errorf("result %+v, effects %q; want succeeded, each attempt once (%q): a session was lost over the restart", r, got, want)
			case !survived:
				t.Logf("the server came back after a session timeout (%v): the run was done again at attempt %d", restartSessionTimeout, r.Attempt)
			}
		})
	}
}

// restartSessionTimeout: see coordtest.RestartSessionTimeout.
const restartSessionTimeout = coordtest.RestartSessionTimeout
