package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/shepherd-dev/shepherd/internal/duration"
)

// Policy is what a run does when an earlier run of the same job is still
// running, as Kubernetes CronJob's concurrencyPolicy.
type Policy string

// Concurrency policies.
const (
	// Allow runs overlap.
	Allow Policy = "allow"
	// Forbid skips the new run (its result says "skipped").
	Forbid Policy = "forbid"
	// Replace stops the running run (its result says "replaced") and
	// starts the new one.
	Replace Policy = "replace"
)

// Defaults applied to a job's zero fields.
const (
	DefaultHistoryLimit = 10
	DefaultRetryBackoff = 10 * time.Second
	// DefaultLateGrace is how late a scheduler may fire a run when the job
	// has no StartingDeadline before the run counts as missed: a process
	// stalled for longer must not start yesterday's run by surprise.
	DefaultLateGrace = time.Minute
	// DefaultUpstreamWait is how late a run of a job with After and no
	// StartingDeadline may start: how long it waits for its upstream
	// runs before it is recorded missed.
	DefaultUpstreamWait = 24 * time.Hour
	// MaxTakeovers is how many times a run is taken over after its master
	// died, beyond the job's retries: a job that kills its host every
	// time must not kill the whole cluster one host at a time.
	MaxTakeovers = 3
)

// Job is one scheduled job. It is the YAML of a jobs file entry and the
// JSON of /scheduler/jobs/<job>.
type Job struct {
	// Version is the schema version of the stored JSON.
	Version int `json:"version" yaml:"version,omitempty"`
	// Name names the job: letters, digits, '.', '_' and '-'.
	Name string `json:"name" yaml:"name"`
	// Schedule is a cron expression: 5 fields (minute first) or 6
	// (seconds first), a descriptor (@daily, @hourly, @every 90s …),
	// optionally prefixed by CRON_TZ=<zone>.
	Schedule string `json:"schedule" yaml:"schedule"`
	// TimeZone is the IANA zone the schedule and run keys are read in;
	// empty means UTC.
	TimeZone string `json:"timeZone,omitempty" yaml:"timeZone,omitempty"`
	// Command and Args are the program run; exactly one of Command and
	// Func is set.
	Command string   `json:"command,omitempty" yaml:"command,omitempty"`
	Args    []string `json:"args,omitempty" yaml:"args,omitempty"`
	// Func names a Go function registered with Scheduler.RegisterFunc.
	Func string `json:"func,omitempty" yaml:"func,omitempty"`
	// HTTP is a request to make instead of a command (HTTPRequest); a
	// scheduler makes it only to a host on its --http-allow list.
	HTTP *HTTPRequest `json:"http,omitempty" yaml:"http,omitempty"`
	// Env is added to the scheduler's environment for the command.
	Env map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	// Dir is the command's working directory; empty: the scheduler's.
	Dir string `json:"dir,omitempty" yaml:"dir,omitempty"`
	// Timeout bounds one attempt; the command's whole process group is
	// killed when it passes. Zero: no bound.
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// Retries is how many times a failed attempt is retried.
	Retries int `json:"retries,omitempty" yaml:"retries,omitempty"`
	// RetryBackoff is the wait before the first retry, doubled for each
	// further one. Zero: DefaultRetryBackoff.
	RetryBackoff Duration `json:"retryBackoff,omitempty" yaml:"retryBackoff,omitempty"`
	// ConcurrencyPolicy is allow (the default), forbid or replace.
	ConcurrencyPolicy Policy `json:"concurrencyPolicy,omitempty" yaml:"concurrencyPolicy,omitempty"`
	// StartingDeadline is how late a run may start: a run missed while
	// every scheduler was down is run once by the first scheduler back
	// within this long of its scheduled time, and recorded as missed
	// after. Zero: missed runs are only recorded, and a run fired more
	// than DefaultLateGrace late is missed.
	StartingDeadline Duration `json:"startingDeadline,omitempty" yaml:"startingDeadline,omitempty"`
	// HistoryLimit is how many finished runs are kept under
	// /master_election/<job>. Zero: DefaultHistoryLimit.
	HistoryLimit int `json:"historyLimit,omitempty" yaml:"historyLimit,omitempty"`
	// After lists the jobs whose run of the same run key must have ended
	// before a run of this job starts, as WhenUpstream says. Until then
	// the run is waiting (RunInfo.Waiting), for at most its starting
	// deadline (lateLimit).
	After []Dependency `json:"after,omitempty" yaml:"after,omitempty"`
	// WhenUpstream is how the upstream runs must have ended for a run to
	// start: succeeded (the default: all of them), failed (at least one
	// did not succeed) or any. Otherwise the run is recorded Blocked.
	WhenUpstream Condition `json:"whenUpstream,omitempty" yaml:"whenUpstream,omitempty"`
	// Shards, from 2 to MaxShards, splits each run into items 0..Shards-1
	// spread over the schedulers that settle the run, each executed once
	// (SHEPHERD_SHARD, SHEPHERD_SHARDS); the run succeeds when every item
	// does. 0 or 1: not sharded.
	Shards int `json:"shards,omitempty" yaml:"shards,omitempty"`
	// NodeSelector names labels (Options.Labels) a scheduler must all
	// have, with these values, to fire the job. Empty: every scheduler.
	NodeSelector map[string]string `json:"nodeSelector,omitempty" yaml:"nodeSelector,omitempty"`
	// Routing says which of the schedulers that fire the job runs a run:
	// any (the default: the first to be elected) or spread (the runs go
	// round them).
	Routing Routing `json:"routing,omitempty" yaml:"routing,omitempty"`
}

// Dependency is one entry of Job.After: an upstream job, or a
// replication task whose target must be fresh (a freshness gate). Exactly
// one of Job and Task is set.
type Dependency struct {
	// Job names the upstream job: its run of the same run key.
	Job string `json:"job,omitempty" yaml:"job,omitempty"`
	// Task names a replication task: the run starts only once the task's
	// target holds everything its source committed up to CaughtUpTo.
	Task string `json:"task,omitempty" yaml:"task,omitempty"`
	// CaughtUpTo is the time the target must be fresh to: "scheduled"
	// (the default: the run's scheduled time) or "scheduled+D" /
	// "scheduled-D" with D a Go duration ("scheduled+5m").
	CaughtUpTo string `json:"caughtUpTo,omitempty" yaml:"caughtUpTo,omitempty"`
}

// CaughtUpToScheduled is Dependency.CaughtUpTo's default and base.
const CaughtUpToScheduled = "scheduled"

// ParseCaughtUpTo returns the offset from the scheduled time that a
// Dependency.CaughtUpTo names.
func ParseCaughtUpTo(s string) (time.Duration, error) {
	rest, ok := strings.CutPrefix(s, CaughtUpToScheduled)
	switch {
	case s == "":
		return 0, nil
	case !ok:
		return 0, fmt.Errorf("%q: want scheduled, scheduled+D or scheduled-D (D a duration such as 5m)", s)
	case rest == "":
		return 0, nil
	case rest[0] != '+' && rest[0] != '-':
		return 0, fmt.Errorf("%q: want scheduled, scheduled+D or scheduled-D (D a duration such as 5m)", s)
	}
	d, err := time.ParseDuration(rest[1:])
	if err != nil || d < 0 || strings.HasPrefix(rest[1:], "+") || strings.HasPrefix(rest[1:], "-") {
		return 0, fmt.Errorf("%q: %q is not a duration such as 5m", s, rest[1:])
	}
	if rest[0] == '-' {
		d = -d
	}
	return d, nil
}

// taskPrefix starts a freshness gate written as text (ParseDependency).
const taskPrefix = "task:"

// ParseDependency reads a Dependency as String writes it, the form ctl's
// --after and the console's form take: "extract" (a job),
// "task:copy_hot_item" (a gate to the scheduled time) or
// "task:copy_hot_item@scheduled+5m". Names are checked with the job.
func ParseDependency(s string) (Dependency, error) {
	s = strings.TrimSpace(s)
	name, ok := strings.CutPrefix(s, taskPrefix)
	if !ok {
		return Dependency{Job: s}, nil
	}
	task, at, hasAt := strings.Cut(name, "@")
	if hasAt && at == "" {
		return Dependency{}, fmt.Errorf("%w: after %q: nothing after @: want task:NAME@scheduled+D", ErrInvalidJob, s)
	}
	if _, err := ParseCaughtUpTo(at); err != nil {
		return Dependency{}, fmt.Errorf("%w: after: %v", ErrInvalidJob, err)
	}
	return Dependency{Task: task, CaughtUpTo: at}, nil
}

// String writes d as ParseDependency reads it.
func (d Dependency) String() string {
	switch {
	case d.Task == "":
		return d.Job
	case d.CaughtUpTo == "":
		return taskPrefix + d.Task
	}
	return taskPrefix + d.Task + "@" + d.CaughtUpTo
}

// upstreamJobs are the jobs of After, in order.
func (j *Job) upstreamJobs() []string {
	var out []string
	for _, d := range j.After {
		if d.Job != "" {
			out = append(out, d.Job)
		}
	}
	return out
}

// gates are the freshness gates of After, in order.
func (j *Job) gates() []Dependency {
	var out []Dependency
	for _, d := range j.After {
		if d.Task != "" {
			out = append(out, d)
		}
	}
	return out
}

// Condition is Job.WhenUpstream.
type Condition string

// Conditions on the upstream runs of a job with After.
const (
	// UpstreamSucceeded: every upstream run succeeded.
	UpstreamSucceeded Condition = "succeeded"
	// UpstreamFailed: every upstream run ended and one at least did not
	// succeed (a clean-up or alerting job).
	UpstreamFailed Condition = "failed"
	// UpstreamAny: every upstream run ended, however.
	UpstreamAny Condition = "any"
)

// MaxUpstream bounds Job.After.
const MaxUpstream = 32

// Duration is a time.Duration written as Go writes durations ("90s",
// "1h30m") in YAML and JSON.
type Duration = duration.Duration

// jobsFile is the YAML document given to --jobs.
type jobsFile struct {
	Jobs []Job `yaml:"jobs"`
}

// ParseJobs reads a jobs file — a YAML document with a "jobs" list — and
// validates every job. Errors name the job and field.
func ParseJobs(data []byte) ([]Job, error) {
	var f jobsFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: jobs file: %v", ErrInvalidJob, err)
	}
	seen := map[string]bool{}
	for i := range f.Jobs {
		j := &f.Jobs[i]
		if err := j.Validate(); err != nil {
			return nil, fmt.Errorf("jobs[%d]: %w", i, err)
		}
		if seen[j.Name] {
			return nil, fmt.Errorf("%w: jobs[%d]: name %q is used twice", ErrInvalidJob, i, j.Name)
		}
		seen[j.Name] = true
	}
	if err := CheckCycles(f.Jobs); err != nil {
		return nil, err
	}
	return f.Jobs, nil
}

// DecodeJob reads a stored job's JSON and validates it.
func DecodeJob(data []byte) (Job, error) {
	var j Job
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return Job{}, fmt.Errorf("%w: %v", ErrInvalidJob, err)
	}
	return j, j.Validate()
}

// Encode returns the job's stored JSON.
func (j Job) Encode() []byte {
	j.Version = 1
	b, _ := json.MarshalIndent(j, "", "  ") // a Job always marshals
	return b
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// Validate checks the job; the error names the job and the first bad field.
func (j *Job) Validate() error {
	_, err := compile(*j)
	return err
}

// plan is a validated job with its schedule compiled.
type plan struct {
	Job
	sched cron.Schedule
	loc   *time.Location
	daily bool // at most one run per local date: run keys are dates
}

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func compile(j Job) (*plan, error) {
	bad := func(field, format string, args ...any) (*plan, error) {
		return nil, fmt.Errorf("%w: job %q: %s: %s", ErrInvalidJob, j.Name, field, fmt.Sprintf(format, args...))
	}
	if !namePattern.MatchString(j.Name) || j.Name == "." || j.Name == ".." {
		return bad("name", "want 1-128 letters, digits, '.', '_' or '-', not starting with '.' or '-'")
	}
	expr := strings.TrimSpace(j.Schedule)
	zone := j.TimeZone
	for _, pre := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(expr, pre); ok {
			z, e, _ := strings.Cut(rest, " ")
			if zone != "" && zone != z {
				return bad("schedule", "zone %s conflicts with timeZone %s", z, zone)
			}
			zone, expr = z, strings.TrimSpace(e)
		}
	}
	if expr == "" {
		return bad("schedule", "empty: want a cron expression such as \"0 3 * * *\" or \"@daily\"")
	}
	loc := time.UTC
	if zone != "" {
		var err error
		if loc, err = time.LoadLocation(zone); err != nil {
			return bad("timeZone", "unknown zone %q: want an IANA name such as Europe/Paris", zone)
		}
	}
	sched, err := cronParser.Parse(expr)
	if err != nil {
		return bad("schedule", "%q: %v (want 5 fields, 6 with seconds first, or @daily/@every 1h…)", j.Schedule, err)
	}
	switch s := sched.(type) {
	case cron.ConstantDelaySchedule:
		// Each process would count @every from its own start; anchor it
		// to the epoch so that every scheduler fires at the same times.
		sched = anchoredEvery{s.Delay}
	case *cron.SpecSchedule:
		s.Location = loc
	}
	switch {
	case j.Command == "" && j.Func == "" && j.HTTP == nil:
		return bad("command", "missing: set command (a program), func (a registered Go function) or http (a URL to call)")
	case j.Command != "" && j.Func != "":
		return bad("func", "set either command or func, not both")
	case j.HTTP != nil && (j.Command != "" || j.Func != ""):
		return bad("http", "set one of command, func and http")
	case j.Func != "" && (len(j.Args) > 0 || len(j.Env) > 0 || j.Dir != ""):
		return bad("func", "args, env and dir apply to commands only")
	case j.HTTP != nil && (len(j.Args) > 0 || len(j.Env) > 0 || j.Dir != ""):
		return bad("http", "args, env and dir apply to commands only (an HTTP job's headers are http.headers)")
	case j.Timeout < 0:
		return bad("timeout", "negative")
	case j.Retries < 0:
		return bad("retries", "negative")
	case j.RetryBackoff < 0:
		return bad("retryBackoff", "negative")
	case j.StartingDeadline < 0:
		return bad("startingDeadline", "negative")
	case j.HistoryLimit < 0:
		return bad("historyLimit", "negative")
	case j.Shards < 0 || j.Shards > MaxShards:
		return bad("shards", "%d: want 0 (not sharded) to %d", j.Shards, MaxShards)
	}
	switch j.ConcurrencyPolicy {
	case "", Allow, Forbid, Replace:
	default:
		return bad("concurrencyPolicy", "%q: want allow, forbid or replace", j.ConcurrencyPolicy)
	}
	switch j.Routing {
	case "", RouteAny, RouteSpread:
	default:
		return bad("routing", "%q: want any or spread", j.Routing)
	}
	if err := checkLabels("nodeSelector", j.NodeSelector); err != nil {
		return nil, fmt.Errorf("%w: job %q: %v", ErrInvalidJob, j.Name, err)
	}
	for k := range j.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return bad("env", "bad variable name %q", k)
		}
	}
	if err := checkAfter(j); err != nil {
		return nil, err
	}
	if j.HTTP != nil {
		if field, err := j.HTTP.check(); err != nil {
			return bad(field, "%v", err)
		}
	}
	p := &plan{Job: j, sched: sched, loc: loc}
	if p.ConcurrencyPolicy == "" {
		p.ConcurrencyPolicy = Allow
	}
	if p.WhenUpstream == "" {
		p.WhenUpstream = UpstreamSucceeded
	}
	if p.HistoryLimit == 0 {
		p.HistoryLimit = DefaultHistoryLimit
	}
	if p.RetryBackoff == 0 {
		p.RetryBackoff = Duration(DefaultRetryBackoff)
	}
	if next := sched.Next(time.Now()); next.IsZero() {
		return bad("schedule", "%q never fires", j.Schedule)
	}
	p.daily = isDaily(sched, loc)
	return p, nil
}

// next returns the n fire times after t.
func (p *plan) next(t time.Time, n int) []time.Time {
	var out []time.Time
	for t = p.sched.Next(t); !t.IsZero() && len(out) < n; t = p.sched.Next(t) {
		out = append(out, t)
	}
	return out
}

// RedactedValue stands for an environment value (or an HTTP job's header
// value) of a stored job in what readers show (JobStatus): they may carry
// secrets.
const RedactedValue = "***"

// Redacted returns the job with every environment value replaced by
// RedactedValue (those a scheduler published as RedactedEnv stay so).
func (j Job) Redacted() Job {
	return j.withEnv(func(v string) string {
		if v == RedactedEnv {
			return v
		}
		return RedactedValue
	})
}

// withEnv returns the job with each environment value v replaced by
// value(v), in a map of its own.
func (j Job) withEnv(value func(string) string) Job {
	if j.HTTP != nil && len(j.HTTP.Headers) > 0 {
		h := *j.HTTP
		h.Headers = make(map[string]string, len(j.HTTP.Headers))
		for k, v := range j.HTTP.Headers {
			h.Headers[k] = value(v)
		}
		j.HTTP = &h
	}
	if len(j.Env) == 0 {
		return j
	}
	env := make(map[string]string, len(j.Env))
	for k, v := range j.Env {
		env[k] = value(v)
	}
	j.Env = env
	return j
}

// anchoredEvery is @every counted from the Unix epoch.
type anchoredEvery struct{ d time.Duration }

func (a anchoredEvery) Next(t time.Time) time.Time {
	return t.Truncate(a.d).Add(a.d)
}

// isDaily reports whether a schedule never fires twice on one local date,
// judged over its next 16 activations.
func isDaily(s cron.Schedule, loc *time.Location) bool {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Add(-time.Nanosecond)
	seen := map[string]bool{}
	for range 16 {
		t = s.Next(t)
		if t.IsZero() {
			return true
		}
		d := t.In(loc).Format(time.DateOnly)
		if seen[d] {
			return false
		}
		seen[d] = true
	}
	return true
}

// RunKeyLayout is the format of every run key that is not a date: the
// date and time in the job's zone, a fraction of a second only when it is
// not zero, and the zone offset (Z for UTC, else ±hhmm, so that the
// repeated hour at the end of daylight saving time does not reuse a key).
// A sub-daily run is 2026-11-22T15:04:05+0800 (or 2026-11-25T12:56:48Z in
// UTC); a manual run is "manual-" and its request time in UTC,
// manual-2026-11-25T13:01:27.405Z. Jobs that fire at most once a day are
// keyed by the local date alone, as the seeds' 2026-11-22.
const RunKeyLayout = "2006-01-02T15:04:05.999Z0700"

// ManualPrefix starts the key of a run asked for by Trigger.
const ManualPrefix = "manual-"

// legacyManualLayout is how manual run keys were written before they
// took RunKeyLayout (manual-20261125T130127.405Z); such runs may still
// be in a cluster's history.
const legacyManualLayout = "20060102T150405.000Z"

// RunKey returns the run key of the run scheduled at t: the local date
// for jobs that run at most daily (as the seeds' 2026-11-22), the local
// time in RunKeyLayout otherwise.
func (p *plan) RunKey(t time.Time) string {
	if p.daily {
		return t.In(p.loc).Format(time.DateOnly)
	}
	return t.In(p.loc).Format(RunKeyLayout)
}

// ParseRunKey reads the time a run key names and whether the run is a
// manual one. It reads every format Shepherd has written: dates (the
// time is midnight UTC of that date), RunKeyLayout, and the older manual
// keys. ok is false for a key in none of them.
func ParseRunKey(key string) (t time.Time, manual, ok bool) {
	rest, manual := strings.CutPrefix(key, ManualPrefix)
	for _, layout := range []string{RunKeyLayout, time.DateOnly, legacyManualLayout} {
		if t, err := time.Parse(layout, rest); err == nil {
			return t, manual, true
		}
	}
	return time.Time{}, manual, false
}

// attemptTimeout bounds one attempt: the job's timeout, else
// DefaultHTTPTimeout for an HTTP job; 0: no bound.
func (p *plan) attemptTimeout() time.Duration {
	if p.Timeout == 0 && p.HTTP != nil {
		return DefaultHTTPTimeout
	}
	return p.Timeout.D()
}

// lateLimit is how late a run may start: its first attempt, after it
// waited for its upstream runs if it has any.
func (p *plan) lateLimit() time.Duration {
	switch {
	case p.StartingDeadline > 0:
		return p.StartingDeadline.D()
	case len(p.After) > 0:
		return DefaultUpstreamWait
	}
	return DefaultLateGrace
}
