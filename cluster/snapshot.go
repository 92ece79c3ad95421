package cluster

import (
	"time"

	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/dns"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// Section names a part of the snapshot that is read on its own.
type Section string

// The sections of a Snapshot.
const (
	SectionTasks      Section = "tasks"      // Tasks
	SectionJobs       Section = "jobs"       // Jobs and Schedulers
	SectionCollectors Section = "collectors" // Collectors and Sources
	SectionCoord      Section = "coord"      // Coord
	SectionServices   Section = "services"   // Services
)

// Snapshot is the cluster as read at ReadAt. A section that could not be
// read has an entry in Errors and its slices are empty (never half-read).
// A Snapshot handed out by a Reader or Feed is shared: do not change it.
type Snapshot struct {
	ReadAt time.Time `json:"readAt"`
	// Tasks by name, their specs redacted (core.Spec.Redacted).
	Tasks []core.TaskStatus `json:"tasks"`
	// SourceSamples are the active monitor's samples of each task's
	// source position, by task (none without a monitor): what
	// ViewTask measures lag against.
	SourceSamples map[string][]PosSample `json:"sourceSamples,omitempty"`
	// Jobs by name, their environment values redacted.
	Jobs []scheduler.JobStatus `json:"jobs"`
	// Schedulers are the running schedulers, by host and pid.
	Schedulers []scheduler.SchedulerInfo `json:"schedulers"`
	// Collectors by name, alive or dead by the assigner's rule.
	Collectors []collector.CollectorInfo `json:"collectors"`
	// CollectorsJudged says on which clock liveness was judged
	// (collector.JudgedByAssigner or JudgedLocally).
	CollectorsJudged string `json:"collectorsJudged,omitempty"`
	// Sources in the order of the source list.
	Sources []collector.SourceStatus `json:"sources"`
	// Coord has one entry per server of the connect string, in its order.
	Coord []coordhealth.Server `json:"coord"`
	// Services are the names of the DNS registry, by application and
	// domain, with their addresses.
	Services []dns.ServiceStatus `json:"services"`
	Errors   map[Section]string  `json:"errors,omitempty"`
}

// Task returns the task named name.
func (s *Snapshot) Task(name string) (core.TaskStatus, bool) {
	return find(s.Tasks, func(t core.TaskStatus) bool { return t.Name == name })
}

// TaskView derives what task ts is doing, at the snapshot's read time:
// the one reading of a task's state, position and lag (ViewTask).
func (s *Snapshot) TaskView(ts core.TaskStatus) TaskView {
	return ViewTask(ts, s.SourceSamples[ts.Name], s.ReadAt)
}

// Job returns the job named name.
func (s *Snapshot) Job(name string) (scheduler.JobStatus, bool) {
	return find(s.Jobs, func(j scheduler.JobStatus) bool { return j.Name == name })
}

// Collector returns the collector named name.
func (s *Snapshot) Collector(name string) (collector.CollectorInfo, bool) {
	return find(s.Collectors, func(c collector.CollectorInfo) bool { return c.Name == name })
}

// ErrorsText is Errors in one line ("section: why; …"), in section
// order; "" when every section was read.
func (s *Snapshot) ErrorsText() string { return errorsText(s.Errors) }

func find[T any](list []T, match func(T) bool) (T, bool) {
	for _, v := range list {
		if match(v) {
			return v, true
		}
	}
	var zero T
	return zero, false
}

// empty returns a snapshot read at t with every slice empty, not nil, so
// that JSON shows [] for a section with nothing in it.
func empty(t time.Time) *Snapshot {
	return &Snapshot{
		ReadAt: t, Tasks: []core.TaskStatus{}, Jobs: []scheduler.JobStatus{}, Schedulers: []scheduler.SchedulerInfo{},
		Collectors: []collector.CollectorInfo{}, Sources: []collector.SourceStatus{}, Coord: []coordhealth.Server{},
		Services: []dns.ServiceStatus{},
	}
}
