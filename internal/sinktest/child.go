package sinktest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/replication"
)

// ChildSpec is what a crash test's child process replicates: one task
// from Source to the sink Sink configures (C: the sink's Config), from
// From, under Epoch. It travels as JSON in the child's environment
// (crashload.Subprocess).
type ChildSpec[C any] struct {
	Task      string               `json:"task"`
	Source    replication.Endpoint `json:"source"`
	Include   []string             `json:"include"`
	BatchRows int                  `json:"batchRows"`
	Sink      C                    `json:"sink"`
	From      replication.Position `json:"from"`
	Epoch     int64                `json:"epoch"`
	Owner     string               `json:"owner"`
}

// ChildMain is the child process: it reads the ChildSpec in the
// environment variable env, opens the replicator with the sink newSink
// makes of it and runs until it is killed. It returns the exit status of
// a child that was not (a bad spec 2, open 3, a Run that returned 4).
func ChildMain[C any](env string, newSink func(C) replication.Sink) int {
	var spec ChildSpec[C]
	if err := json.Unmarshal([]byte(os.Getenv(env)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "child: bad spec:", err)
		return 2
	}
	ctx := context.Background()
	r, err := replication.Open(ctx, replication.Config{
		Task: spec.Task, Source: spec.Source, Include: spec.Include, BatchRows: spec.BatchRows, Sink: newSink(spec.Sink),
		HeartbeatPeriod: 200 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 3
	}
	err = r.Run(ctx, spec.From, spec.Epoch, spec.Owner, nil)
	fmt.Fprintln(os.Stderr, "child: run:", err)
	return 4
}

// InProcess is the crashload.Crasher that cancels Run wherever it is —
// mid-write, waiting for the target, mid-checkpoint — in this process.
type InProcess struct {
	R    *replication.Replicator
	From replication.Position
	rn   *Run
}

func (c *InProcess) Start(t *testing.T) { c.rn = StartRun(t, c.R, c.From, 1, "inproc") }

func (c *InProcess) Crash(t *testing.T) {
	if err := c.rn.Stop(); err != nil {
		t.Fatalf("Run failed before the crash: %v", err)
	}
}
