package monitor

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/dns"
	"github.com/shepherd-dev/shepherd/replication"
	"github.com/shepherd-dev/shepherd/scheduler"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func pos(file string, p uint32) core.Position { return core.Position{File: file, Pos: p} }

// task builds a task desired running with the given instance states
// (first owns it).
func task(name string, states ...string) core.TaskStatus {
	ts := core.TaskStatus{Name: name, Spec: &core.Spec{Name: name, State: core.DesiredRunning, Standby: core.Standby{Mode: core.ModeHot}}}
	for i, st := range states {
		ts.Instances = append(ts.Instances, core.Instance{Name: "h" + string(rune('a'+i)) + "-000000000" + string(rune('0'+i)), State: core.InstanceState{State: st}})
	}
	return ts
}

// withFollowed sets the history the target followed in ts's lastCommit.
func withFollowed(ts core.TaskStatus, followed string) core.TaskStatus {
	lc := *ts.LastCommit
	lc.Followed = followed
	ts.LastCommit = &lc
	return ts
}

// withVerify gives the task a last verify report with n confirmed
// differences.
func withVerify(ts core.TaskStatus, n int) core.TaskStatus {
	rep := core.VerifyReport{Task: ts.Name, Finished: t0, Chunks: 4, Differences: n}
	if n > 0 {
		rep.Tables = []core.TableVerify{{DB: "shop", Table: "item", Keyed: true, Diffs: []core.ChunkDiff{{Missing: make([][]string, n)}}}}
	}
	ts.Verify = &rep
	return ts
}

func withCommit(ts core.TaskStatus, p core.Position, at time.Time) core.TaskStatus {
	ts.LastCommit = &core.LastCommit{File: p.File, Pos: p.Pos, GTID: p.GTID, Server: p.Server, Time: at}
	return ts
}

// gpos is a position of server mariadb:1 with a GTID state.
func gpos(file string, p uint32, gtid string) core.Position {
	return core.Position{File: file, Pos: p, GTID: gtid, Server: "mariadb:1"}
}

// withFailover gives the task source candidates.
func withFailover(ts core.TaskStatus) core.TaskStatus {
	ts.Spec.Source = core.SourceEndpoint{Endpoint: core.Endpoint{Host: "p", Port: 3306, Flavor: core.FlavorMariaDB},
		Hosts: []string{"r1:3306", "r2:3306", "r3:3306"}}
	return ts
}

func reading(expire time.Duration, logs ...BinlogFile) SourceReading {
	return SourceReading{Addr: "127.0.0.1:3306", Logs: logs, ExpireSeconds: int64(expire / time.Second)}
}

func bl(name string, size uint64) BinlogFile { return BinlogFile{Name: name, Size: size} }

func run(job, key string, status scheduler.Status, end time.Time) scheduler.RunInfo {
	r := scheduler.RunInfo{Job: job, RunKey: key}
	if status == "" {
		r.Running = true
		return r
	}
	r.Result = &scheduler.Result{Job: job, RunKey: key, Status: status, End: end, Scheduled: end}
	return r
}

// waiting is r with its master waiting for upstream runs.
func waiting(r scheduler.RunInfo) scheduler.RunInfo {
	r.Waiting = &scheduler.Waiting{Version: 1, Upstream: []string{"extract"}}
	return r
}

// gated is r waiting on a freshness gate on task copy, stuck or not.
func gated(r scheduler.RunInfo, stuck bool) scheduler.RunInfo {
	r.Waiting = &scheduler.Waiting{Version: 1, Gates: []scheduler.GateWait{{Task: "copy",
		FreshAnswer: scheduler.FreshAnswer{Target: "mysql-bin.000002:4", Why: "task is STOPPED", Stuck: stuck}}}}
	return r
}

// eval runs one rule over in (History observed from an empty one unless
// set) and returns the labels' values of its findings, and their
// severities.
func eval(t *testing.T, rule string, in Input) []Finding {
	t.Helper()
	th := DefaultThresholds()
	if in.Snap == nil {
		in.Snap = &cluster.Snapshot{}
	}
	if in.Now.IsZero() {
		in.Now = t0
	}
	for _, r := range Rules() {
		if r.Name == rule {
			return r.Eval(&in, &th)
		}
	}
	t.Fatalf("no rule %s", rule)
	return nil
}

func summaries(fs []Finding) string {
	var s []string
	for _, f := range fs {
		s = append(s, string(f.Severity)+" "+f.Key())
	}
	return strings.Join(s, "; ")
}

func TestRulesFindWhatTheyName(t *testing.T) {
	stopped := task("stopped")
	stopped.Spec.State = core.DesiredStopped
	cold := task("cold")
	cold.Spec.Standby = core.Standby{Mode: core.ModeCold, Group: "g"}
	failedCommit := withCommit(task("fc", core.StateRunning), pos("b.000001", 4), t0)
	failedCommit.LastCommit.Failure = &core.Failure{Error: "duplicate key", Attempts: 2, Owner: "ha"}

	// A source whose logs are b.000003 (oldest) .. b.000005 (current).
	src := reading(0, bl("b.000003", 1000), bl("b.000004", 1000), bl("b.000005", 500))
	srcExpiring := reading(2*time.Hour, bl("b.000003", 1000), bl("b.000004", 1000), bl("b.000005", 500))

	cases := []struct {
		name, rule string
		in         Input
		want       []string // keys found, "" for none
	}{
		{"a FAILED instance", RuleTaskFailed, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{task("t", core.StateFailed)}}},
			[]string{`TaskFailed{severity="critical",task="t"}`}},
		{"a recorded failure", RuleTaskFailed, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{failedCommit}}},
			[]string{`TaskFailed{severity="critical",task="fc"}`}},
		{"a running task has not failed", RuleTaskFailed, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{task("t", core.StateRunning)}}}, nil},

		{"desired running, no instance", RuleTaskNotRunning, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{task("t")}}},
			[]string{`TaskNotRunning{severity="critical",task="t"}`}},
		{"desired running, only a standby", RuleTaskNotRunning, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{task("t", core.StateStandby)}}},
			[]string{`TaskNotRunning{severity="critical",task="t"}`}},
		{"running", RuleTaskNotRunning, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{task("t", core.StateRunning, core.StateStandby)}}}, nil},
		{"stopped on purpose", RuleTaskNotRunning, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{stopped}}}, nil},

		{"hot task, one instance", RuleTaskNoStandby, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{task("t", core.StateRunning)}}},
			[]string{`TaskNoStandby{severity="warning",task="t"}`}},
		{"hot task, two instances", RuleTaskNoStandby, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{task("t", core.StateRunning, core.StateStandby)}}}, nil},
		{"cold task, one instance", RuleTaskNoStandby, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{func() core.TaskStatus {
			c := cold
			c.Instances = task("x", core.StateRunning).Instances
			return c
		}()}}}, nil},

		{"verify found differences", RuleTaskDataMismatch, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{withVerify(task("t", core.StateRunning), 3)}}},
			[]string{`TaskDataMismatch{severity="critical",task="t"}`}},
		{"verify found none", RuleTaskDataMismatch, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{withVerify(task("t", core.StateRunning), 0)}}}, nil},
		{"never verified", RuleTaskDataMismatch, Input{Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{task("t", core.StateRunning)}}}, nil},

		{"checkpoint file purged", RuleBinlogPurged, Input{
			Snap:    &cluster.Snapshot{Tasks: []core.TaskStatus{withCommit(task("t"), pos("b.000002", 100), t0.Add(-time.Hour))}},
			Sources: map[string]SourceReading{"t": src}}, []string{`BinlogPurged{severity="critical",task="t"}`}},
		{"checkpoint file present", RuleBinlogPurged, Input{
			Snap:    &cluster.Snapshot{Tasks: []core.TaskStatus{withCommit(task("t"), pos("b.000003", 100), t0.Add(-time.Hour))}},
			Sources: map[string]SourceReading{"t": src}}, nil},
		{"another server behind the address: its files say nothing", RuleBinlogPurged, Input{
			Snap:    &cluster.Snapshot{Tasks: []core.TaskStatus{withCommit(task("t"), core.Position{File: "b.000002", Pos: 100, Server: "mariadb:1"}, t0.Add(-time.Hour))}},
			Sources: map[string]SourceReading{"t": func() SourceReading { r := src; r.Server = "mariadb:2"; return r }()}}, nil},
		{"the same server: purged", RuleBinlogPurged, Input{
			Snap:    &cluster.Snapshot{Tasks: []core.TaskStatus{withCommit(task("t"), core.Position{File: "b.000002", Pos: 100, Server: "mariadb:1"}, t0.Add(-time.Hour))}},
			Sources: map[string]SourceReading{"t": func() SourceReading { r := src; r.Server = "mariadb:1"; return r }()}}, []string{`BinlogPurged{severity="critical",task="t"}`}},
		{"source not read: nothing assumed", RuleBinlogPurged, Input{
			Snap:    &cluster.Snapshot{Tasks: []core.TaskStatus{withCommit(task("t"), pos("b.000002", 100), t0)}},
			Sources: map[string]SourceReading{"t": {Err: "refused"}}}, nil},

		{"no candidate could take over", RuleSourceFailoverUnsafe, Input{
			Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{withFailover(withCommit(task("t", core.StateRunning), gpos("b.000003", 100, "0-1-50"), t0))}},
			Candidates: map[string][]replication.SourceHealth{"t": {
				{Addr: "r1:3306", Err: errors.New("connection refused")},
				{Addr: "r2:3306", Server: "mariadb:3", LogBin: true, LogReplicaUpdates: false, GTID: "0-1-50"},
				{Addr: "r3:3306", Server: "mariadb:4", LogBin: true, LogReplicaUpdates: true, GTID: "0-1-40"},
			}}}, []string{`SourceFailoverUnsafe{severity="warning",task="t"}`}},
		{"one candidate could", RuleSourceFailoverUnsafe, Input{
			Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{withFailover(withCommit(task("t", core.StateRunning), gpos("b.000003", 100, "0-1-50"), t0))}},
			Candidates: map[string][]replication.SourceHealth{"t": {
				{Addr: "r1:3306", Err: errors.New("connection refused")},
				{Addr: "r2:3306", Server: "mariadb:3", LogBin: true, LogReplicaUpdates: true, GTID: "0-1-52", GTIDState: "0-1-52"},
			}}}, nil},
		// After two failovers (server 1, then 2, then 3 wrote domain 0),
		// a replica with the same history is not errant: the history the
		// target followed, mirrored into lastCommit, says 1 and 2 were
		// followed. Without it the rule cannot tell, and warns.
		{"after two failovers, the history followed known", RuleSourceFailoverUnsafe, Input{
			Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{withFollowed(withFailover(withCommit(task("t", core.StateRunning),
				core.Position{File: "b.000003", Pos: 100, GTID: "0-3-50", Server: "mariadb:3"}, t0)), "0-1-20,0-2-40,0-3-50")}},
			Candidates: map[string][]replication.SourceHealth{"t": {
				{Addr: "r4:3306", Server: "mariadb:4", ReadOnly: true, LogBin: true, LogReplicaUpdates: true, GTID: "0-3-50", GTIDState: "0-1-20,0-2-40,0-3-50"},
			}}}, nil},
		{"after two failovers, the history followed unknown", RuleSourceFailoverUnsafe, Input{
			Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{withFailover(withCommit(task("t", core.StateRunning),
				core.Position{File: "b.000003", Pos: 100, GTID: "0-3-50", Server: "mariadb:3"}, t0))}},
			Candidates: map[string][]replication.SourceHealth{"t": {
				{Addr: "r4:3306", Server: "mariadb:4", ReadOnly: true, LogBin: true, LogReplicaUpdates: true, GTID: "0-3-50", GTIDState: "0-1-20,0-2-40,0-3-50"},
			}}}, []string{`SourceFailoverUnsafe{severity="warning",task="t"}`}},
		{"candidates not probed: nothing assumed", RuleSourceFailoverUnsafe, Input{
			Snap: &cluster.Snapshot{Tasks: []core.TaskStatus{withFailover(withCommit(task("t", core.StateRunning), gpos("b.000003", 100, "0-1-50"), t0))}}}, nil},

		{"checkpoint in the oldest file", RuleBinlogPurgeRisk, Input{
			Snap:    &cluster.Snapshot{Tasks: []core.TaskStatus{withCommit(task("t"), pos("b.000003", 100), t0.Add(-time.Hour))}},
			Sources: map[string]SourceReading{"t": src}}, []string{`BinlogPurgeRisk{severity="warning",task="t"}`}},
		{"checkpoint in a middle file, no expiry", RuleBinlogPurgeRisk, Input{
			Snap:    &cluster.Snapshot{Tasks: []core.TaskStatus{withCommit(task("t"), pos("b.000004", 100), t0.Add(-time.Hour))}},
			Sources: map[string]SourceReading{"t": src}}, nil},
		{"checkpoint in a middle file expiring within the window", RuleBinlogPurgeRisk, Input{
			Snap:    &cluster.Snapshot{Tasks: []core.TaskStatus{withCommit(task("t"), pos("b.000004", 100), t0.Add(-time.Hour))}},
			Sources: map[string]SourceReading{"t": srcExpiring}}, []string{`BinlogPurgeRisk{severity="warning",task="t"}`}},
		{"checkpoint in the current file", RuleBinlogPurgeRisk, Input{
			Snap:    &cluster.Snapshot{Tasks: []core.TaskStatus{withCommit(task("t"), pos("b.000005", 100), t0.Add(-48*time.Hour))}},
			Sources: map[string]SourceReading{"t": srcExpiring}}, nil},

		{"last run failed", RuleJobFailed, Input{Snap: &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{
			run("j", "2026-11-25", scheduler.Failed, t0), run("j", "2026-11-24", scheduler.Succeeded, t0.Add(-24*time.Hour))}}}}},
			[]string{`JobFailed{job="j",severity="critical"}`}},
		{"failed, then succeeded", RuleJobFailed, Input{Snap: &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{
			run("j", "2026-11-25", scheduler.Succeeded, t0), run("j", "2026-11-24", scheduler.Failed, t0.Add(-24*time.Hour))}}}}}, nil},
		{"running run does not hide a failure", RuleJobFailed, Input{Snap: &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{
			run("j", "2026-11-26", "", t0), run("j", "2026-11-25", scheduler.TimedOut, t0)}}}}},
			[]string{`JobFailed{job="j",severity="critical"}`}},
		{"last run missed", RuleJobMissed, Input{Snap: &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{
			run("j", "2026-11-25", scheduler.Missed, t0)}}}}}, []string{`JobMissed{job="j",severity="warning"}`}},

		{"run past its limit (time in key)", RuleJobTooLong, Input{Snap: &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{
			run("j", "2026-11-25T10:00:00Z", "", time.Time{})}}}}}, []string{`JobTooLong{job="j",severity="warning"}`}},
		{"run within its limit", RuleJobTooLong, Input{Snap: &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{
			run("j", "2026-11-25T11:30:00Z", "", time.Time{})}}}}}, nil},
		{"run waiting for its upstream runs past the limit", RuleJobTooLong, Input{Snap: &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{
			waiting(run("j", "2026-11-25T10:00:00Z", "", time.Time{}))}}}}}, nil},
		{"date-keyed run first seen running 2h ago", RuleJobTooLong, Input{
			Snap:    &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{run("j", "2026-11-25", "", time.Time{})}}}},
			History: History{Running: map[string]time.Time{"j/2026-11-25": t0.Add(-2 * time.Hour)}}}, []string{`JobTooLong{job="j",severity="warning"}`}},

		{"run waiting on a stopped task", RuleJobWaitingOnTask, Input{Snap: &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{
			gated(run("j", "2026-11-26", "", time.Time{}), true), gated(run("j", "2026-11-25", "", time.Time{}), true)}}}}},
			[]string{`JobWaitingOnTask{job="j",severity="warning"}`}},
		{"run waiting on a task that moves", RuleJobWaitingOnTask, Input{Snap: &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{
			gated(run("j", "2026-11-25", "", time.Time{}), false), waiting(run("j", "2026-11-24", "", time.Time{}))}}}}}, nil},

		{"no success for 2 days", RuleJobNoSuccess, Input{Snap: &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{
			run("j", "2026-11-25", scheduler.Failed, t0.Add(-time.Hour)), run("j", "2026-11-23", scheduler.Succeeded, t0.Add(-48*time.Hour))}}}}},
			[]string{`JobNoSuccess{job="j",severity="critical"}`}},
		{"a success yesterday", RuleJobNoSuccess, Input{Snap: &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{
			run("j", "2026-11-25", scheduler.Failed, t0.Add(-time.Hour)), run("j", "2026-11-24", scheduler.Succeeded, t0.Add(-23*time.Hour))}}}}}, nil},
		{"a new job that has only failed", RuleJobNoSuccess, Input{Snap: &cluster.Snapshot{Jobs: []scheduler.JobStatus{{Name: "j", Runs: []scheduler.RunInfo{
			run("j", "2026-11-25", scheduler.Failed, t0.Add(-time.Hour))}}}}}, nil},

		{"names without a served address", RuleServiceNoHealthyAddress, Input{Snap: &cluster.Snapshot{Services: []dns.ServiceStatus{
			{Name: dns.Name{App: "app1", Domain: "up.svc.example"}, Served: 1, Addresses: []dns.AddressStatus{{Addr: "10.0.0.1:80", Healthy: true}}},
			{Name: dns.Name{App: "app1", Domain: "sick.svc.example"}, Addresses: []dns.AddressStatus{{Addr: "10.0.0.2:80"}}},
			{Name: dns.Name{App: "app2", Domain: "gone.svc.example"}, Addresses: []dns.AddressStatus{}},
		}}}, []string{`ServiceNoHealthyAddress{app="app1",domain="sick.svc.example",severity="critical"}`, `ServiceNoHealthyAddress{app="app2",domain="gone.svc.example",severity="critical"}`}},
		{"dead collector", RuleCollectorDead, Input{Snap: &cluster.Snapshot{Collectors: []collector.CollectorInfo{{Name: "c1", Reason: "status 40s old"}, {Name: "c2", Alive: true}, {Name: "c3", Leaving: true}}}},
			[]string{`CollectorDead{collector="c1",severity="critical"}`}},
		{"unassigned source", RuleSourceUnassigned, Input{Snap: &cluster.Snapshot{Sources: []collector.SourceStatus{{URI: "file:///a.log"}, {URI: "file:///b.log", Collector: "c1"}}}},
			[]string{`SourceUnassigned{severity="warning",source="file:///a.log"}`}},
		{"lagging collector", RuleCollectorLagging, Input{Snap: &cluster.Snapshot{Collectors: []collector.CollectorInfo{{Name: "c1", Alive: true, Lag: 100 << 20}, {Name: "c2", Alive: true, Lag: 10}}}},
			[]string{`CollectorLagging{collector="c1",severity="warning"}`}},

		{"coordination server unreachable", RuleCoordUnhealthy, Input{Snap: &cluster.Snapshot{Coord: []coordhealth.Server{{Addr: "a:2181", Error: "connection refused"}, {Addr: "b:2181", OK: true}}}},
			[]string{`CoordUnhealthy{server="a:2181",severity="critical"}`}},
		{"coordination server overloaded", RuleCoordUnhealthy, Input{Snap: &cluster.Snapshot{Coord: []coordhealth.Server{{Addr: "a:2181", OK: true, Outstanding: 500}}}},
			[]string{`CoordUnhealthy{server="a:2181",severity="warning"}`}},
		{"no active monitor", RuleMonitorStandbyOnly, Input{NoActiveMonitor: true}, []string{`MonitorStandbyOnly{severity="critical"}`}},
		{"an active monitor", RuleMonitorStandbyOnly, Input{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := eval(t, c.rule, c.in)
			var keys []string
			for _, f := range got {
				keys = append(keys, f.Key())
				if f.Summary == "" || f.Fix == "" {
					t.Errorf("%s: summary %q, fix %q: both needed", f.Key(), f.Summary, f.Fix)
				}
			}
			if strings.Join(keys, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("found %v, want %v (%s)", keys, c.want, summaries(got))
			}
		})
	}
}

// TestReplicationLagIdleSourceIsNotLate checks the lag measure: a task at
// its source's position has no lag however old the source's last event
// is; a task behind is as late as the last time the source was seen at a
// position it has reached.
func TestReplicationLagIdleSourceIsNotLate(t *testing.T) {
	mk := func(taskPos core.Position, reportedLag float64) *cluster.Snapshot {
		ts := task("t", core.StateRunning)
		ts.Instances[0].State.Position = taskPos
		ts.Instances[0].State.LagSeconds = reportedLag
		return &cluster.Snapshot{Tasks: []core.TaskStatus{ts}}
	}
	// The source wrote b.000001:500 long ago and nothing since; the task
	// reports the age of that last event as its lag.
	var h History
	src := reading(0, bl("b.000001", 500))
	for i := range 30 { // 30 minutes of idle source
		now := t0.Add(time.Duration(i) * time.Minute)
		h = Observe(h, mk(pos("b.000001", 500), 3600), map[string]SourceReading{"t": src}, now)
	}
	in := Input{Now: t0.Add(29 * time.Minute), Snap: mk(pos("b.000001", 500), 3600), Sources: map[string]SourceReading{"t": src}, History: h}
	if fs := eval(t, RuleReplicationLag, in); len(fs) != 0 {
		t.Fatalf("idle source, task at its position: %s", summaries(fs))
	}

	// The source moves on at minute 30; the task stays at 500.
	moved := reading(0, bl("b.000001", 900))
	now := t0.Add(30 * time.Minute)
	for i := range 8 {
		now = t0.Add(30*time.Minute + time.Duration(i)*time.Minute)
		h = Observe(h, mk(pos("b.000001", 500), 0), map[string]SourceReading{"t": moved}, now)
	}
	// 7 minutes since the source was last seen at 500 (minute 29): critical.
	in = Input{Now: now, Snap: mk(pos("b.000001", 500), 0), Sources: map[string]SourceReading{"t": moved}, History: h}
	fs := eval(t, RuleReplicationLag, in)
	if len(fs) != 1 || fs[0].Severity != Critical || !strings.Contains(fs[0].Summary, "8m0s behind") {
		t.Fatalf("task behind for 8 minutes: %s / %+v", summaries(fs), fs)
	}
	// Two minutes of lag: a warning.
	in.Now = t0.Add(31 * time.Minute)
	if fs := eval(t, RuleReplicationLag, in); len(fs) != 1 || fs[0].Severity != Warning {
		t.Fatalf("task behind for 2 minutes: %s", summaries(fs))
	}
	// Caught up: resolved.
	in.Snap = mk(pos("b.000001", 900), 0)
	if fs := eval(t, RuleReplicationLag, in); len(fs) != 0 {
		t.Fatalf("caught up: %s", summaries(fs))
	}
}

func TestCheckpointStaleNeedsAMovingSource(t *testing.T) {
	ts := withCommit(task("t", core.StateRunning), pos("b.000001", 500), t0.Add(-time.Hour))
	snap := &cluster.Snapshot{Tasks: []core.TaskStatus{ts}}
	idle := map[string]SourceReading{"t": reading(0, bl("b.000001", 500))}
	moving := map[string]SourceReading{"t": reading(0, bl("b.000001", 800))}

	h := Observe(History{}, snap, idle, t0)
	if fs := eval(t, RuleCheckpointStale, Input{Snap: snap, Sources: idle, History: h}); len(fs) != 0 {
		t.Fatalf("idle source, checkpoint at its position an hour old: %s", summaries(fs))
	}
	h = Observe(h, snap, moving, t0)
	if fs := eval(t, RuleCheckpointStale, Input{Snap: snap, Sources: moving, History: h}); len(fs) != 1 {
		t.Fatalf("source moved, checkpoint an hour old: %s", summaries(fs))
	}
	// The checkpoint moves: its age starts again.
	ts2 := withCommit(task("t", core.StateRunning), pos("b.000001", 700), t0.Add(-time.Hour))
	snap2 := &cluster.Snapshot{Tasks: []core.TaskStatus{ts2}}
	h = Observe(h, snap2, moving, t0.Add(time.Minute))
	if fs := eval(t, RuleCheckpointStale, Input{Now: t0.Add(5 * time.Minute), Snap: snap2, Sources: moving, History: h}); len(fs) != 0 {
		t.Fatalf("checkpoint moved 4 minutes ago: %s", summaries(fs))
	}
	if fs := eval(t, RuleCheckpointStale, Input{Now: t0.Add(12 * time.Minute), Snap: snap2, Sources: moving, History: h}); len(fs) != 1 {
		t.Fatalf("checkpoint moved 11 minutes ago and not since: %s", summaries(fs))
	}
}

// TestBinlogPurgeRiskUsesTheLastWriteSeen: a file seen being written
// recently expires no earlier than then plus the expiry.
func TestBinlogPurgeRiskUsesTheLastWriteSeen(t *testing.T) {
	ts := withCommit(task("t"), pos("b.000004", 100), t0.Add(-30*time.Hour))
	ts.Spec.State = core.DesiredStopped
	snap := &cluster.Snapshot{Tasks: []core.TaskStatus{ts}}
	expire := 48 * time.Hour
	// b.000004 was the current file 10 hours ago.
	h := Observe(History{}, snap, map[string]SourceReading{"t": reading(expire, bl("b.000003", 10), bl("b.000004", 10))}, t0.Add(-10*time.Hour))
	src := map[string]SourceReading{"t": reading(expire, bl("b.000003", 10), bl("b.000004", 10), bl("b.000005", 10))}
	h = Observe(h, snap, src, t0)
	if fs := eval(t, RuleBinlogPurgeRisk, Input{Snap: snap, Sources: src, History: h}); len(fs) != 0 {
		t.Fatalf("file written 10h ago, expiry 48h, window 24h: %s", summaries(fs))
	}
	// Without that sighting only the checkpoint's time (30h ago) is known:
	// it may expire in 18h, within the window.
	h2 := Observe(History{}, snap, src, t0)
	fs := eval(t, RuleBinlogPurgeRisk, Input{Snap: snap, Sources: src, History: h2})
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "may expire in 18h0m0s") {
		t.Fatalf("file last known written 30h ago: %s %+v", summaries(fs), fs)
	}
}

func TestComparePos(t *testing.T) {
	cases := []struct {
		a, b core.Position
		c    int
		ok   bool
	}{
		{pos("b.000001", 4), pos("b.000001", 4), 0, true},
		{pos("b.000001", 900), pos("b.000002", 4), -1, true},
		{pos("b.000010", 4), pos("b.000009", 900), 1, true},
		{pos("b.000001", 4), pos("c.000001", 4), 0, false},
		{pos("", 0), pos("b.000001", 4), 0, false},
	}
	for _, c := range cases {
		got, ok := replication.CompareFilePositions(c.a, c.b)
		if got != c.c || ok != c.ok {
			t.Errorf("replication.CompareFilePositions(%v, %v) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.c, c.ok)
		}
	}
}
