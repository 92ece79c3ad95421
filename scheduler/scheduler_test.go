package scheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// appendJob is a job whose command appends "<run key> <attempt>" to file,
// then runs shell.
func appendJob(name, schedule, file, shell string) Job {
	return Job{Name: name, Schedule: schedule, Command: "sh",
		Args: []string{"-c", `echo "$SHEPHERD_RUN_KEY $SHEPHERD_ATTEMPT" >> "$OUT"; ` + shell},
		Env:  map[string]string{"OUT": file}}
}

// TestExactlyOnceAcrossThreeSchedulers runs a job every second on three
// schedulers: every run that has a result ran exactly once.
func TestExactlyOnceAcrossThreeSchedulers(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		out := filepath.Join(t.TempDir(), "effects")
		job := appendJob("tick", "* * * * * *", out, "")
		var stops []func()
		for i := range 3 {
			_, stop := startScheduler(t, connect, Options{Jobs: []Job{job}, Host: fmt.Sprintf("s%d", i)}, nil)
			stops = append(stops, stop)
		}
		obs := dial(t, connect)
		coordtest.WaitFor(t, 30*time.Second, "condition", func() error {
			if n := len(finished(t, obs, "tick")); n < 5 {
				return fmt.Errorf("%d runs finished, want 5", n)
			}
			return nil
		})
		for _, stop := range stops {
			stop()
		}
		count := map[string]int{}
		for _, l := range lines(t, out) {
			key, _, _ := strings.Cut(l, "_")
			count[key]++
		}
		for key, n := range count {
			if n != 1 {
				t.Errorf("run %s executed %d times", key, n)
			}
		}
		for _, r := range finished(t, obs, "tick") {
			if r.Result.Status != Succeeded || count[r.RunKey] != 1 || r.Result.Attempt != 1 {
				t.Errorf("run %s: status %s attempt %d, executed %d times; want succeeded, attempt 1, once",
					r.RunKey, r.Result.Status, r.Result.Attempt, count[r.RunKey])
			}
		}
	})
}

// TestRetryResultDataAndSubscribe: a failed first attempt is retried; the
// result carries the attempt, the data the job wrote and reaches a
// subscriber of another scheduler.
func TestRetryResultDataAndSubscribe(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		out := filepath.Join(t.TempDir(), "effects")
		job := appendJob("flaky", "@yearly", out,
			`[ "$SHEPHERD_ATTEMPT" = 1 ] && { echo first fails; exit 3; }; echo '{"rows":42}' > "$SHEPHERD_RESULT_FILE"`)
		job.Retries, job.RetryBackoff = 2, Duration(50*time.Millisecond)
		scA, _ := startScheduler(t, connect, Options{Jobs: []Job{job}, Host: "a"}, nil)
		scB, _ := startScheduler(t, connect, Options{Jobs: []Job{job}, Host: "b"}, nil)
		subA, cancelA := scA.Subscribe(4)
		defer cancelA()
		subB, cancelB := scB.Subscribe(4)
		defer cancelB()
		key := trigger(t, dial(t, connect), "flaky")
		for _, sub := range []<-chan Result{subA, subB} {
			select {
			case r := <-sub:
				if r.RunKey != key || r.Status != Succeeded || r.Attempt != 2 || string(r.Data) != "{\"rows\":42}\n" {
					t.Errorf("result = %+v; want run %s succeeded at attempt 2 with data {\"rows\":42}", r, key)
				}
				if !strings.Contains(r.Output, "first fails") && r.Attempt == 2 {
					// The tail is the whole log: both attempts.
					logged, _ := os.ReadFile(r.LogFile)
					if !strings.Contains(string(logged), "first fails") {
						t.Errorf("log %s lacks the first attempt's output:\n%s", r.LogFile, logged)
					}
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no result within 20s")
			}
		}
		if got := lines(t, out); len(got) != 2 {
			t.Errorf("effects = %q, want attempts 1 and 2 once each", got)
		}
	})
}

// TestTimeoutKillsProcessTree: a timed-out command's background children
// die with it.
func TestTimeoutKillsProcessTree(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		job := Job{Name: "slow", Schedule: "@yearly", Command: "sh",
			Args:    []string{"-c", `sleep 60 & echo $! > "$PIDFILE"; wait`},
			Env:     map[string]string{"PIDFILE": pidFile},
			Timeout: Duration(500 * time.Millisecond)}
		sc, _ := startScheduler(t, connect, Options{Jobs: []Job{job}, Host: "a"}, nil)
		sub, cancel := sc.Subscribe(1)
		defer cancel()
		trigger(t, dial(t, connect), "slow")
		var r Result
		select {
		case r = <-sub:
		case <-time.After(20 * time.Second):
			t.Fatal("no result within 20s")
		}
		if r.Status != TimedOut {
			t.Fatalf("status %s (%s), want timeout", r.Status, r.Error)
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		coordtest.WaitFor(t, 5*time.Second, "condition", func() error {
			if err := syscall.Kill(pid, 0); err == nil {
				return fmt.Errorf("background child %d of the timed-out command is alive", pid)
			}
			return nil
		})
	})
}

// TestConcurrencyPolicies runs a 2.5s command every second.
func TestConcurrencyPolicies(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		for _, policy := range []Policy{Forbid, Allow, Replace} {
			t.Run(string(policy), func(t *testing.T) {
				t.Parallel()
				out := filepath.Join(t.TempDir(), "effects")
				job := appendJob("p", "* * * * * *", out, "sleep 2.5")
				job.ConcurrencyPolicy = policy
				_, stop := startScheduler(t, connect+"/"+string(policy), Options{Jobs: []Job{job}, Host: "a"}, nil)
				obs := dial(t, connect+"/"+string(policy))
				count := func(st Status) (n int, runs []RunInfo) {
					runs = finished(t, obs, "p")
					for _, r := range runs {
						if r.Result.Status == st {
							n++
						}
					}
					return n, runs
				}
				var want Status
				switch policy {
				case Forbid:
					want = Skipped
				case Allow:
					want = Succeeded
				case Replace:
					want = Replaced
				}
				coordtest.WaitFor(t, 20*time.Second, "condition", func() error {
					if n, _ := count(want); n < 2 {
						return fmt.Errorf("%d runs %s, want 2", n, want)
					}
					return nil
				})
				stop()
				_, runs := count(want)
				var overlaps int
				for i, a := range runs {
					for _, b := range runs[i+1:] {
						if a.Result.Status == Skipped || b.Result.Status == Skipped {
							continue
						}
						if a.Result.Start.Before(b.Result.End) && b.Result.Start.Before(a.Result.End) {
							overlaps++
						}
					}
				}
				switch policy {
				case Allow:
					if overlaps == 0 {
						t.Errorf("allow: no runs overlapped")
					}
				default:
					if overlaps != 0 {
						t.Errorf("%s: %d pairs of runs overlapped", policy, overlaps)
					}
				}
			})
		}
	})
}

// TestMissedRuns: all schedulers were down across scheduled times; the
// one starting back runs the latest missed run once if within the
// starting deadline and records the older ones (or all, outside) missed.
func TestMissedRuns(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		hour := time.Now().Truncate(time.Hour)
		tests := []struct {
			name     string
			deadline time.Duration
			ran      bool
		}{
			{"within", 90 * time.Minute, true},
			{"outside", time.Nanosecond, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				conn := connect + "/" + tt.name
				out := filepath.Join(t.TempDir(), "effects")
				job := appendJob("hourly", "0 * * * *", out, "")
				job.StartingDeadline = Duration(tt.deadline)
				p, _ := compile(job)
				s := dial(t, conn)
				sc, err := New(s, Options{})
				if err != nil {
					t.Fatal(err)
				}
				sc.writeMarker(context.Background(), "hourly", marker{LastScheduled: hour.Add(-3 * time.Hour)}, -1)
				for i := range 3 {
					startScheduler(t, conn, Options{Jobs: []Job{job}, Host: fmt.Sprintf("s%d", i)}, nil)
				}
				latest := p.RunKey(hour)
				coordtest.WaitFor(t, 20*time.Second, "condition", func() error {
					if n := len(finished(t, s, "hourly")); n < 3 {
						return fmt.Errorf("%d runs settled, want 3", n)
					}
					return nil
				})
				for _, r := range finished(t, s, "hourly") {
					want := Missed
					if r.RunKey == latest && tt.ran {
						want = Succeeded
					}
					if r.Result.Status != want {
						t.Errorf("run %s: %s (%s), want %s", r.RunKey, r.Result.Status, r.Result.Error, want)
					}
				}
				got := lines(t, out)
				if tt.ran && (len(got) != 1 || !strings.HasPrefix(got[0], latest+"_")) {
					t.Errorf("effects %q, want run %s once", got, latest)
				}
				if !tt.ran && len(got) != 0 {
					t.Errorf("effects %q, want none", got)
				}
			})
		}
	})
}
