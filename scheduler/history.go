package scheduler

import (
	"context"
	"errors"
	"path/filepath"
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

// deleteRun deletes a finished run's node and everything below it (a
// sharded run's items and workers) in one multi, and its local log
// files. A run with a binding anywhere (its own, or an item's) is left
// alone: someone works on it.
func (sc *Scheduler) deleteRun(ctx context.Context, job, key string) error {
	s := sc.sess
	err := s.Retry(ctx, func() error {
		var ops []any
		busy := false
		// below appends the deletes of p's descendants, deepest first.
		var below func(p string) error
		below = func(p string) error {
			kids, _, err := s.Children(ctx, p)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			if err != nil {
				return err
			}
			for _, k := range kids {
				if k == "binding" {
					busy = true
					return nil
				}
				if err := below(p + "/" + k); err != nil || busy {
					return err
				}
				ops = append(ops, &zk.DeleteRequest{Path: p + "/" + k, Version: -1})
			}
			return nil
		}
		if ok, _, err := s.Exists(ctx, RunPath(job, key)); err != nil || !ok {
			return err
		}
		if err := below(RunPath(job, key)); err != nil || busy {
			return err
		}
		ops = append(ops, &zk.DeleteRequest{Path: RunPath(job, key), Version: -1})
		_, err := s.Multi(ctx, ops...)
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNotEmpty) {
			return nil // another scheduler cleaned up, or a child appeared
		}
		return err
	})
	if err == nil {
		_ = removeFile(runUnit(job, key).logPath(sc.logDir))
		items, _ := filepath.Glob(filepath.Join(sc.logDir, job, globEscape(key)+".item-*.log"))
		for _, f := range items {
			_ = removeFile(f)
		}
	}
	return err
}

// globEscape quotes the glob metacharacters of s.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`).Replace(s)
}
