package monitor

import (
	"fmt"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/core"
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
