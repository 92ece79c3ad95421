package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/sessiontest"
)

// BenchmarkDispatch measures dispatch latency: from the instant a run is
// due to the start of its process (the process stamps its own start with
// bash's $EPOCHREALTIME), for 1, 100 and 1,000 jobs due at the same
// second, and for one sharded run of 100 items, over three schedulers in
// this process, on shepherd coord and on Apache ZooKeeper 3.8 side by
// side. Reported: p50, p99 and max in ms. A run recorded missed fails the
// benchmark: its latency would be infinite.
//
//	SHEPHERD_IT=1 go test -run '^$' -bench BenchmarkDispatch -benchtime 1x ./scheduler/
func BenchmarkDispatch(b *testing.B) {
	for _, tg := range targets {
		for _, c := range []struct {
			name         string
			jobs, shards int
		}{{"jobs=1", 1, 0}, {"jobs=100", 100, 0}, {"jobs=1000", 1000, 0}, {"shards=100", 1, 100}} {
			b.Run(tg.Name+"/"+c.name, func(b *testing.B) {
				tg.Require(b)
				var all []time.Duration
				for range b.N {
					all = append(all, dispatchRound(b, tg, c.jobs, c.shards)...)
				}
				slices.Sort(all)
				q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / float64(time.Millisecond) }
				b.ReportMetric(q(0.5), "p50-ms")
				b.ReportMetric(q(0.99), "p99-ms")
				b.ReportMetric(q(1), "max-ms")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// dispatchRound runs jobs jobs (each of shards items if shards > 1), all
// due at one second, over three fresh schedulers, and returns each
// process's start latency.
func dispatchRound(b *testing.B, tg *coordtest.Target, jobs, shards int) []time.Duration {
	b.Helper()
	connect := tg.Chroot(b, "bench")
	out := b.TempDir()
	// Due a few seconds from now, once a year: every job's loop has
	// started by then (a run whose loop starts late would be missed,
	// which fails the round below).
	due := time.Now().UTC().Truncate(time.Second).Add(5 * time.Second)
	schedule := fmt.Sprintf("%d %d %d %d %d *", due.Second(), due.Minute(), due.Hour(), due.Day(), int(due.Month()))
	var js []Job
	for i := range jobs {
		js = append(js, Job{Name: fmt.Sprintf("j%04d", i), Schedule: schedule, Command: "bash", Shards: shards, HistoryLimit: 1,
			Args: []string{"-c", `printf %s "$EPOCHREALTIME" > "$OUT/$SHEPHERD_JOB-${SHEPHERD_SHARD:-x}"`},
			Env:  map[string]string{"OUT": out}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	var done []chan error
	for h := range 3 {
		s := sessiontest.Dial(b, connect, recipe.Options{SessionTimeout: 10 * time.Second, Auth: coordtest.Auth})
		sc, err := New(s, Options{Jobs: js, Host: fmt.Sprintf("s%d", h), LogDir: b.TempDir(), Resync: time.Minute, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		d := make(chan error, 1)
		go func() { d <- sc.Run(ctx) }()
		done = append(done, d)
	}
	defer func() {
		cancel()
		for _, d := range done {
			<-d
		}
	}()
	want := jobs * max(shards, 1)
	coordtest.WaitFor(b, 5*time.Minute, fmt.Sprintf("%d processes to start", want), func() error {
		ents, err := os.ReadDir(out)
		if err != nil {
			return err
		}
		if len(ents) < want {
			return fmt.Errorf("%d of %d", len(ents), want)
		}
		return nil
	})
	var lat []time.Duration
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(out, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		sec, frac, _ := strings.Cut(strings.TrimSpace(string(data)), ".")
		s, err1 := strconv.ParseInt(sec, 10, 64)
		us, err2 := strconv.ParseInt((frac + "000000")[:6], 10, 64)
		if err1 != nil || err2 != nil {
			b.Fatalf("%s: %q is no $EPOCHREALTIME", e.Name(), data)
		}
		started := time.Unix(s, us*1000)
		if started.Before(due) {
			b.Fatalf("%s started at %v, before it was due at %v", e.Name(), started, due)
		}
		lat = append(lat, started.Sub(due))
	}
	// Every run ran: none was missed (a late loop) or run twice.
	s := sessiontest.Dial(b, connect, recipe.Options{SessionTimeout: 10 * time.Second, Auth: coordtest.Auth})
	key := due.Format(time.DateOnly)
	for _, j := range js {
		coordtest.WaitFor(b, time.Minute, "result of "+j.Name, func() error {
			r, ok, err := readResult(ctx, s, j.Name, key)
			switch {
			case err != nil:
				return err
			case !ok:
				return fmt.Errorf("no result yet")
			case r.Status != Succeeded:
				b.Fatalf("%s %s: %s (%s)", j.Name, key, r.Status, r.Error)
			}
			return nil
		})
	}
	return lat
}
