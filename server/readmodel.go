package server

import (
	"time"

	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// The console's view of the shared read model (package cluster, see
// the cluster-api note). Until that package is merged these mirror its
// exported names field for field; they become aliases of cluster's
// types then, and nothing else in this package changes.

// Section names a part of the snapshot that is read on its own.
type Section string

// Snapshot is the cluster as read at ReadAt.
type Snapshot struct {
	ReadAt     time.Time                 `json:"readAt"`
	Tasks      []core.TaskStatus         `json:"tasks"`
	Jobs       []JobStatus               `json:"jobs"`
	Schedulers []scheduler.SchedulerInfo `json:"schedulers"`
	Collectors []collector.CollectorInfo `json:"collectors"`
	Sources    []SourceStatus            `json:"sources"`
	Coord      []CoordServer             `json:"coord"`
	Errors     map[Section]string        `json:"errors,omitempty"`
}

// Task returns the task named name.
func (s *Snapshot) Task(name string) (core.TaskStatus, bool) {
	for _, t := range s.Tasks {
		if t.Name == name {
			return t, true
		}
	}
	return core.TaskStatus{}, false
}

// Job returns the job named name.
func (s *Snapshot) Job(name string) (JobStatus, bool) {
	for _, j := range s.Jobs {
		if j.Name == name {
			return j, true
		}
	}
	return JobStatus{}, false
}

// JobStatus mirrors scheduler.JobStatus.
type JobStatus struct {
	Name      string              `json:"name"`
	Job       scheduler.Job       `json:"job"`
	Stored    bool                `json:"stored"`
	FileHosts []string            `json:"fileHosts,omitempty"`
	Differs   bool                `json:"differs,omitempty"`
	Error     string              `json:"error,omitempty"`
	Paused    bool                `json:"paused"`
	Next      []time.Time         `json:"next,omitempty"`
	Runs      []scheduler.RunInfo `json:"runs"`
}

// SourceStatus mirrors collector.SourceStatus.
type SourceStatus struct {
	URI       string `json:"uri"`
	Collector string `json:"collector"`
	Lag       int64  `json:"lag"`
	Lines     int64  `json:"lines"`
}

// CoordServer mirrors coordhealth.Server.
type CoordServer struct {
	Addr        string `json:"addr"`
	OK          bool   `json:"ok"`
	Error       string `json:"error,omitempty"`
	Mode        string `json:"mode,omitempty"`
	Version     string `json:"version,omitempty"`
	Outstanding int64  `json:"outstanding"`
	Znodes      int64  `json:"znodes"`
	Connections int64  `json:"connections"`
}

// Feed hands out the newest snapshot and tells subscribers of new ones
// (cluster.Feed).
type Feed interface {
	Latest() *Snapshot
	Subscribe() (ch <-chan *Snapshot, cancel func())
}

// redactedPassword stands for an inline password in what is shown
// (core.RedactedPassword once merged).
const redactedPassword = "***"

// redactSpec returns sp with inline passwords replaced (core's
// Spec.Redacted once merged).
func redactSpec(sp *core.Spec) *core.Spec {
	if sp == nil {
		return nil
	}
	out := *sp
	for _, e := range []*core.Endpoint{&out.Source, &out.Target} {
		if e.Password != "" {
			e.Password = redactedPassword
		}
	}
	return &out
}
