package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// sortRuns orders runs oldest first: finished runs by scheduled time,
// then unfinished ones by the time their keys name (keys of every format
// ever written compare by time, not as strings), then by key.
func sortRuns(runs []RunInfo) {
	slices.SortStableFunc(runs, func(a, b RunInfo) int {
		switch {
		case a.Result != nil && b.Result == nil:
			return -1
		case a.Result == nil && b.Result != nil:
			return 1
		case a.Result != nil && !a.Scheduled.Equal(b.Scheduled):
			return a.Scheduled.Compare(b.Scheduled)
		case a.Result == nil:
			ta, _, aok := ParseRunKey(a.RunKey)
			tb, _, bok := ParseRunKey(b.RunKey)
			if aok && bok && !ta.Equal(tb) {
				return ta.Compare(tb)
			}
		}
		return strings.Compare(a.RunKey, b.RunKey)
	})
}

// cleanup deletes the job's oldest finished runs beyond its history
// limit. Runs still running are never touched. Best effort: a failure is
// logged and retried after the next run.
func (sc *Scheduler) cleanup(ctx context.Context, p *plan) {
	runs, err := listRuns(ctx, sc.sess, p.Name)
	if err != nil {
		sc.log.Warn("history cleanup: list runs", "job", p.Name, "err", err)
		return
	}
	var finished []RunInfo
	for _, r := range runs {
		if r.Result != nil && !r.Running {
			finished = append(finished, r)
		}
	}
	for _, r := range finished[:max(0, len(finished)-p.HistoryLimit)] {
		if err := sc.deleteRun(ctx, p.Name, r.RunKey); err != nil {
			sc.log.Warn("history cleanup: delete run", "job", p.Name, "run", r.RunKey, "err", err)
			return
		}
	}
}

// deleteRun deletes a finished run's node and children in one multi, and
// its local log file.
func (sc *Scheduler) deleteRun(ctx context.Context, job, key string) error {
	s := sc.sess
	err := s.Retry(ctx, func() error {
		kids, _, err := s.Children(ctx, RunPath(job, key))
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		var ops []any
		for _, k := range kids {
			if k == "binding" {
				return nil // someone stands for it again: not finished
			}
			ops = append(ops, &zk.DeleteRequest{Path: RunPath(job, key) + "/" + k, Version: -1})
		}
		ops = append(ops, &zk.DeleteRequest{Path: RunPath(job, key), Version: -1})
		_, err = s.Multi(ctx, ops...)
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNotEmpty) {
			return nil // another scheduler cleaned up, or a child appeared
		}
		return err
	})
	if err == nil {
		_ = removeFile(runUnit(job, key).logPath(sc.logDir))
	}
	return err
}
