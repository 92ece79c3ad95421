package monitor

import (
	"maps"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// maxSamples bounds the source positions remembered per task. A sample is
// appended only when the source's position moved, so an idle source uses
// one; a busy one keeps the last maxSamples intervals (8 minutes at the
// default interval: longer lags are measured from the task's own report,
// see lag). It keeps the state document small: about 3 KB per task.
const maxSamples = 32

// History is what the rules that look at change over time remember
// between evaluations. It is stored with the alert state in the
// coordination tree, so that a monitor taking over measures lag and
// staleness from where the last one was, not from its own start.
type History struct {
	Tasks map[string]*TaskHistory `json:"tasks,omitempty"`
	// Running is when each run ("job/runKey") was first seen running.
	Running map[string]time.Time `json:"running,omitempty"`
}

// TaskHistory is one task's remembered readings.
type TaskHistory struct {
	// Samples are the source's positions, oldest first; of a run of equal
	// positions only the latest time is kept (see lag).
	Samples []PosSample `json:"samples,omitempty"`
	// Checkpoint is the lastCommit position last seen and CheckpointSince
	// when it was first seen at that position.
	Checkpoint      core.Position `json:"checkpoint"`
	CheckpointSince time.Time     `json:"checkpointSince"`
	// Current is, per binlog file, the last time it was seen as the
	// source's current (still written) file: its modification time is at
	// least that, so it cannot expire before that plus the expiry period.
	Current map[string]time.Time `json:"current,omitempty"`
}

// PosSample is the source's position at a time.
type PosSample = cluster.PosSample

// samples are the task's source samples; none for a nil history.
func (th *TaskHistory) samples() []PosSample {
	if th == nil {
		return nil
	}
	return th.Samples
}

// Observe returns the history updated with a snapshot and the source
// readings taken at now. It does not change h.
func Observe(h History, snap *cluster.Snapshot, sources map[string]SourceReading, now time.Time) History {
	out := History{Tasks: map[string]*TaskHistory{}, Running: map[string]time.Time{}}
	if snap == nil {
		return h
	}
	for _, ts := range snap.Tasks {
		old := h.Tasks[ts.Name]
		th := &TaskHistory{Current: map[string]time.Time{}}
		if old != nil {
			th.Samples = append([]PosSample(nil), old.Samples...)
			th.Checkpoint, th.CheckpointSince = old.Checkpoint, old.CheckpointSince
			maps.Copy(th.Current, old.Current)
		}
		if lc := ts.LastCommit; lc != nil {
			if p := lc.Position(); p != th.Checkpoint || th.CheckpointSince.IsZero() {
				since := now
				if old == nil && !lc.Time.IsZero() && lc.Time.Before(now) {
					since = lc.Time // first sight: it was committed then
				}
				th.Checkpoint, th.CheckpointSince = p, since
			}
		}
		if r, ok := sources[ts.Name]; ok && r.Err == "" && len(r.Logs) > 0 {
			cur := r.Current()
			n := len(th.Samples)
			if n > 0 && th.Samples[n-1].Pos == cur {
				th.Samples[n-1].At = now
			} else {
				th.Samples = append(th.Samples, PosSample{At: now, Since: now, Pos: cur})
			}
			if len(th.Samples) > maxSamples {
				th.Samples = th.Samples[len(th.Samples)-maxSamples:]
			}
			th.Current[cur.File] = now
			for f := range th.Current { // forget files the source no longer has
				if !r.Has(f) {
					delete(th.Current, f)
				}
			}
		}
		out.Tasks[ts.Name] = th
	}
	if _, bad := snap.Errors[cluster.SectionTasks]; bad {
		maps.Copy(out.Tasks, h.Tasks) // a failed read forgets nothing
	}
	for _, js := range snap.Jobs {
		for _, r := range js.Runs {
			if !r.Running || r.Result != nil {
				continue
			}
			k := runID(r)
			if t, ok := h.Running[k]; ok {
				out.Running[k] = t
			} else {
				out.Running[k] = now
			}
		}
	}
	if _, bad := snap.Errors[cluster.SectionJobs]; bad {
		maps.Copy(out.Running, h.Running)
	}
	return out
}

func runID(r scheduler.RunInfo) string { return r.Job + "/" + r.RunKey }
