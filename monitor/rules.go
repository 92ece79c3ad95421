package monitor

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/replication"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// Severity of an alert.
type Severity string

// Severities.
const (
	Warning  Severity = "warning"
	Critical Severity = "critical"
)

// Finding is a condition a rule sees now: an alert in the making, which
// fires once it has held for the rule's hold time.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Labels say what the finding is about: task, job, collector,
	// source or server.
	Labels  map[string]string `json:"labels"`
	Summary string            `json:"summary"`
	// Fix is what an operator can do about it.
	Fix string `json:"fix,omitempty"`
}

// Key identifies a finding across evaluations: its rule, severity and
// labels. A change of severity is another alert (as with two Prometheus
// rules of one name), so a warning resolves when it turns critical.
func (f Finding) Key() string {
	labels := maps.Clone(f.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels["severity"] = string(f.Severity)
	var b strings.Builder
	b.WriteString(f.Rule + "{")
	for i, k := range slices.Sorted(maps.Keys(labels)) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	b.WriteString("}")
	return b.String()
}

// Input is everything one evaluation looks at. Rules are pure functions
// of it, so that each is tested over hand-built inputs.
type Input struct {
	Now  time.Time
	Snap *cluster.Snapshot
	// Sources are the monitor's own readings of each task's source, by
	// task name (absent: not read — no spec, or not trusted).
	Sources map[string]SourceReading
	// Candidates are the monitor's probes of each task's source
	// candidates other than the one it reads, by task name (absent: the
	// task has none, or its source was not read).
	Candidates map[string][]replication.SourceHealth
	// History is the history after observing this input (Observe).
	History History
	// NoActiveMonitor: this monitor stands by and no monitor is active.
	NoActiveMonitor bool
	// ActiveMonitorStatus says what the standby saw (for the summary).
	ActiveMonitorStatus string
}

// Rule is one alert rule: its name (part of the interface: notifications,
// silences and the Prometheus rules file use it), how long its condition
// must hold before it fires, and the condition.
type Rule struct {
	Name string
	Hold time.Duration
	Eval func(in *Input, th *Thresholds) []Finding
}

// Rule names.
const (
	RuleTaskFailed      = "TaskFailed"
	RuleTaskNotRunning  = "TaskNotRunning"
	RuleTaskNoStandby   = "TaskNoStandby"
	RuleReplicationLag  = "ReplicationLag"
	RuleCheckpointStale = "CheckpointStale"
	RuleBinlogPurgeRisk = "BinlogPurgeRisk"
	RuleBinlogPurged    = "BinlogPurged"
	// RuleSourceFailoverUnsafe: no source candidate could take the task
	// over now.
	RuleSourceFailoverUnsafe = "SourceFailoverUnsafe"
	RuleJobFailed            = "JobFailed"
	RuleJobMissed            = "JobMissed"
	RuleJobTooLong           = "JobTooLong"
	RuleJobNoSuccess         = "JobNoSuccess"
	RuleJobWaitingOnTask     = "JobWaitingOnTask"
	RuleCollectorDead        = "CollectorDead"
	RuleSourceUnassigned     = "SourceUnassigned"
	RuleCollectorLagging     = "CollectorLagging"
	RuleCoordUnhealthy       = "CoordUnhealthy"
	RuleMonitorStandbyOnly   = "MonitorStandbyOnly"
	// RuleServiceNoHealthyAddress: a name of the DNS registry has no
	// address its DNS server answers with.
	RuleServiceNoHealthyAddress = "ServiceNoHealthyAddress"
)

// RuleTaskDataMismatch: the task's last verify found rows that differ
// between source and target.
const RuleTaskDataMismatch = "TaskDataMismatch"

// Rules returns every rule with its default hold time. Config.Hold
// overrides hold times by name.
func Rules() []Rule {
	return []Rule{
		{RuleTaskFailed, 0, taskFailed},
		{RuleTaskNotRunning, 30 * time.Second, taskNotRunning},
		{RuleTaskNoStandby, 5 * time.Minute, taskNoStandby},
		{RuleReplicationLag, 0, replicationLag},
		{RuleCheckpointStale, 0, checkpointStale},
		{RuleBinlogPurgeRisk, 0, binlogPurgeRisk},
		{RuleBinlogPurged, 0, binlogPurged},
		// A replica a little behind its primary is normal: the hold
		// lets it catch up before anyone is told.
		{RuleSourceFailoverUnsafe, 2 * time.Minute, sourceFailoverUnsafe},
		{RuleTaskDataMismatch, 0, taskDataMismatch},
		{RuleJobFailed, 0, jobFailed},
		{RuleJobMissed, 0, jobMissed},
		{RuleJobTooLong, 0, jobTooLong},
		{RuleJobNoSuccess, 0, jobNoSuccess},
		{RuleJobWaitingOnTask, 0, jobWaitingOnTask},
		// A collector that has just registered has no status yet and is
		// judged dead until its first write: the hold lets it start.
		{RuleCollectorDead, 15 * time.Second, collectorDead},
		{RuleSourceUnassigned, time.Minute, sourceUnassigned},
		{RuleCollectorLagging, 5 * time.Minute, collectorLagging},
		{RuleCoordUnhealthy, 30 * time.Second, coordUnhealthy},
		{RuleMonitorStandbyOnly, time.Minute, monitorStandbyOnly},
		// A provider restarting is gone for a moment: the hold lets it
		// register again before anyone is told.
		{RuleServiceNoHealthyAddress, 30 * time.Second, serviceNoHealthyAddress},
	}
}

// ruleSection is the snapshot section each rule reads.
var ruleSection = map[string]cluster.Section{
	RuleTaskFailed: cluster.SectionTasks, RuleTaskNotRunning: cluster.SectionTasks, RuleTaskNoStandby: cluster.SectionTasks,
	RuleReplicationLag: cluster.SectionTasks, RuleCheckpointStale: cluster.SectionTasks,
	RuleBinlogPurgeRisk: cluster.SectionTasks, RuleBinlogPurged: cluster.SectionTasks, RuleTaskDataMismatch: cluster.SectionTasks,
	RuleJobFailed: cluster.SectionJobs, RuleJobMissed: cluster.SectionJobs, RuleJobTooLong: cluster.SectionJobs, RuleJobNoSuccess: cluster.SectionJobs,
	RuleJobWaitingOnTask: cluster.SectionJobs,
	RuleCollectorDead:    cluster.SectionCollectors, RuleSourceUnassigned: cluster.SectionCollectors, RuleCollectorLagging: cluster.SectionCollectors,
	RuleCoordUnhealthy:          cluster.SectionCoord,
	RuleServiceNoHealthyAddress: cluster.SectionServices,
}

// sourceRules read the task's source as well.
var sourceRules = []string{RuleReplicationLag, RuleCheckpointStale, RuleBinlogPurgeRisk, RuleBinlogPurged}

// Unjudged returns the findings of the alerts that this input cannot
// judge — their snapshot section, or their task's source, could not be
// read — so that they carry on as they were: a read that fails for a
// moment neither resolves an alert nor starts its hold again.
func Unjudged(in *Input, alerts map[string]*Alert) []Finding {
	var out []Finding
	for _, a := range alerts {
		_, failed := in.Snap.Errors[ruleSection[a.Rule]]
		if !failed && slices.Contains(sourceRules, a.Rule) {
			r, read := in.Sources[a.Labels["task"]]
			_, exists := in.Snap.Task(a.Labels["task"])
			failed = exists && (!read || r.Err != "")
		}
		if failed {
			out = append(out, a.Finding)
		}
	}
	return out
}

// Thresholds are the rules' limits; DefaultThresholds has the defaults.
// Field names are those of the config file's rules section.
type Thresholds struct {
	LagWarning  time.Duration `yaml:"lagWarning"`
	LagCritical time.Duration `yaml:"lagCritical"`
	// CheckpointStale: lastCommit has not moved for this long while the
	// source is past it.
	CheckpointStale time.Duration `yaml:"checkpointStale"`
	// BinlogExpiryWindow: warn when the binary log a checkpoint needs may
	// expire within this long.
	BinlogExpiryWindow time.Duration `yaml:"binlogExpiryWindow"`
	// JobTooLong is how long a run may take, JobTooLongPerJob by job.
	JobTooLong       time.Duration            `yaml:"jobTooLong"`
	JobTooLongPerJob map[string]time.Duration `yaml:"jobTooLongPerJob"`
	// JobNoSuccess is the window a job must succeed within, by job in
	// JobNoSuccessPerJob.
	JobNoSuccess       time.Duration            `yaml:"jobNoSuccess"`
	JobNoSuccessPerJob map[string]time.Duration `yaml:"jobNoSuccessPerJob"`
	// CollectorLagBytes: a collector this many bytes behind its sources.
	CollectorLagBytes int64 `yaml:"collectorLagBytes"`
	// Coordination server limits (srvr/mntr).
	CoordOutstanding  int64   `yaml:"coordOutstanding"`
	CoordAvgLatencyMs float64 `yaml:"coordAvgLatencyMs"`
	CoordZnodes       int64   `yaml:"coordZnodes"`
	CoordWatches      int64   `yaml:"coordWatches"`
}

// DefaultThresholds returns the documented defaults.
func DefaultThresholds() Thresholds {
	return Thresholds{
		LagWarning:         time.Minute,
		LagCritical:        5 * time.Minute,
		CheckpointStale:    10 * time.Minute,
		BinlogExpiryWindow: 24 * time.Hour,
		JobTooLong:         time.Hour,
		JobNoSuccess:       26 * time.Hour,
		CollectorLagBytes:  64 << 20,
		CoordOutstanding:   100,
		CoordAvgLatencyMs:  100,
		CoordZnodes:        1_000_000,
		CoordWatches:       1_000_000,
	}
}

// --- tasks ---

func taskFinding(rule string, sev Severity, ts core.TaskStatus, summary, fix string) Finding {
	return Finding{Rule: rule, Severity: sev, Labels: map[string]string{"task": ts.Name}, Summary: summary, Fix: fix}
}

// desiredRunning reports whether operators want the task running.
func desiredRunning(ts core.TaskStatus) bool {
	return ts.Spec != nil && ts.Spec.State == core.DesiredRunning
}

func taskFailed(in *Input, _ *Thresholds) []Finding {
	var out []Finding
	for _, ts := range in.Snap.Tasks {
		why := ""
		for _, inst := range ts.Instances {
			if inst.State.State == core.StateFailed {
				why = fmt.Sprintf("instance %s is FAILED: %s", inst.Name, inst.State.Error)
				break
			}
		}
		if why == "" && ts.LastCommit != nil && ts.LastCommit.Failure != nil {
			f := ts.LastCommit.Failure
			why = fmt.Sprintf("failed %d time(s), last on %s: %s", f.Attempts, f.Owner, f.Error)
		}
		if why != "" {
			out = append(out, taskFinding(RuleTaskFailed, Critical, ts, "task "+ts.Name+" "+why,
				"fix the cause, then retry with: shepherd ctl task start "+ts.Name))
		}
	}
	return out
}

// taskDataMismatch: the last verify report (shepherd ctl task verify)
// has confirmed differences. It resolves with the next verify that finds
// none (after a repair, or a re-copy).
func taskDataMismatch(in *Input, _ *Thresholds) []Finding {
	var out []Finding
	for _, ts := range in.Snap.Tasks {
		rep := ts.Verify
		if rep == nil || rep.Differences == 0 {
			continue
		}
		var where []string
		for _, t := range rep.Tables {
			n := 0
			for _, d := range t.Diffs {
				if !d.Repaired {
					n += d.Keys()
				}
			}
			switch {
			case n > 0:
				where = append(where, fmt.Sprintf("%s.%s (%d rows)", t.DB, t.Table, n))
			case t.Missing:
				where = append(where, fmt.Sprintf("%s.%s (missing on the target)", t.DB, t.Table))
			case t.Differs:
				where = append(where, fmt.Sprintf("%s.%s (no key)", t.DB, t.Table))
			}
		}
		out = append(out, taskFinding(RuleTaskDataMismatch, Critical, ts,
			fmt.Sprintf("task %s's target differs from its source: %d confirmed differences in %s (verify of %s)",
				ts.Name, rep.Differences, strings.Join(where, ", "), rep.Finished.UTC().Format(time.RFC3339)),
			"see the keys with: shepherd ctl --json task show "+ts.Name+"; rewrite them with: shepherd ctl task verify --repair "+ts.Name))
	}
	return out
}

func taskNotRunning(in *Input, _ *Thresholds) []Finding {
	var out []Finding
	for _, ts := range in.Snap.Tasks {
		if !desiredRunning(ts) {
			continue
		}
		if slices.ContainsFunc(ts.Instances, func(i core.Instance) bool { return i.State.State == core.StateRunning }) {
			continue
		}
		what := "no instance"
		if o, ok := ts.Owner(); ok {
			what = fmt.Sprintf("its owner %s is %s", o.Name, cmp.Or(o.State.State, "in an unknown state"))
		}
		fix := "start a core for it: shepherd core --task " + ts.Name
		if ts.Spec.Standby.Mode == core.ModeCold {
			fix = "start a core of its group: shepherd core --group " + ts.Spec.Standby.Group
		}
		out = append(out, taskFinding(RuleTaskNotRunning, Critical, ts, "task "+ts.Name+" should be running but is not: "+what, fix))
	}
	return out
}

func taskNoStandby(in *Input, _ *Thresholds) []Finding {
	var out []Finding
	for _, ts := range in.Snap.Tasks {
		if !desiredRunning(ts) || ts.Spec.Standby.Mode != core.ModeHot || len(ts.Instances) != 1 {
			continue
		}
		out = append(out, taskFinding(RuleTaskNoStandby, Warning, ts,
			fmt.Sprintf("hot-standby task %s has one instance (%s): nobody takes over if it dies", ts.Name, ts.Instances[0].Name),
			"start another core with --task "+ts.Name+" on another machine"))
	}
	return out
}

func replicationLag(in *Input, th *Thresholds) []Finding {
	var out []Finding
	for _, ts := range in.Snap.Tasks {
		if !desiredRunning(ts) {
			continue
		}
		v := cluster.ViewTask(ts, in.History.Tasks[ts.Name].samples(), in.Now)
		pos, lag := v.Position, v.Lag
		if !v.LagKnown || pos.IsZero() {
			continue
		}
		sev := Severity("")
		switch {
		case th.LagCritical > 0 && lag > th.LagCritical:
			sev = Critical
		case th.LagWarning > 0 && lag > th.LagWarning:
			sev = Warning
		}
		if sev == "" {
			continue
		}
		src := in.Sources[ts.Name].Current()
		out = append(out, taskFinding(RuleReplicationLag, sev, ts,
			fmt.Sprintf("task %s is %s behind its source (at %s, source at %s)", ts.Name, lag.Round(time.Second), pos, src),
			"see the task and its owner: shepherd ctl task show "+ts.Name))
	}
	return out
}

// sourceFailoverUnsafe finds the running tasks with source candidates
// none of which could take over from the task's checkpoint now (by
// core.TakeoverProblem, the rule the core's failover applies): a
// failover would leave the task waiting, or need a rebuilt target.
func sourceFailoverUnsafe(in *Input, _ *Thresholds) []Finding {
	var out []Finding
	for _, ts := range in.Snap.Tasks {
		probes, probed := in.Candidates[ts.Name]
		if !desiredRunning(ts) || !probed || ts.LastCommit == nil || ts.LastCommit.Position().IsZero() {
			continue
		}
		var problems []string
		for _, h := range probes {
			// The history the target followed, as the owner mirrored it
			// into lastCommit with the position ("" from older cores).
			p := core.TakeoverProblem(h, ts.Spec.Source.Flavor, ts.LastCommit.Position(), ts.LastCommit.Followed)
			if p == "" {
				problems = nil
				break
			}
			problems = append(problems, p)
		}
		if len(problems) == 0 {
			continue
		}
		out = append(out, taskFinding(RuleSourceFailoverUnsafe, Warning, ts,
			fmt.Sprintf("no source candidate of task %s could take over if its source failed now: %s", ts.Name, strings.Join(problems, "; ")),
			"bring a replica with log_bin and log_slave_updates on up to date with the source, or add one to source.hosts (docs/replication.md#source-failover)"))
	}
	return out
}

func checkpointStale(in *Input, th *Thresholds) []Finding {
	var out []Finding
	for _, ts := range in.Snap.Tasks {
		th2 := in.History.Tasks[ts.Name]
		r, read := in.Sources[ts.Name]
		if !desiredRunning(ts) || ts.LastCommit == nil || th2 == nil || !read || r.Err != "" {
			continue
		}
		c, ok := replication.CompareFilePositions(ts.LastCommit.Position(), r.Current())
		if !ok || c >= 0 {
			continue
		}
		age := in.Now.Sub(th2.CheckpointSince)
		if age <= th.CheckpointStale {
			continue
		}
		out = append(out, taskFinding(RuleCheckpointStale, Warning, ts,
			fmt.Sprintf("task %s's checkpoint has stayed at %s for %s while its source moved on to %s", ts.Name, ts.LastCommit.Position(), age.Round(time.Second), r.Current()),
			"see the task and its owner: shepherd ctl task show "+ts.Name))
	}
	return out
}

// checkpointFile returns the task's checkpoint and its source reading
// when both are known and comparable.
func checkpointFile(in *Input, ts core.TaskStatus) (file string, r SourceReading, ok bool) {
	if ts.LastCommit == nil || ts.LastCommit.File == "" {
		return "", r, false
	}
	r, read := in.Sources[ts.Name]
	if !read || r.Err != "" || len(r.Logs) == 0 {
		return "", r, false
	}
	if s := ts.LastCommit.Server; s != "" && r.Server != "" && s != r.Server {
		return "", r, false // another server's binlog: its file names say nothing of the checkpoint's
	}
	return ts.LastCommit.File, r, true
}

func binlogPurged(in *Input, _ *Thresholds) []Finding {
	var out []Finding
	for _, ts := range in.Snap.Tasks {
		file, r, ok := checkpointFile(in, ts)
		if !ok || r.Has(file) {
			continue
		}
		if c, ok := replication.CompareFilePositions(core.Position{File: file}, core.Position{File: r.Logs[0].Name}); !ok || c >= 0 {
			continue
		}
		out = append(out, taskFinding(RuleBinlogPurged, Critical, ts,
			fmt.Sprintf("task %s needs binary log %s, which source %s no longer has (oldest: %s): changes since its checkpoint are lost to it", ts.Name, file, r.Addr, r.Logs[0].Name),
			"the task cannot resume from its checkpoint: re-copy the target from the source, then recreate the task with start: current (shepherd ctl task rm, shepherd ctl task add; see docs/replication.md)"))
	}
	return out
}

func binlogPurgeRisk(in *Input, th *Thresholds) []Finding {
	var out []Finding
	for _, ts := range in.Snap.Tasks {
		file, r, ok := checkpointFile(in, ts)
		if !ok || !r.Has(file) || file == r.Current().File {
			continue // gone (BinlogPurged), or still being written: cannot be purged
		}
		why := ""
		if file == r.Logs[0].Name {
			why = "it is the source's oldest: the next PURGE BINARY LOGS or expiry removes it"
		}
		if r.ExpireSeconds > 0 {
			// Its modification time is at least when the task committed
			// in it and when it was last seen being written: it expires
			// no earlier than that plus the expiry period.
			written := ts.LastCommit.Time
			if h := in.History.Tasks[ts.Name]; h != nil && h.Current[file].After(written) {
				written = h.Current[file]
			}
			expires := written.Add(time.Duration(r.ExpireSeconds) * time.Second)
			if left := expires.Sub(in.Now); left < th.BinlogExpiryWindow {
				why = fmt.Sprintf("it may expire in %s (expiry %s)", max(left, 0).Round(time.Second), time.Duration(r.ExpireSeconds)*time.Second)
			}
		}
		if why == "" {
			continue
		}
		out = append(out, taskFinding(RuleBinlogPurgeRisk, Warning, ts,
			fmt.Sprintf("task %s's checkpoint needs binary log %s on %s: %s", ts.Name, file, r.Addr, why),
			fmt.Sprintf("start the task (shepherd ctl task start %s) so that it moves past %s, or keep binary logs longer on the source (binlog_expire_logs_seconds)", ts.Name, file)))
	}
	return out
}

// --- jobs ---

func jobFinding(rule string, sev Severity, js scheduler.JobStatus, summary, fix string) Finding {
	return Finding{Rule: rule, Severity: sev, Labels: map[string]string{"job": js.Name}, Summary: summary, Fix: fix}
}

// lastFinished returns the newest run with a result, if any.
func lastFinished(js scheduler.JobStatus) (scheduler.RunInfo, bool) {
	i := slices.IndexFunc(js.Runs, func(r scheduler.RunInfo) bool { return r.Result != nil })
	if i < 0 {
		return scheduler.RunInfo{}, false
	}
	return js.Runs[i], true
}

func jobLastStatus(in *Input, rule string, want ...scheduler.Status) []Finding {
	var out []Finding
	for _, js := range in.Snap.Jobs {
		r, ok := lastFinished(js)
		if !ok || !slices.Contains(want, r.Result.Status) {
			continue
		}
		res := r.Result
		summary := fmt.Sprintf("job %s run %s %s", js.Name, r.RunKey, res.Status)
		if res.Error != "" {
			summary += ": " + res.Error
		}
		fix := "see its output: shepherd ctl job logs " + js.Name
		sev := Critical
		if rule == RuleJobMissed {
			fix = "check that a scheduler ran at that time: shepherd ctl job list"
			sev = Warning
		}
		out = append(out, jobFinding(rule, sev, js, summary, fix))
	}
	return out
}

func jobFailed(in *Input, _ *Thresholds) []Finding {
	return jobLastStatus(in, RuleJobFailed, scheduler.Failed, scheduler.TimedOut, scheduler.Abandoned)
}

func jobMissed(in *Input, _ *Thresholds) []Finding {
	return jobLastStatus(in, RuleJobMissed, scheduler.Missed)
}

func jobTooLong(in *Input, th *Thresholds) []Finding {
	var out []Finding
	for _, js := range in.Snap.Jobs {
		limit := perJob(th.JobTooLong, th.JobTooLongPerJob, js.Name)
		if limit <= 0 {
			continue
		}
		for _, r := range js.Runs {
			// A run waiting for its upstream runs has not started: its
			// starting deadline bounds the wait.
			if !r.Running || r.Result != nil || r.Waiting != nil {
				continue
			}
			start, seen := runStart(in, r)
			if !seen {
				continue
			}
			if d := in.Now.Sub(start); d > limit {
				out = append(out, jobFinding(RuleJobTooLong, Warning, js,
					fmt.Sprintf("job %s run %s has run for %s, longer than %s", js.Name, r.RunKey, d.Round(time.Second), limit),
					"see it: shepherd ctl job show "+js.Name+"; a job timeout bounds its runs"))
				break
			}
		}
	}
	return out
}

// jobWaitingOnTask: a run waits on a freshness gate (after: task:…)
// whose task will not move by itself — stopped, failed, missing — so it
// will be missed at its deadline unless someone acts.
func jobWaitingOnTask(in *Input, _ *Thresholds) []Finding {
	var out []Finding
	for _, js := range in.Snap.Jobs {
		for _, r := range js.Runs { // newest first: one finding a job, its newest stuck run
			g, stuck := r.Waiting.StuckGate()
			if !stuck || r.Result != nil {
				continue
			}
			out = append(out, jobFinding(RuleJobWaitingOnTask, Warning, js,
				fmt.Sprintf("job %s run %s waits for %s", js.Name, r.RunKey, g),
				fmt.Sprintf("start or fix task %s (shepherd ctl task show %s); otherwise the run is missed at %s",
					g.Task, g.Task, r.Waiting.Until.UTC().Format(time.RFC3339))))
			break
		}
	}
	return out
}

// perJob is a job's own threshold if it has one, else def.
func perJob(def time.Duration, byJob map[string]time.Duration, job string) time.Duration {
	if d, ok := byJob[job]; ok {
		return d
	}
	return def
}

// runStart is when a running run started at the latest: when it was
// first seen running, or its scheduled time if its run key tells it (a
// key with a time of day; a date key only names the day).
func runStart(in *Input, r scheduler.RunInfo) (time.Time, bool) {
	start, seen := in.History.Running[runID(r)]
	if t, _, ok := scheduler.ParseRunKey(r.RunKey); ok && strings.Contains(r.RunKey, "T") && (!seen || t.Before(start)) {
		start, seen = t, true
	}
	return start, seen
}

func jobNoSuccess(in *Input, th *Thresholds) []Finding {
	var out []Finding
	for _, js := range in.Snap.Jobs {
		window := perJob(th.JobNoSuccess, th.JobNoSuccessPerJob, js.Name)
		if js.Paused || window <= 0 || len(js.Runs) == 0 {
			continue
		}
		since := in.Now.Add(-window)
		succeeded, oldest := false, time.Time{}
		for _, r := range js.Runs {
			if r.Result == nil {
				continue
			}
			when := cmp.Or(r.Result.End, r.Result.Scheduled)
			if r.Result.Status == scheduler.Succeeded && when.After(since) {
				succeeded = true
				break
			}
			if oldest.IsZero() || when.Before(oldest) {
				oldest = when
			}
		}
		// A job younger than the window has had no chance yet.
		if succeeded || oldest.IsZero() || oldest.After(since) {
			continue
		}
		out = append(out, jobFinding(RuleJobNoSuccess, Critical, js,
			fmt.Sprintf("job %s has not succeeded in %s", js.Name, window),
			"see its runs: shepherd ctl job show "+js.Name))
	}
	return out
}

// --- collectors ---

func collectorDead(in *Input, _ *Thresholds) []Finding {
	var out []Finding
	for _, c := range in.Snap.Collectors {
		if c.Alive || c.Leaving {
			continue
		}
		out = append(out, Finding{Rule: RuleCollectorDead, Severity: Critical, Labels: map[string]string{"collector": c.Name},
			Summary: fmt.Sprintf("collector %s is dead: %s", c.Name, c.Reason),
			Fix:     "restart it; the assigner moves its sources to live collectors meanwhile"})
	}
	return out
}

func sourceUnassigned(in *Input, _ *Thresholds) []Finding {
	var out []Finding
	for _, s := range in.Snap.Sources {
		if s.Collector != "" {
			continue
		}
		out = append(out, Finding{Rule: RuleSourceUnassigned, Severity: Warning, Labels: map[string]string{"source": s.URI},
			Summary: fmt.Sprintf("log source %s is collected by nobody", s.URI),
			Fix:     "start a collector with --assign, or a live collector that can read it"})
	}
	return out
}

func collectorLagging(in *Input, th *Thresholds) []Finding {
	var out []Finding
	for _, c := range in.Snap.Collectors {
		if !c.Alive || th.CollectorLagBytes <= 0 || c.Lag <= th.CollectorLagBytes {
			continue
		}
		out = append(out, Finding{Rule: RuleCollectorLagging, Severity: Warning, Labels: map[string]string{"collector": c.Name},
			Summary: fmt.Sprintf("collector %s is %d bytes behind its %d sources", c.Name, c.Lag, len(c.Sources)),
			Fix:     "add collectors (the assigner spreads sources) or find what slows it"})
	}
	return out
}

// --- coordination ---

func coordUnhealthy(in *Input, th *Thresholds) []Finding {
	var out []Finding
	for _, s := range in.Snap.Coord {
		var why []string
		switch {
		case !s.OK:
			why = append(why, "unreachable: "+cmp.Or(s.Error, "no answer"))
		default:
			if th.CoordOutstanding > 0 && s.Outstanding > th.CoordOutstanding {
				why = append(why, fmt.Sprintf("%d outstanding requests (limit %d)", s.Outstanding, th.CoordOutstanding))
			}
			if th.CoordAvgLatencyMs > 0 && s.Latency.Avg > th.CoordAvgLatencyMs {
				why = append(why, fmt.Sprintf("average latency %.1f ms (limit %.0f)", s.Latency.Avg, th.CoordAvgLatencyMs))
			}
			if th.CoordZnodes > 0 && s.Znodes > th.CoordZnodes {
				why = append(why, fmt.Sprintf("%d znodes (limit %d)", s.Znodes, th.CoordZnodes))
			}
			if th.CoordWatches > 0 && s.Watches > th.CoordWatches {
				why = append(why, fmt.Sprintf("%d watches (limit %d)", s.Watches, th.CoordWatches))
			}
		}
		if len(why) == 0 {
			continue
		}
		sev := Warning
		if !s.OK {
			sev = Critical
		}
		out = append(out, Finding{Rule: RuleCoordUnhealthy, Severity: sev, Labels: map[string]string{"server": s.Addr},
			Summary: "coordination server " + s.Addr + ": " + strings.Join(why, "; "),
			Fix:     "see docs/deploy.md; shepherd ctl --zk " + s.Addr + " 4lw srvr"})
	}
	return out
}

// --- the monitors themselves ---

func monitorStandbyOnly(in *Input, _ *Thresholds) []Finding {
	if !in.NoActiveMonitor {
		return nil
	}
	return []Finding{{Rule: RuleMonitorStandbyOnly, Severity: Critical, Labels: map[string]string{},
		Summary: "no monitor is active: " + in.ActiveMonitorStatus + "; alerts other than this one are not sent",
		Fix:     "see the logs of the monitor that leads the election (shepherd ctl alert list shows which and its last evaluation)"}}
}

// serviceNoHealthyAddress finds the registry's names that DNS answers
// with no address: none registered (every provider gone), or every one
// unhealthy, blocked or refused.
func serviceNoHealthyAddress(in *Input, _ *Thresholds) []Finding {
	var out []Finding
	for _, s := range in.Snap.Services {
		if s.Served > 0 {
			continue
		}
		summary := fmt.Sprintf("name %s of application %s has no address registered", s.Domain, s.App)
		if n := len(s.Addresses); n > 0 {
			summary = fmt.Sprintf("name %s of application %s has no healthy, unblocked address (%d registered)", s.Domain, s.App, n)
		}
		out = append(out, Finding{Rule: RuleServiceNoHealthyAddress, Severity: Critical, Labels: map[string]string{"app": s.App, "domain": s.Domain},
			Summary: summary,
			Fix:     "see shepherd ctl service list: start or fix its providers, or unblock an address; delete the name's node if it is no longer used"})
	}
	return out
}
