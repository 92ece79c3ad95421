package monitor

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// BenchmarkEvaluate1000Tasks is one evaluation's pure work — Observe,
// every rule, Step — over 1,000 tasks (a tenth of them behind their
// source), 200 jobs and 100 collectors.
func BenchmarkEvaluate1000Tasks(b *testing.B) {
	snap := &cluster.Snapshot{}
	sources := map[string]SourceReading{}
	for i := range 1000 {
		ts := withCommit(task(fmt.Sprintf("t%04d", i), core.StateRunning, core.StateStandby), pos("mysql-bin.000007", 1000), t0)
		ts.Instances[0].State.Position = pos("mysql-bin.000007", 1000)
		snap.Tasks = append(snap.Tasks, ts)
		size := uint64(1000)
		if i%10 == 0 {
			size = 5000
		}
		sources[ts.Name] = reading(7*24*time.Hour, bl("mysql-bin.000005", 1<<30), bl("mysql-bin.000006", 1<<30), bl("mysql-bin.000007", size))
	}
	for i := range 200 {
		name := fmt.Sprintf("j%03d", i)
		snap.Jobs = append(snap.Jobs, scheduler.JobStatus{Name: name, Runs: []scheduler.RunInfo{
			run(name, "2026-11-25", scheduler.Succeeded, t0), run(name, "2026-11-24", scheduler.Failed, t0.Add(-24*time.Hour))}})
	}
	for i := range 100 {
		snap.Collectors = append(snap.Collectors, collector.CollectorInfo{Name: fmt.Sprintf("c%03d", i), Alive: true})
	}
	th := DefaultThresholds()
	var h History
	var alerts map[string]*Alert
	b.ResetTimer()
	for i := range b.N {
		now := t0.Add(time.Duration(i) * 15 * time.Second)
		h = Observe(h, snap, sources, now)
		in := &Input{Now: now, Snap: snap, Sources: sources, History: h}
		var fs []Finding
		for _, r := range Rules() {
			fs = append(fs, r.Eval(in, &th)...)
		}
		alerts, _ = Step(alerts, fs, nil, 0, noSilence, now)
	}
}

// BenchmarkReadSourcesWithHangingSources is the source-reading part of
// an evaluation at scale, the real reader against real servers: 3,000
// running tasks on 300 sources (10 tasks each), of which 270 are
// accounts of one MariaDB and 30 (10%) hang — listeners that accept and
// never answer. It reports the first evaluation's readings (every
// hanging source costs its timeout) and the next one's (the hanging
// ones in backoff), against the default 15 s interval.
func BenchmarkReadSourcesWithHangingSources(b *testing.B) {
	for _, hanging := range []int{0, 30} {
		b.Run(fmt.Sprintf("hanging=%d", hanging), func(b *testing.B) { benchReadSources(b, hanging) })
	}
}

func benchReadSources(b *testing.B, hanging int) {
	why, ok := testpeer.MariaDBAvailable()
	if !ok {
		b.Fatalf("MariaDB: %s", why)
	}
	tg := targets[0]
	if tg.Addr == "" {
		b.Fatal("no coordination server")
	}
	const sources, perSource = 300, 10
	db := testpeer.StartMariaDB(b, testpeer.MariaDBOptions{})
	var hangs []int
	for range hanging {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ln.Close() })
		go func() { // accept and hold: the MySQL handshake never comes
			var held []net.Conn
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				held = append(held, c)
			}
		}()
		hangs = append(hangs, ln.Addr().(*net.TCPAddr).Port)
	}
	for i := range sources - hanging {
		db.Exec(b, fmt.Sprintf("CREATE USER u%d@'%%'", i), fmt.Sprintf("GRANT REPLICATION CLIENT ON *.* TO u%d@'%%'", i))
	}
	ctx := context.Background()
	s, err := recipe.Dial(ctx, tg.Addr+"/"+fmt.Sprintf("bench-%d", time.Now().UnixNano()), recipe.Options{Auth: coordtest.Auth, SessionTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	admin := core.NewAdmin(s, "")
	snap := &cluster.Snapshot{}
	for i := range sources * perSource {
		src := core.Endpoint{Host: db.Host(), Port: db.Port(), User: fmt.Sprintf("u%d", i/perSource), Flavor: core.FlavorMariaDB}
		if k := i / perSource; k >= sources-hanging {
			src = core.Endpoint{Host: "127.0.0.1", Port: hangs[k-(sources-hanging)], User: "u", Flavor: core.FlavorMariaDB}
		}
		sp := &core.Spec{Name: fmt.Sprintf("t%04d", i), Version: core.SpecVersion, State: core.DesiredRunning, Start: core.StartCurrent,
			Source: core.SourceEndpoint{Endpoint: src}, Target: core.TargetEndpoint{Endpoint: core.Endpoint{Host: "127.0.0.1", Port: 2, User: "u", Flavor: core.FlavorMariaDB}},
			Standby: core.Standby{Mode: core.ModeHot}}
		if err := admin.AddTask(ctx, sp, false); err != nil {
			b.Fatal(err)
		}
		snap.Tasks = append(snap.Tasks, core.TaskStatus{Name: sp.Name, Spec: sp.Redacted()})
	}
	cfg := DefaultConfig()
	b.ResetTimer()
	for range b.N {
		m, err := New(cfg, Deps{Session: s, Feed: cluster.NewFixed(snap), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		began := time.Now()
		first, _ := m.readSources(ctx, snap, now)
		firstTook := time.Since(began)
		began = time.Now()
		next, _ := m.readSources(ctx, snap, now.Add(cfg.Interval))
		nextTook := time.Since(began)
		count := func(rs map[string]SourceReading) (ok, budget int) {
			for _, r := range rs {
				switch r.Err {
				case "":
					ok++
				case errBudgetSpent.Error():
					budget++
				}
			}
			return ok, budget
		}
		ok1, budget1 := count(first)
		ok2, budget2 := count(next)
		b.ReportMetric(firstTook.Seconds(), "first_s")
		b.ReportMetric(nextTook.Seconds(), "next_s")
		b.ReportMetric(cfg.Interval.Seconds(), "interval_s")
		b.Logf("first evaluation: %v, %d of %d tasks read, %d not read (budget); next: %v, %d read, %d not read",
			firstTook.Round(time.Millisecond), ok1, len(snap.Tasks), budget1, nextTook.Round(time.Millisecond), ok2, budget2)
	}
}
