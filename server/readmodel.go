package server

import (
	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// The console reads the cluster through the shared read model (package
// cluster): one snapshot for ctl, the console and the monitor.
type (
	// Snapshot is the cluster as read at one time.
	Snapshot = cluster.Snapshot
	// Feed hands out the newest snapshot and tells subscribers of new ones.
	Feed = cluster.Feed
	// Section names a part of the snapshot.
	Section = cluster.Section
	// JobStatus is a job as operators see it.
	JobStatus = scheduler.JobStatus
)
