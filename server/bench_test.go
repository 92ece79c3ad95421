package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// BenchmarkConsole measures the console on a cluster of 1,000 tasks
// (stored, so the task routes read their spec version), 100 jobs with 20
// runs each and 50 collectors served by a cluster.Fixed: p99 latency of
// the task list (API), a task page (HTML) and a task (API), the time for
// a new snapshot to reach 100 event streams; and the memory of a console
// running as a process of its own on the same stored tasks and jobs,
// read through cluster.Poller, under 100 streams and page requests. GET /health in
// the same run is the anchor: the cost of a request through the same
// server, network and client with no work behind it.
//
//	go test -run '^$' -bench BenchmarkConsole -benchtime 1x ./server/
func BenchmarkConsole(b *testing.B) {
	tg := targets[0]
	tg.Require(b)
	for range b.N {
		benchConsole(b)
	}
}

func benchConsole(b *testing.B) {
	const tasks, jobs, collectors, requests, streams, rounds = 1000, 100, 50, 400, 100, 20
	c := startConsole(b, targets[0], nil)
	ctx := context.Background()
	snap := &cluster.Snapshot{ReadAt: time.Now().UTC()}
	now := time.Now().UTC()
	for i := range tasks {
		sp := mustSpec(b, strings.Replace(specJSON, `"orders"`, fmt.Sprintf(`"task-%04d"`, i), 1))
		if err := c.admin.AddTask(ctx, sp, false); err != nil {
			b.Fatal(err)
		}
		st := core.InstanceState{Version: 1, State: core.StateRunning, Host: "core-1", Epoch: int64(i), Position: core.Position{File: "mysql-bin.000003", Pos: 1234}, LagSeconds: 0.4, Since: now, Updated: now}
		snap.Tasks = append(snap.Tasks, core.TaskStatus{Name: sp.Name, Spec: sp,
			LastCommit: &core.LastCommit{Version: 1, File: "mysql-bin.000003", Pos: 1200, Time: now, Owner: "core-1-0000000001", Epoch: int64(i)},
			Instances:  []core.Instance{{Name: "core-1-0000000001", State: st}, {Name: "core-2-0000000002", State: core.InstanceState{State: core.StateStandby}}}})
	}
	for i := range jobs {
		js := scheduler.JobStatus{Name: fmt.Sprintf("job-%03d", i), Job: scheduler.Job{Name: fmt.Sprintf("job-%03d", i), Schedule: "@hourly", Command: "/bin/true"}, Stored: true}
		for r := range 20 {
			key := now.Add(-time.Duration(r) * time.Hour).Format("2006-01-02T15")
			js.Runs = append(js.Runs, scheduler.RunInfo{Job: js.Name, RunKey: key, Result: &scheduler.Result{Job: js.Name, RunKey: key, Status: scheduler.Succeeded, Start: now, End: now, Output: "ok"}})
		}
		snap.Jobs = append(snap.Jobs, js)
	}
	for i := range collectors {
		snap.Collectors = append(snap.Collectors, collector.CollectorInfo{Name: fmt.Sprintf("collector-%02d", i), Alive: true, Sources: []string{fmt.Sprintf("file:///var/log/app%02d/*.log", i)}, Lines: int64(i) * 1000})
	}
	c.feed.Set(snap)
	viewer := c.as("viewer")

	measure := func(path string) (p50, p99 time.Duration) {
		lat := make([]time.Duration, 0, requests)
		for i := range requests {
			p := strings.ReplaceAll(path, "NNNN", fmt.Sprintf("%04d", i%tasks))
			start := time.Now()
			st, body := viewer.do("GET", p, nil, nil)
			lat = append(lat, time.Since(start))
			if st != http.StatusOK {
				b.Fatalf("GET %s: %d %.200s", p, st, body)
			}
		}
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	_, healthP99 := measure("/health")
	listP50, listP99 := measure("/api/v1/tasks")
	_, pageP99 := measure("/tasks/task-NNNN")
	_, taskP99 := measure("/api/v1/tasks/task-NNNN")
	_, jobsP99 := measure("/api/v1/jobs")

	// Event fan-out: every stream must see each new snapshot.
	var wg sync.WaitGroup
	got := make([]chan time.Time, streams)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range streams {
		got[i] = make(chan time.Time, rounds+2)
		req, _ := http.NewRequestWithContext(sctx, "GET", c.http.URL+"/api/v1/events", nil)
		res, err := viewer.hc.Do(req)
		if err != nil || res.StatusCode != 200 {
			b.Fatalf("stream %d: %v %v", i, res, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(make([]byte, 1<<20), 4<<20)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					got[i] <- time.Now()
				}
			}
		}()
		<-got[i] // the current snapshot, at once
	}
	var fan []time.Duration
	for r := range rounds {
		next := *snap
		next.ReadAt = time.Now().UTC().Add(time.Duration(r) * time.Millisecond)
		start := time.Now()
		c.feed.Set(&next)
		var last time.Time
		for i := range streams {
			select {
			case at := <-got[i]:
				if at.After(last) {
					last = at
				}
			case <-time.After(30 * time.Second):
				b.Fatalf("stream %d missed snapshot %d", i, r)
			}
		}
		fan = append(fan, last.Sub(start))
	}
	cancel()
	c.http.CloseClientConnections()
	wg.Wait()
	slices.Sort(fan)

	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(ms(healthP99), "health_p99_ms")
	b.ReportMetric(ms(listP50), "list_p50_ms")
	b.ReportMetric(ms(listP99), "list_p99_ms")
	b.ReportMetric(ms(pageP99), "task_page_p99_ms")
	b.ReportMetric(ms(taskP99), "task_api_p99_ms")
	b.ReportMetric(ms(jobsP99), "jobs_p99_ms")
	b.ReportMetric(ms(fan[len(fan)*99/100]), "sse_fanout100_p99_ms")
	b.ReportMetric(float64(m.HeapInuse+m.StackInuse)/(1<<20), "go_heap_stack_MB")
	rss, hwm := childMemory(b, c, requests, streams)
	b.ReportMetric(rss, "console_rss_MB")
	b.ReportMetric(hwm, "console_peak_rss_MB")
	b.Logf("list p99 %.1fms = %.1fx the /health anchor (%.2fms); task page p99 %.1fms; SSE fan-out to %d streams p99 %.1fms; a console process alone: RSS %.0f MB, peak %.0f MB",
		ms(listP99), ms(listP99)/ms(healthP99), ms(healthP99), ms(pageP99), streams, ms(fan[len(fan)*99/100]), rss, hwm)
}

// childMemory runs a console as a process of its own on the same cluster
// (read through the real cluster.Poller: the stored tasks and jobs),
// loads it with list requests and event streams, and returns its RSS
// and peak RSS.
func childMemory(b *testing.B, c *console, requests, streams int) (rss, hwm float64) {
	for i := range 100 {
		if err := scheduler.NewAdmin(c.session).StoreJob(context.Background(), scheduler.Job{Name: fmt.Sprintf("job-%03d", i), Schedule: "@hourly", Command: "/bin/true"}); err != nil {
			b.Fatal(err)
		}
	}
	base, pid := startChild(b, c.connect)
	child := &console{t: b, http: &httptest.Server{URL: base}}
	viewer := child.as("viewer")
	coordtest.WaitFor(b, 60*time.Second, "the child console to read 1,000 tasks", func() error {
		st, body := viewer.do("GET", "/api/v1/tasks", nil, nil)
		if st != 200 || !strings.Contains(body, "task-0999") {
			return fmt.Errorf("status %d, %d bytes without task-0999", st, len(body))
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range streams {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/events", nil)
		res, err := viewer.hc.Do(req)
		if err != nil || res.StatusCode != 200 {
			b.Fatalf("child stream: %v %v", res, err)
		}
		go func() {
			defer res.Body.Close()
			_, _ = io.Copy(io.Discard, res.Body)
		}()
	}
	for i := range requests {
		if st, _ := viewer.do("GET", fmt.Sprintf("/tasks/task-%04d", i), nil, nil); st != 200 {
			b.Fatalf("child task page: %d", st)
		}
		if i%10 == 0 {
			viewer.do("GET", "/api/v1/tasks", nil, nil)
		}
	}
	return procStatusMB(pid, "VmRSS"), procStatusMB(pid, "VmHWM")
}
