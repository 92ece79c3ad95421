package scheduler

// THIS FILE IS A STAND-IN for the readmodel branch's JobStatus (names from
// /work/wt/notes/cluster-api.md), deleted before that merge.

import "time"

// JobStatus is one job with its recent runs.
type JobStatus struct {
	Name      string      `json:"name"`
	Job       Job         `json:"job"`
	Stored    bool        `json:"stored"`
	FileHosts []string    `json:"fileHosts,omitempty"`
	Differs   bool        `json:"differs,omitempty"`
	Error     string      `json:"error,omitempty"`
	Paused    bool        `json:"paused"`
	Next      []time.Time `json:"next,omitempty"`
	Runs      []RunInfo   `json:"runs"`
}
