package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/replication"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// Freshness answers the scheduler's freshness gates (scheduler.Freshness)
// from the tree, with the same facts every view shows: the task's
// position as ViewTask derives it, and the source positions the active
// monitor samples (SourceSamples). A gate's goal is the first sample
// taken at or after the gate's time: the source's binlog then holds
// everything committed up to that time, and perhaps a little more, so a
// run never starts before its data is there (it may start a little
// later). Without a running monitor no goal can be chosen and the run
// waits.
type Freshness struct {
	s     *recipe.Session
	tasks *core.Admin
}

// NewFreshness returns the Freshness of the tasks under coreRoot ("" =
// core.DefaultRoot), read through s.
func NewFreshness(s *recipe.Session, coreRoot string) *Freshness {
	return &Freshness{s: s, tasks: core.NewAdmin(s, coreRoot)}
}

var _ scheduler.Freshness = (*Freshness)(nil)

// Fresh implements scheduler.Freshness. The wake channel is closed when
// the task's spec or lastCommit changes (the running core moves lastCommit
// as it commits), or, while no goal is chosen, when the monitor writes
// new samples.
func (f *Freshness) Fresh(ctx context.Context, task string, at time.Time, mark string) (scheduler.FreshAnswer, <-chan struct{}, error) {
	var ans scheduler.FreshAnswer
	layout := f.tasks.Layout()
	watch := []string{layout.Task(task), layout.LastCommit(task)}
	if mark == "" {
		watch = append(watch, MonitorStatePath)
	}
	wake, err := watchData(ctx, f.s, watch)
	if err != nil {
		return ans, nil, err
	}
	ts, err := f.tasks.Task(ctx, task)
	if errors.Is(err, core.ErrNoTask) {
		ans.Why, ans.Stuck = "no such replication task", true
		return ans, wake, nil
	}
	if err != nil {
		return ans, nil, err
	}
	v := ViewTask(ts, nil, time.Now())
	if v.State != TaskRunning {
		ans.Why = "task is " + v.State
		if v.Error != "" {
			ans.Why += ": " + v.Error
		}
		// NOT RUNNING and RETRYING may pass by themselves (a takeover, a
		// server back); the task's own alerts cover them when they last.
		ans.Stuck = v.State == TaskStopped || v.State == TaskFailed || v.State == TaskInvalid
	}
	if !v.Position.IsZero() {
		ans.Position = v.Position.String()
	}
	var goal replication.Position
	switch {
	case mark != "":
		if err := json.Unmarshal([]byte(mark), &goal); err != nil {
			return ans, nil, fmt.Errorf("cluster: freshness mark %q: %w", mark, err)
		}
	default:
		p, ok := SourcePositionAt(SourceSamples(ctx, f.s)[task], at)
		if !ok {
			if ans.Why == "" && !time.Now().Before(at) {
				ans.Why = "no monitor reading of the source since then (is a shepherd monitor running?)"
			}
			return ans, wake, nil
		}
		goal = p
		b, _ := json.Marshal(goal)
		ans.Mark = string(b)
	}
	ans.Target = goal.String()
	flavor := ""
	if ts.Spec != nil {
		flavor = ts.Spec.Source.Flavor
	}
	c, ok := replication.ComparePositions(flavor, v.Position, goal)
	switch {
	case ok && c >= 0 && !v.Position.IsZero():
		ans.Reached, ans.Why, ans.Stuck = true, "", false
	case !ok && !v.Position.IsZero() && ans.Why == "":
		ans.Why, ans.Stuck = "the task's position and the goal are not of one binlog and no GTID state orders them (did the source fail over?)", true
	}
	return ans, wake, nil
}

// SourcePositionAt is the source position, of samples (oldest first),
// that holds everything the source had committed at t: that of the
// first sample still seen at or after t. ok is false when no sample was
// taken at or after t.
func SourcePositionAt(samples []PosSample, t time.Time) (replication.Position, bool) {
	for _, s := range samples {
		if !s.At.Before(t) {
			return s.Pos, true
		}
	}
	return replication.Position{}, false
}

// watchData leaves a data watch on each path (an existence watch on one
// missing) and returns a channel closed when the first fires. The
// watches are abandoned when ctx ends.
func watchData(ctx context.Context, s *recipe.Session, paths []string) (<-chan struct{}, error) {
	fired := make(chan struct{})
	var once sync.Once
	var chans []<-chan zk.Event
	for _, p := range paths {
		_, _, ch, err := s.Retrying().GetW(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			_, _, ch, err = s.Retrying().ExistsW(ctx, p)
		}
		if err != nil {
			return nil, err
		}
		chans = append(chans, ch)
	}
	for _, ch := range chans {
		go func() {
			select {
			case <-ch:
				once.Do(func() { close(fired) })
			case <-ctx.Done():
			}
		}()
	}
	return fired, nil
}
