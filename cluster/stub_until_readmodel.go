// Package cluster is the shared read model. THIS FILE IS A STAND-IN: the
// monitor branch codes against the names of /work/wt/notes/cluster-api.md
// until the readmodel branch lands; it is deleted before that merge.
package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/coord/coordhealth"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// Section names a part of the snapshot that is read on its own.
type Section string

// The sections.
const (
	SectionTasks      Section = "tasks"
	SectionJobs       Section = "jobs"
	SectionCollectors Section = "collectors"
	SectionCoord      Section = "coord"
)

// Snapshot is the cluster as read at ReadAt.
type Snapshot struct {
	ReadAt     time.Time                 `json:"readAt"`
	Tasks      []core.TaskStatus         `json:"tasks"`
	Jobs       []scheduler.JobStatus     `json:"jobs"`
	Schedulers []scheduler.SchedulerInfo `json:"schedulers"`
	Collectors []collector.CollectorInfo `json:"collectors"`
	Sources    []collector.SourceStatus  `json:"sources"`
	Coord      []coordhealth.Server      `json:"coord"`
	Errors     map[Section]string        `json:"errors,omitempty"`
}

// Reader reads a snapshot now.
type Reader interface {
	Read(ctx context.Context) (*Snapshot, error)
}

// Feed hands out the newest snapshot.
type Feed interface {
	Latest() *Snapshot
	Subscribe() (ch <-chan *Snapshot, cancel func())
}

// Fixed serves a snapshot set by a test.
type Fixed struct {
	mu sync.Mutex
	s  *Snapshot
}

// NewFixed returns a Fixed serving s.
func NewFixed(s *Snapshot) *Fixed { return &Fixed{s: s} }

// Set replaces the snapshot.
func (f *Fixed) Set(s *Snapshot) { f.mu.Lock(); f.s = s; f.mu.Unlock() }

// Read returns the snapshot.
func (f *Fixed) Read(context.Context) (*Snapshot, error) { return f.Latest(), nil }

// Latest returns the snapshot.
func (f *Fixed) Latest() *Snapshot { f.mu.Lock(); defer f.mu.Unlock(); return f.s }

// Subscribe is not used by the monitor's stand-in tests.
func (f *Fixed) Subscribe() (<-chan *Snapshot, func()) {
	return make(chan *Snapshot), func() {}
}
