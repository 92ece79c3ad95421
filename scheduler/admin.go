package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Admin manages jobs in the coordination tree: the operations behind
// `shepherd ctl job …`, the console and the monitor's reads. Every call
// retries the coordination server's transient errors (Session.Retry).
type Admin struct {
	s *recipe.Session
}

// NewAdmin returns an Admin of the jobs stored through s.
func NewAdmin(s *recipe.Session) *Admin { return &Admin{s: s} }

// StoreJob validates j and writes it to /scheduler/jobs/<name>, replacing
// a stored job of that name. Every scheduler picks it up.
func (a *Admin) StoreJob(ctx context.Context, j Job) error {
	if err := j.Validate(); err != nil {
		return err
	}
	if err := a.CheckGraph(ctx, j); err != nil {
		return err
	}
	s, data := a.s, j.Encode()
	return s.Retry(ctx, func() error {
		if err := s.EnsurePath(ctx, JobsPath); err != nil {
			return err
		}
		_, err := s.Create(ctx, JobPath(j.Name), data, zk.FlagPersistent, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = s.Set(ctx, JobPath(j.Name), data, -1)
		}
		return err
	})
}

// nodeName reports whether name is a node's name in /scheduler/jobs and
// /master_election, and not a path to another node (a name from a URL).
// Only that: a stored job of a bad name is read, and refused by the
// decoder, so that readers show why.
func nodeName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.Contains(name, "/")
}

// AnyVersion is the version of an unconditional UpdateJob.
const AnyVersion int32 = -1

// CreateJob validates j and stores it at /scheduler/jobs/<name> unless a
// job of that name is stored already (ErrJobExists): the console's "New
// job", which must not replace a job by accident as StoreJob does.
func (a *Admin) CreateJob(ctx context.Context, j Job) error {
	if err := j.Validate(); err != nil {
		return err
	}
	if err := a.CheckGraph(ctx, j); err != nil {
		return err
	}
	s, data, tries := a.s, j.Encode(), 0
	err := s.Retry(ctx, func() error {
		tries++
		if err := s.EnsurePath(ctx, JobsPath); err != nil {
			return err
		}
		_, err := s.Create(ctx, JobPath(j.Name), data, zk.FlagPersistent, nil)
		if errors.Is(err, zk.ErrNodeExists) && tries > 1 {
			// Our own create whose reply was lost, or another job.
			if got, _, gerr := s.Get(ctx, JobPath(j.Name)); gerr == nil && bytes.Equal(got, data) {
				return nil
			}
		}
		return err
	})
	if errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("%w: %q is stored in %s already: edit it, or remove it first", ErrJobExists, j.Name, JobsPath)
	}
	return err
}

// UpdateJob validates j and replaces the stored job of its name if its
// node is still at version (AnyVersion: whatever it is):
// ErrVersionConflict if it changed since, ErrNoSuchJob if it is not
// stored.
func (a *Admin) UpdateJob(ctx context.Context, j Job, version int32) error {
	if err := j.Validate(); err != nil {
		return err
	}
	if err := a.CheckGraph(ctx, j); err != nil {
		return err
	}
	s, data, tries := a.s, j.Encode(), 0
	err := s.Retry(ctx, func() error {
		tries++
		_, err := s.Set(ctx, JobPath(j.Name), data, version)
		if errors.Is(err, zk.ErrBadVersion) && tries > 1 {
			// Our own set whose reply was lost moved the version on.
			if got, st, gerr := s.Get(ctx, JobPath(j.Name)); gerr == nil && bytes.Equal(got, data) && st.Version == version+1 {
				return nil
			}
		}
		return err
	})
	switch {
	case errors.Is(err, zk.ErrBadVersion):
		return fmt.Errorf("%w: job %s is no longer at version %d: read it again", ErrVersionConflict, j.Name, version)
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%w: %q is not stored in %s", ErrNoSuchJob, j.Name, JobsPath)
	}
	return err
}

// LoadJob reads one stored job: ErrNoSuchJob if it is not stored,
// ErrInvalidJob if it does not decode or names another job.
func (a *Admin) LoadJob(ctx context.Context, name string) (Job, error) {
	j, _, err := a.JobVersion(ctx, name)
	return j, err
}

// JobVersion is LoadJob with the version of the job's node, for
// conditional updates (the console's ETag); a refused job comes with its
// version and ErrInvalidJob.
func (a *Admin) JobVersion(ctx context.Context, name string) (Job, int32, error) {
	if !nodeName(name) {
		return Job{}, 0, fmt.Errorf("%w: %q is not a job name", ErrNoSuchJob, name)
	}
	data, st, err := a.s.Retrying().Get(ctx, JobPath(name))
	if errors.Is(err, zk.ErrNoNode) {
		return Job{}, 0, fmt.Errorf("%w: %q is not stored in %s", ErrNoSuchJob, name, JobsPath)
	}
	if err != nil {
		return Job{}, 0, err
	}
	j, err := decodeStoredJob(name, data)
	return j, st.Version, err
}

// decodeStoredJob is the one decoder of /scheduler/jobs/<name>, used by
// the scheduler and by every reader: a job whose stored name is not its
// node's name is refused, since the scheduler would otherwise fire it
// under one name and record its runs under the other.
func decodeStoredJob(name string, data []byte) (Job, error) {
	j, err := DecodeJob(data)
	if err != nil {
		return Job{}, fmt.Errorf("%w (stored at %s)", err, JobPath(name))
	}
	if j.Name != name {
		return Job{}, fmt.Errorf("%w: stored at %s but named %q: store it again under its name (shepherd ctl job add) and remove this one (shepherd ctl job rm %s)",
			ErrInvalidJob, JobPath(name), j.Name, name)
	}
	return j, nil
}

// RemoveJob deletes a stored job and its paused flag; its run history
// stays until deleted with the runs.
func (a *Admin) RemoveJob(ctx context.Context, name string) error {
	err := a.s.Retry(ctx, func() error { return a.s.Delete(ctx, JobPath(name), -1) })
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %q is not stored in %s", ErrNoSuchJob, name, JobsPath)
	}
	if err != nil {
		return err
	}
	return a.SetPaused(ctx, name, false)
}

// SetPaused pauses or resumes a job (stored or from a jobs file) on every
// scheduler. A paused job does not fire; when resumed, the runs it missed
// are caught up as after a downtime (StartingDeadline).
func (a *Admin) SetPaused(ctx context.Context, name string, paused bool) error {
	s, p := a.s, PausedPath+"/"+name
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%w: job name %q", ErrInvalidJob, name)
	}
	return s.Retry(ctx, func() error {
		if !paused {
			err := s.Delete(ctx, p, -1)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			return err
		}
		if err := s.EnsurePath(ctx, PausedPath); err != nil {
			return err
		}
		_, err := s.Create(ctx, p, nil, zk.FlagPersistent, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
}

// Paused reports whether a job is paused.
func (a *Admin) Paused(ctx context.Context, name string) (bool, error) {
	ok, _, err := a.s.Retrying().Exists(ctx, PausedPath+"/"+name)
	return ok, err
}

// Trigger asks the schedulers to run a job now, as a run of its own with
// key "manual-<UTC time>" (RunKeyLayout, e.g.
// manual-2026-11-25T13:01:27.405Z), and returns that key. It runs once,
// on one scheduler that knows the job, whether or not the job is paused.
func (a *Admin) Trigger(ctx context.Context, name string, now time.Time) (string, error) {
	return a.TriggerRun(ctx, name, now, RunRequest{})
}

// RunRequest is what a run-now asks for besides the job.
type RunRequest struct {
	// RunKey, if set, is the key of the run asked for, in the format of
	// the job's scheduled runs (a date, or RunKeyLayout): a backfill, or
	// a run ahead of its schedule. Like a scheduled run it waits for the
	// runs of that key of its upstream jobs (Job.After). A run that has
	// a result is never run again (ErrRunDone). Empty: a run of its own,
	// "manual-<UTC time>", which waits for no upstream run.
	RunKey string
	// Params are the run's parameters, passed to the command as
	// SHEPHERD_PARAM_<name> and recorded in its result (ValidateParams
	// bounds them). They are stored in the coordination tree as the
	// trigger and the result are: no secrets.
	Params map[string]string
}

// TriggerRun is Trigger with a RunRequest.
func (a *Admin) TriggerRun(ctx context.Context, name string, now time.Time, req RunRequest) (string, error) {
	if !namePattern.MatchString(name) {
		return "", fmt.Errorf("%w: job name %q", ErrInvalidJob, name)
	}
	if err := ValidateParams(req.Params); err != nil {
		return "", err
	}
	s, key := a.s, ManualPrefix+now.UTC().Format(RunKeyLayout)
	if req.RunKey != "" {
		if _, manual, ok := ParseRunKey(req.RunKey); !ok || manual {
			return "", fmt.Errorf("%w: run key %q: want a date (2026-11-22) or a time in %s (2026-11-22T03:00:00Z), as the job's scheduled runs", ErrInvalidJob, req.RunKey, RunKeyLayout)
		}
		key = req.RunKey
		r, done, err := readResult(ctx, s, name, key)
		if err != nil {
			return "", err
		}
		if done {
			return "", fmt.Errorf("%w: job %s run %s ended %s; a run is never run again (shepherd ctl job show %s)", ErrRunDone, name, key, r.Status, name)
		}
	}
	data := []byte(now.Format(time.RFC3339Nano))
	if len(req.Params) > 0 {
		// A document: schedulers of versions before parameters read
		// no time in it and run the job without them, at once.
		data, _ = json.Marshal(triggerDoc{Version: 1, Scheduled: now, Params: req.Params})
	}
	err := s.Retry(ctx, func() error {
		if err := s.EnsurePath(ctx, TriggersPath); err != nil {
			return err
		}
		_, err := s.Create(ctx, TriggersPath+"/"+name+"@"+key, data, zk.FlagPersistent, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil // our own create, whose reply was lost
		}
		return err
	})
	return key, err
}

// ReadResult returns a run's result; found is false if it has none yet.
func (a *Admin) ReadResult(ctx context.Context, job, key string) (r Result, found bool, err error) {
	return readResult(ctx, a.s, job, key)
}

// ReadItemResult reads the result of item item of a sharded run: its
// output and log file, which the run's result sums up without. found is
// false while the item has none, or once the run left the history.
func (a *Admin) ReadItemResult(ctx context.Context, job, key string, item int) (r Result, found bool, err error) {
	return readUnitResult(ctx, a.s, unit{job: job, key: key, item: item})
}

// Runs lists a job's runs with their results (nil while running or never
// run), oldest first by scheduled time.
func (a *Admin) Runs(ctx context.Context, job string) ([]RunInfo, error) {
	return listRuns(ctx, a.s, job)
}

// Schedulers returns what the running schedulers publish (SchedulerInfo),
// sorted by host and pid. A node that does not decode is skipped: it is
// only informative.
func (a *Admin) Schedulers(ctx context.Context) ([]SchedulerInfo, error) {
	ms, err := recipe.Members(ctx, a.s, SchedulersPath)
	if err != nil {
		return nil, err
	}
	out := make([]SchedulerInfo, 0, len(ms))
	for _, m := range ms {
		var in SchedulerInfo
		if json.Unmarshal(m.Data, &in) == nil && in.Host != "" {
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b SchedulerInfo) int {
		if c := strings.Compare(a.Host, b.Host); c != 0 {
			return c
		}
		return a.PID - b.PID
	})
	return out, nil
}

// JobStatus is a job as operators see it: its definition in effect, where
// it comes from, whether it is paused, when it fires next and its runs.
type JobStatus struct {
	Name string `json:"name"`
	// Job is the definition in effect: the stored one, or that of the
	// first scheduler (by host) whose jobs file defines it, which wins
	// over a stored one of its name. Environment values are redacted.
	Job Job `json:"job"`
	// Stored: a job of this name is in /scheduler/jobs.
	Stored bool `json:"stored"`
	// FileHosts are the running schedulers whose jobs file defines it.
	FileHosts []string `json:"fileHosts,omitempty"`
	// Differs: those file definitions are not all the same, so each
	// scheduler fires its own. Environment values are not compared:
	// they are not published.
	Differs bool `json:"differs,omitempty"`
	// FiredBy are the running schedulers that fire the job: those that
	// have it (in their file, or stored) and whose labels match its
	// nodeSelector.
	FiredBy []string `json:"firedBy,omitempty"`
	// Error is why the stored job is refused (does not decode, or names
	// another job); Job then has only its name unless a file defines it.
	Error  string `json:"error,omitempty"`
	Paused bool   `json:"paused"`
	// Next are the next fire times (up to MaxNext), on the job's schedule.
	Next []time.Time `json:"next,omitempty"`
	// Runs are newest first, up to the reader's limit.
	Runs []RunInfo `json:"runs"`
}

// MaxNext is how many fire times JobStatus.Next holds.
const MaxNext = 5

// DefaultRunsPerJob is how many runs JobStatus.Runs holds by default.
const DefaultRunsPerJob = 20

// Last returns the newest finished run's result, or nil.
func (js *JobStatus) Last() *Result {
	for _, r := range js.Runs {
		if r.Result != nil {
			return r.Result
		}
	}
	return nil
}

// Running returns the keys of the runs without a result whose master
// holds the binding, oldest first.
func (js *JobStatus) Running() []string {
	var out []string
	for _, r := range slices.Backward(js.Runs) {
		if r.Result == nil && r.Running {
			out = append(out, r.RunKey)
		}
	}
	return out
}

// Run returns the run of key among js.Runs, or nil.
func (js *JobStatus) Run(key string) *RunInfo {
	for i := range js.Runs {
		if js.Runs[i].RunKey == key {
			return &js.Runs[i]
		}
	}
	return nil
}

// Source says where the job comes from, in words: "stored",
// "file(host,…)", with "DIFFERS" or "stored one refused" when so.
func (js *JobStatus) Source() string {
	files := "file(" + strings.Join(js.FileHosts, ",") + ")"
	switch {
	case js.Stored && len(js.FileHosts) > 0:
		return files + ", stored one refused"
	case js.Stored:
		return "stored"
	case js.Differs:
		return files + " DIFFERS"
	}
	return files
}

// Jobs returns the status of every job a scheduler fires, by name: the
// stored jobs (refused ones with their Error) and the jobs of the files
// of the running schedulers, each with up to runs runs (0:
// DefaultRunsPerJob). A file job is listed while at least one scheduler
// that has it in its file runs. It returns as well the running schedulers
// (Schedulers) it read to find the file jobs, so a caller that shows both
// reads them once.
func (a *Admin) Jobs(ctx context.Context, runs int) ([]JobStatus, []SchedulerInfo, error) {
	var names []string
	err := a.s.Retry(ctx, func() (err error) {
		names, _, err = a.s.Children(ctx, JobsPath)
		return err
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, nil, err
	}
	byName := map[string]*JobStatus{}
	for _, n := range names {
		j, err := a.LoadJob(ctx, n)
		switch {
		case errors.Is(err, ErrNoSuchJob): // deleted as we looked
		case errors.Is(err, ErrInvalidJob):
			byName[n] = &JobStatus{Name: n, Job: Job{Name: n}, Stored: true, Error: statusError(err)}
		case err != nil:
			return nil, nil, err
		default:
			byName[n] = &JobStatus{Name: n, Job: j, Stored: true}
		}
	}
	scheds, err := a.Schedulers(ctx)
	if err != nil {
		return nil, nil, err
	}
	addFileJobs(byName, scheds, "")
	out := make([]JobStatus, 0, len(byName))
	for _, js := range byName {
		setFiredBy(js, scheds)
		if err := a.fill(ctx, js, runs); err != nil {
			return nil, nil, err
		}
		out = append(out, *js)
	}
	slices.SortFunc(out, func(a, b JobStatus) int { return strings.Compare(a.Name, b.Name) })
	return out, scheds, nil
}

// Job returns the status of one job: ErrNoSuchJob when it is neither
// stored, nor in a running scheduler's file, nor has runs. A stored job
// that is refused is returned with its Error.
func (a *Admin) Job(ctx context.Context, name string, runs int) (JobStatus, error) {
	js := JobStatus{Name: name, Job: Job{Name: name}}
	if !nodeName(name) {
		return js, fmt.Errorf("%w: %q is not a job name", ErrNoSuchJob, name)
	}
	j, err := a.LoadJob(ctx, name)
	switch {
	case errors.Is(err, ErrNoSuchJob):
	case errors.Is(err, ErrInvalidJob):
		js.Stored, js.Error = true, statusError(err)
	case err != nil:
		return js, err
	default:
		js.Stored, js.Job = true, j
	}
	scheds, err := a.Schedulers(ctx)
	if err != nil {
		return js, err
	}
	addFileJobs(map[string]*JobStatus{name: &js}, scheds, name)
	setFiredBy(&js, scheds)
	if err := a.fill(ctx, &js, runs); err != nil {
		return js, err
	}
	if !js.Stored && len(js.FileHosts) == 0 && len(js.Runs) == 0 {
		return js, fmt.Errorf("%w: %q is not stored in %s and no running scheduler has it in its jobs file", ErrNoSuchJob, name, JobsPath)
	}
	return js, nil
}

// statusError words a refusal for JobStatus.Error, which people read:
// without the package's prefix.
func statusError(err error) string { return strings.TrimPrefix(err.Error(), "scheduler: ") }

// addFileJobs adds the jobs of the schedulers' files to byName (those
// named only, if only is set): a job already there gets the file hosts.
func addFileJobs(byName map[string]*JobStatus, scheds []SchedulerInfo, only string) {
	first := map[string][]byte{} // the first file definition of each name
	for _, in := range scheds {
		for _, j := range in.FileJobs {
			if only != "" && j.Name != only {
				continue
			}
			js := byName[j.Name]
			if js == nil {
				js = &JobStatus{Name: j.Name}
				byName[j.Name] = js
			}
			if !slices.Contains(js.FileHosts, in.Host) {
				js.FileHosts = append(js.FileHosts, in.Host)
			}
			enc := j.Encode()
			if f, ok := first[j.Name]; !ok {
				first[j.Name] = enc
				js.Job = j // a file job wins over a stored one of its name, which schedulers refuse
			} else if !bytes.Equal(f, enc) {
				js.Differs = true
			}
		}
	}
}

// setFiredBy sets js.FiredBy from the running schedulers: each fires
// its file's definition of the job if it has one, else the stored one,
// if its labels match that definition's nodeSelector.
func setFiredBy(js *JobStatus, scheds []SchedulerInfo) {
	js.FiredBy = nil
	for _, in := range scheds {
		i := slices.IndexFunc(in.FileJobs, func(j Job) bool { return j.Name == js.Name })
		switch {
		case i >= 0 && Matches(in.FileJobs[i].NodeSelector, in.Labels):
		case i < 0 && js.Stored && js.Error == "" && Matches(js.Job.NodeSelector, in.Labels):
		default:
			continue
		}
		if !slices.Contains(js.FiredBy, in.Host) {
			js.FiredBy = append(js.FiredBy, in.Host)
		}
	}
}

// fill reads a job's paused flag and runs, computes its next fire
// times and redacts its environment.
func (a *Admin) fill(ctx context.Context, js *JobStatus, runs int) error {
	var err error
	if js.Paused, err = a.Paused(ctx, js.Name); err != nil {
		return err
	}
	all, err := a.Runs(ctx, js.Name)
	if err != nil {
		return err
	}
	if runs <= 0 {
		runs = DefaultRunsPerJob
	}
	slices.Reverse(all)
	js.Runs = append([]RunInfo{}, all[:min(len(all), runs)]...) // [] in JSON when none
	js.Job = js.Job.Redacted()
	if p, err := compile(js.Job); err == nil && js.Job.Schedule != "" {
		js.Next = p.next(time.Now(), MaxNext)
	}
	return nil
}

// definitions returns the jobs the schedulers have: the stored ones that
// decode and the jobs of the running schedulers' files (each file's
// definition: a name may come several times).
func (a *Admin) definitions(ctx context.Context) ([]Job, error) {
	var names []string
	err := a.s.Retry(ctx, func() (err error) {
		names, _, err = a.s.Children(ctx, JobsPath)
		return err
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	var out []Job
	for _, n := range names {
		j, err := a.LoadJob(ctx, n)
		switch {
		case errors.Is(err, ErrNoSuchJob), errors.Is(err, ErrInvalidJob):
		case err != nil:
			return nil, err
		default:
			out = append(out, j)
		}
	}
	scheds, err := a.Schedulers(ctx)
	if err != nil {
		return nil, err
	}
	for _, in := range scheds {
		out = append(out, in.FileJobs...)
	}
	return out, nil
}

// CheckGraph reports the dependency cycle (Job.After) that jobs would
// make with the jobs the schedulers have now — the stored ones and those
// of the running schedulers' files, a job of jobs replacing the stored
// one of its name: an ErrInvalidJob naming the job, the field (after)
// and the cycle. StoreJob, CreateJob and UpdateJob call it; `ctl job add
// --file` calls it with every job of the file before storing any.
func (a *Admin) CheckGraph(ctx context.Context, jobs ...Job) error {
	have, err := a.definitions(ctx)
	if err != nil {
		return err
	}
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.Name
	}
	all := slices.DeleteFunc(have, func(j Job) bool { return slices.Contains(names, j.Name) })
	return CheckCycles(append(all, jobs...), names...)
}

// Graph returns the dependency graph of the jobs the schedulers have
// (`ctl job graph`).
func (a *Admin) Graph(ctx context.Context) (Graph, error) {
	jobs, err := a.definitions(ctx)
	if err != nil {
		return Graph{}, err
	}
	return BuildGraph(jobs), nil
}
