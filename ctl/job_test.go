package ctl

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// TestJobVerbs walks a job through add, list, show, pause, resume,
// run-now (answered by a scheduler), logs and rm.
func TestJobVerbs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		out := filepath.Join(t.TempDir(), "effects")
		mustCtlAuth(t, conn, "job", "add", "--schedule", "@yearly", "--timeout", "1m", "--env", "OUT="+out,
			"report", "--", "sh", "-c", `echo "ran $SHEPHERD_RUN_KEY" | tee -a "$OUT"`)

		var list []jobSummary
		if err := json.Unmarshal([]byte(mustCtlAuth(t, conn, "--json", "job", "list")), &list); err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Name != "report" || list[0].Schedule != "@yearly" || list[0].Paused {
			t.Fatalf("job list = %+v, want report, @yearly, not paused", list)
		}
		mustCtlAuth(t, conn, "job", "pause", "report")
		if got := mustCtlAuth(t, conn, "job", "list"); !strings.Contains(got, "report") || !strings.Contains(got, "true") {
			t.Fatalf("job list after pause:\n%s\nwant report paused", got)
		}
		mustCtlAuth(t, conn, "job", "resume", "report")
		if got := mustCtlAuth(t, conn, "job", "show", "report"); !strings.Contains(got, `"schedule": "@yearly"`) || !strings.Contains(got, "paused: false") {
			t.Fatalf("job show:\n%s\nwant the spec, not paused", got)
		}

		startScheduler(t, conn)
		r := runCtlAuth(t, conn, "job", "run-now", "--wait", "30s", "report")
		if r.code != 0 || !strings.Contains(r.stdout, "succeeded attempt 1") {
			t.Fatalf("job run-now --wait: %v", r)
		}
		key := strings.Fields(r.stdout)[0]
		if got := mustCtlAuth(t, conn, "job", "logs", "report", key); !strings.Contains(got, "ran "+key) {
			t.Fatalf("job logs:\n%s\nwant the command's output", got)
		}
		if got := mustCtlAuth(t, conn, "job", "show", "report"); !strings.Contains(got, key) || !strings.Contains(got, "succeeded") {
			t.Fatalf("job show:\n%s\nwant run %s succeeded", got, key)
		}
		mustCtlAuth(t, conn, "job", "rm", "report")
		if r := runCtlAuth(t, conn, "job", "rm", "report"); r.code != ExitFailure || !strings.Contains(r.stderr, "no such job") {
			t.Fatalf("second job rm: %v; want exit 1, no such job", r)
		}
	})
}

// TestJobAddRejectsBadSpecs: bad cron expressions and specs are usage
// errors naming the field, and nothing is stored.
func TestJobAddRejectsBadSpecs(t *testing.T) {
	onEachTarget(t, func(t *testing.T, tg *target) {
		conn := chrootOf(t, tg)
		bad := filepath.Join(t.TempDir(), "jobs.yaml")
		if err := os.WriteFile(bad, []byte("jobs:\n- {name: x, schedule: '* * *', command: 'true'}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			args []string
			code int
			want string
		}{
			{[]string{"job", "add", "--schedule", "61 * * * *", "j", "--", "true"}, ExitUsage, "schedule"},
			{[]string{"job", "add", "--schedule", "@daily", "--time-zone", "Nowhere/Land", "j", "--", "true"}, ExitUsage, "timeZone"},
			{[]string{"job", "add", "--schedule", "@daily", "--concurrency-policy", "queue", "j", "--", "true"}, ExitUsage, "concurrencyPolicy"},
			{[]string{"job", "add", "--schedule", "@daily", "j"}, ExitUsage, "want a name and a command"},
			{[]string{"job", "add", "--file", bad}, ExitFailure, `job "x": schedule`},
			{[]string{"job", "frob"}, ExitUsage, "unknown verb"},
		}
		for _, tt := range tests {
			r := runCtlAuth(t, conn, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("ctl %s: %v\nwant exit %d mentioning %q", strings.Join(tt.args, " "), r, tt.code, tt.want)
			}
		}
		if got := mustCtlAuth(t, conn, "--json", "job", "list"); strings.TrimSpace(got) != "[]" {
			t.Errorf("job list after rejected adds = %s, want []", got)
		}
	})
}

// startScheduler runs a scheduler on conn until the test ends.
func startScheduler(t *testing.T, conn string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := recipe.Dial(ctx, conn, recipe.Options{SessionTimeout: 2 * time.Second, Auth: coordtest.Auth, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scheduler.New(s, scheduler.Options{Host: "test", LogDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), Resync: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("scheduler: %v", err)
		}
		s.Close()
	})
}
