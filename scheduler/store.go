package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Paths of the znode layout (docs/scheduler.md).
const (
	ElectionRoot = "/master_election"
	// Root is the scheduler's subtree: a stored job or trigger is acted
	// on only if it and its ancestors up to Root are writable by the
	// scheduler's identity alone (recipe.Session.CheckTrusted).
	Root         = "/scheduler"
	JobsPath     = Root + "/jobs"
	PausedPath   = Root + "/paused"
	TriggersPath = Root + "/triggers"
	// SchedulersPath holds one EPHEMERAL node per running scheduler,
	// <host>-<pid>, whose data is its SchedulerInfo. Schedulers write
	// it and never act on it; ctl reads it.
	SchedulersPath = Root + "/schedulers"
)

// Subtrees are the roots of the scheduler's nodes, for
// recipe.Session.EnsureSubtree: its jobs and its runs' elections.
func Subtrees() []recipe.Subtree {
	return []recipe.Subtree{{Path: Root}, {Path: ElectionRoot}}
}

// RedactedEnv stands for the value of an environment variable of a file
// job in what a scheduler publishes.
const RedactedEnv = "(set in the jobs file)"

// SchedulerInfo is what a running scheduler publishes about itself at
// SchedulersPath/<host>-<pid>.
type SchedulerInfo struct {
	Version  int       `json:"version"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
	JobsFile string    `json:"jobsFile,omitempty"`
	// Labels are its labels (Options.Labels), which jobs' nodeSelector
	// match.
	Labels map[string]string `json:"labels,omitempty"`
	// FileJobs are the jobs of its jobs file, each environment value
	// replaced by RedactedEnv.
	FileJobs []Job `json:"fileJobs"`
}

// JobPath is where a job's spec is stored.
func JobPath(job string) string { return path.Join(JobsPath, job) }

// RunsPath is the parent of a job's runs; its data is the job's marker.
func RunsPath(job string) string { return path.Join(ElectionRoot, job) }

// RunPath is the node of one run.
func RunPath(job, key string) string { return path.Join(ElectionRoot, job, key) }

// BindingPath is the ephemeral node of a run's master.
func BindingPath(job, key string) string { return path.Join(RunPath(job, key), "binding") }

// ResultPath is the persistent outcome of a run.
func ResultPath(job, key string) string { return path.Join(RunPath(job, key), "result") }

func cancelPath(job, key string) string { return path.Join(RunPath(job, key), "cancel") }

// ItemsPath is the node of a sharded run's items, created by its master
// when the items may start; its data is {"version", "shards"}.
func ItemsPath(job, key string) string { return path.Join(RunPath(job, key), "items") }

// ItemPath is the node of one item of a sharded run, with the binding,
// attempts and result of the item as a run has them.
func ItemPath(job, key string, item int) string {
	return path.Join(ItemsPath(job, key), strconv.Itoa(item))
}

// workersPath holds an EPHEMERAL node per scheduler working on a sharded
// run's items (<host>-<session id>), over which the items are spread.
func workersPath(job, key string) string { return path.Join(RunPath(job, key), "workers") }

// unit is what one election is held for: a run, or one item of a
// sharded run (item ≥ 0). Each has a binding, attempts and a result,
// below its own node, and the same fencing.
type unit struct {
	job, key string
	item     int // -1: the run
}

func runUnit(job, key string) unit { return unit{job: job, key: key, item: -1} }

func (u unit) path() string {
	if u.item < 0 {
		return RunPath(u.job, u.key)
	}
	return ItemPath(u.job, u.key, u.item)
}

func (u unit) bindingPath() string  { return path.Join(u.path(), "binding") }
func (u unit) resultPath() string   { return path.Join(u.path(), "result") }
func (u unit) attemptsPath() string { return path.Join(u.path(), "attempts") }

// logPath is the local log file of the unit: <dir>/<job>/<run-key>.log,
// <run-key>.item-<i>.log for an item.
func (u unit) logPath(dir string) string {
	if u.item < 0 {
		return filepath.Join(dir, u.job, u.key+".log")
	}
	return filepath.Join(dir, u.job, fmt.Sprintf("%s.item-%d.log", u.key, u.item))
}

func (u unit) String() string {
	if u.item < 0 {
		return fmt.Sprintf("job %s run %s", u.job, u.key)
	}
	return fmt.Sprintf("job %s run %s item %d", u.job, u.key, u.item)
}

// waitingPath is the EPHEMERAL node of a run whose master waits for its
// upstream runs; its data is a Waiting.
func waitingPath(job, key string) string { return path.Join(RunPath(job, key), "waiting") }

// Status is the outcome of a run.
type Status string

// Statuses of a Result.
const (
	Succeeded Status = "succeeded"
	Failed    Status = "failed"   // non-zero exit or error, retries exhausted
	TimedOut  Status = "timeout"  // the last attempt passed its timeout
	Missed    Status = "missed"   // not started within the starting deadline
	Skipped   Status = "skipped"  // forbid: an earlier run was still running
	Replaced  Status = "replaced" // replace: a later run stopped it
	Abandoned Status = "abandoned"
	// Blocked: its upstream runs did not end as its whenUpstream
	// requires (by default: one of them did not succeed).
	Blocked Status = "blocked"
)

// Result is the outcome of a run, stored in .../result by its master.
type Result struct {
	Version   int       `json:"version"`
	Job       string    `json:"job"`
	RunKey    string    `json:"runKey"`
	Status    Status    `json:"status"`
	ExitCode  int       `json:"exitCode"`
	Scheduled time.Time `json:"scheduled"`
	Start     time.Time `json:"start,omitzero"`
	End       time.Time `json:"end,omitzero"`
	Host      string    `json:"host,omitempty"`
	Attempt   int       `json:"attempt"`
	Error     string    `json:"error,omitempty"`
	// Output is the tail of the run's output (stdout and stderr).
	Output string `json:"output,omitempty"`
	// LogFile is the full output on Host.
	LogFile string `json:"logFile,omitempty"`
	// Data is what the job wrote to $SHEPHERD_RESULT_FILE (or its Go
	// function returned): the computed result shared with the cluster.
	Data []byte `json:"data,omitempty"`
	// Upstream is the status of each upstream run (Job.After) the run
	// waited for, by job.
	Upstream map[string]Status `json:"upstream,omitempty"`
	// Params are the run's parameters (run-now --param).
	Params map[string]string `json:"params,omitempty"`
	// Gates are the freshness gates (Dependency.Task) the run waited for,
	// with the source position each task's target reached.
	Gates []GateWait `json:"gates,omitempty"`
	// Shard is set in the result of an item of a sharded run: its number.
	Shard *int `json:"shard,omitempty"`
	// Items sum up the items of a sharded run, in the run's result. Its
	// Attempt counts the run's coordinators; each item has its own.
	Items []ItemSummary `json:"items,omitempty"`
}

// Waiting is the data of a run's waiting node: its master waits for the
// runs of the same key of the jobs in Upstream, and for the freshness
// gates in Gates not reached.
type Waiting struct {
	Version int `json:"version"`
	// Upstream are the jobs whose run has no result yet.
	Upstream []string `json:"upstream"`
	// Gates are the run's freshness gates (Dependency.Task), reached or not.
	Gates []GateWait `json:"gates,omitempty"`
	// Since is when the master began to wait; Until, when the run is
	// recorded missed if it is still waiting (its starting deadline).
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	Host  string    `json:"host,omitempty"`
	// For words what the run waits for, as ctl and the console show it;
	// set when the node is read, not stored.
	For string `json:"for,omitempty"`
}

// attempts is the data of .../attempts.
type attempts struct {
	Version  int    `json:"version"`
	Attempts int    `json:"attempts"` // attempts started
	Failures int    `json:"failures"` // attempts that ended in failure
	Host     string `json:"host,omitempty"`
}

// marker is the data of /master_election/<job>: the latest scheduled time
// any scheduler fired, from which a returning scheduler finds missed runs.
type marker struct {
	Version       int       `json:"version"`
	LastScheduled time.Time `json:"lastScheduled"`
}

// readResult returns a run's result; found is false if it has none yet.
func readResult(ctx context.Context, s *recipe.Session, job, key string) (r Result, found bool, err error) {
	return readUnitResult(ctx, s, runUnit(job, key))
}

// readUnitResult returns a unit's result; found is false if it has none
// yet.
func readUnitResult(ctx context.Context, s *recipe.Session, u unit) (r Result, found bool, err error) {
	var data []byte
	data, _, err = s.Retrying().Get(ctx, u.resultPath())
	if errors.Is(err, zk.ErrNoNode) {
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, false, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return Result{}, false, fmt.Errorf("scheduler: result of %s: %w", u, err)
	}
	return r, true, nil
}

// listRuns lists a job's run keys with their results (nil while running
// or never run), oldest first by scheduled time.
func listRuns(ctx context.Context, s *recipe.Session, job string) ([]RunInfo, error) {
	keys, _, err := s.Retrying().Children(ctx, RunsPath(job))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]RunInfo, 0, len(keys))
	for _, k := range keys {
		ri := RunInfo{Job: job, RunKey: k}
		r, ok, err := readResult(ctx, s, job, k)
		if err != nil {
			return nil, err
		}
		if ok {
			ri.Result = &r
			ri.Scheduled = r.Scheduled
		}
		if err := s.Retry(ctx, func() (err error) {
			ri.Running, _, err = s.Exists(ctx, BindingPath(job, k))
			return err
		}); err != nil {
			return nil, err
		}
		if ri.Running && !ok {
			w, err := readWaiting(ctx, s, job, k)
			if err != nil {
				return nil, err
			}
			ri.Waiting = w
		}
		if !ok {
			if ri.Items, err = readItems(ctx, s, job, k); err != nil {
				return nil, err
			}
		}
		out = append(out, ri)
	}
	sortRuns(out)
	return out, nil
}

// RunInfo is one run as Admin.Runs lists it.
type RunInfo struct {
	Job       string    `json:"job"`
	RunKey    string    `json:"runKey"`
	Scheduled time.Time `json:"scheduled,omitzero"` // zero until the run has a result
	Running   bool      `json:"running"`            // a master holds the binding
	// Waiting is set while the run's master waits for upstream runs
	// (Job.After): the run is WAITING, not yet executing.
	Waiting *Waiting `json:"waiting,omitempty"`
	// Items are the items of a sharded run whose items are open and
	// which has no result yet (once it has, Result.Items).
	Items  []ItemSummary `json:"items,omitempty"`
	Result *Result       `json:"result,omitempty"`
}

// readWaiting reads a run's waiting node: nil when it has none.
func readWaiting(ctx context.Context, s *recipe.Session, job, key string) (*Waiting, error) {
	data, _, err := s.Retrying().Get(ctx, waitingPath(job, key))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var w Waiting
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("scheduler: waiting node of %s/%s: %w", job, key, err)
	}
	w.For = w.forText()
	return &w, nil
}

// StuckGate returns the first freshness gate the run waits for whose task
// will not move by itself (FreshAnswer.Stuck): the monitor's
// JobWaitingOnTask. ok is false for a nil Waiting.
func (w *Waiting) StuckGate() (g GateWait, ok bool) {
	if w == nil {
		return GateWait{}, false
	}
	for _, g := range w.Gates {
		if g.Stuck && !g.Reached {
			return g, true
		}
	}
	return GateWait{}, false
}

// forText words what the run waits for, as every view shows it.
func (w *Waiting) forText() string {
	var what []string
	if len(w.Upstream) > 0 {
		what = append(what, "for the runs of "+strings.Join(w.Upstream, ", "))
	}
	for _, g := range w.Gates {
		if !g.Reached {
			what = append(what, "for "+g.String())
		}
	}
	return strings.Join(what, "; ")
}
