package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/monitor/series"
)

// The series of each task (package series) live in SeriesPath/<task>,
// written by the active monitor from the same reading of the task
// (cluster.ViewTask) its rules, ctl and the console use:
//
//   - a task's node is written only when its series changed: a sample
//     with no value (a stopped task, or one whose lag is unknown and
//     that nothing applies) changes nothing, so idle tasks cost no
//     write and no read;
//   - a changed series is written at most once per bucket of the finest
//     tier (a minute), with the first sample of each minute, and once
//     more when the task stops having values: the node lags what the
//     monitor holds by at most one minute, and that minute (at most
//     three samples at the default interval) is what a monitor that
//     dies loses;
//   - every write is a multi-operation conditional on the writer's
//     election node, as the state's is;
//   - the series of a task no longer in the snapshot is deleted.
//
// A node the monitor's identity did not write alone (Session.CheckTrusted)
// or that does not decode is replaced, not continued.

// seriesWriter is the active monitor's series of each task and what of
// them is stored. It is owned by Run's goroutine (evaluate), as the rest
// of a term's state is.
type seriesWriter struct {
	s      *recipe.Session
	log    *slog.Logger
	writes func() // counts a write (metrics)

	// term is the election node of the term the cache belongs to: a new
	// term reads the nodes again (another monitor wrote meanwhile).
	term  string
	tasks map[string]*taskSeries
	// pruned are the tasks of the snapshot the stored series were last
	// pruned to; nil: not yet in this term.
	pruned map[string]bool
}

// taskSeries is one task's series in memory and the state of its node.
type taskSeries struct {
	ring *series.Ring
	// version of the node; -1: there is none.
	version int32
	// replace: the node holds what this monitor may not continue; it is
	// deleted and created again.
	replace bool
	// dirty: the ring holds samples the node does not; stored is the
	// newest minute bucket the node holds.
	dirty  bool
	stored time.Time
}

func newSeriesWriter(s *recipe.Session, log *slog.Logger, writes func()) *seriesWriter {
	return &seriesWriter{s: s, log: log, writes: writes, tasks: map[string]*taskSeries{}}
}

// ErrSeriesName reports a task name that cannot name a series node.
var ErrSeriesName = errors.New("monitor: not a task name")

// SeriesNode is the node of a task's series.
func SeriesNode(task string) (string, error) {
	if task == "" || task == "." || task == ".." || len(task) > 255 || strings.ContainsAny(task, "/\x00") {
		return "", fmt.Errorf("%w: %q", ErrSeriesName, task)
	}
	return SeriesPath + "/" + task, nil
}

// TaskSample is what the series records of a task at an evaluation: the
// lag of cluster.ViewTask (unknown when it is not known, and for a
// stopped task), and its rows per second while an owner applies or
// retries (unknown otherwise). history are the monitor's samples of the
// task's source.
func TaskSample(ts core.TaskStatus, history []PosSample, now time.Time) series.Sample {
	v := cluster.ViewTask(ts, history, now)
	smp := series.Sample{At: now, Lag: series.Unknown, Rows: series.Unknown}
	if v.LagKnown && v.State != cluster.TaskStopped {
		smp.Lag = v.Lag.Seconds()
	}
	if v.State == cluster.TaskRunning || v.State == cluster.TaskRetrying {
		smp.Rows = v.RowsPerSecond
	}
	return smp
}

// record adds this evaluation's sample of every task to its series and
// stores the series due, as the active monitor of term.
func (w *seriesWriter) record(ctx context.Context, term string, in *Input) error {
	if term != w.term {
		w.term, w.tasks, w.pruned = term, map[string]*taskSeries{}, nil
	}
	names := make(map[string]bool, len(in.Snap.Tasks))
	for _, ts := range in.Snap.Tasks {
		names[ts.Name] = true
		smp := TaskSample(ts, in.History.Tasks[ts.Name].samples(), in.Now)
		st := w.tasks[ts.Name]
		if smp.Empty() && (st == nil || !st.dirty) {
			continue // nothing new: no read, no write
		}
		if st == nil {
			var err error
			if st, err = w.load(ctx, ts.Name); err != nil {
				return err
			}
			w.tasks[ts.Name] = st
		}
		if st.ring.Append(smp) {
			st.dirty = true
		}
		newest, _ := st.ring.Newest()
		if !st.dirty || (!smp.Empty() && st.version >= 0 && !st.replace && newest.Equal(st.stored)) {
			continue // this minute is stored already: the next one writes
		}
		if err := w.write(ctx, ts.Name, st); err != nil {
			delete(w.tasks, ts.Name) // read again next time
			return err
		}
		st.dirty, st.stored = false, newest
	}
	if _, bad := in.Snap.Errors[cluster.SectionTasks]; bad || maps.Equal(names, w.pruned) {
		return nil // a failed read is no deletion
	}
	for k := range w.tasks {
		if !names[k] {
			delete(w.tasks, k)
		}
	}
	if err := w.prune(ctx, names); err != nil {
		return err
	}
	w.pruned = names
	return nil
}

// load reads a task's stored series, or starts an empty one.
func (w *seriesWriter) load(ctx context.Context, task string) (*taskSeries, error) {
	p, err := SeriesNode(task)
	if err != nil {
		return nil, err
	}
	var data []byte
	var stat *zk.Stat
	err = w.s.Retry(ctx, func() (err error) {
		data, stat, err = w.s.Get(ctx, p)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return &taskSeries{ring: &series.Ring{}, version: -1}, nil
	case err != nil:
		return nil, fmt.Errorf("monitor: read %s: %w", p, err)
	}
	st := &taskSeries{ring: &series.Ring{}, version: stat.Version}
	if err := w.s.CheckTrusted(ctx, Root, p); err != nil {
		w.log.Warn("monitor: series replaced: its node is not the monitor's own", "task", task, "error", err)
		st.replace = true
		return st, nil
	}
	r, err := series.Decode(data)
	if err != nil {
		w.log.Warn("monitor: series replaced: its node does not decode", "task", task, "path", p, "error", err)
		st.replace = true
		return st, nil
	}
	st.ring = r
	st.stored, _ = r.Newest()
	return st, nil
}

// write stores a task's series, fenced by the term's election node.
func (w *seriesWriter) write(ctx context.Context, task string, st *taskSeries) error {
	p, err := SeriesNode(task)
	if err != nil {
		return err
	}
	data := st.ring.Encode()
	ops := []any{&zk.CheckVersionRequest{Path: w.term, Version: 0}}
	create := &zk.CreateRequest{Path: p, Data: data, Flags: zk.FlagPersistent}
	switch {
	case st.version < 0:
		if err := w.s.EnsurePath(ctx, SeriesPath); err != nil {
			return fmt.Errorf("monitor: create %s: %w", SeriesPath, err)
		}
		ops = append(ops, create)
	case st.replace:
		ops = append(ops, &zk.DeleteRequest{Path: p, Version: st.version}, create)
	default:
		ops = append(ops, &zk.SetDataRequest{Path: p, Data: data, Version: st.version})
	}
	if _, err := w.s.Multi(ctx, ops...); err != nil {
		return fmt.Errorf("monitor: write %s (fenced by %s): %w", p, w.term, err)
	}
	if st.version < 0 || st.replace {
		st.version, st.replace = 0, false
	} else {
		st.version++
	}
	w.writes()
	return nil
}

// prune deletes the stored series of tasks not in names.
func (w *seriesWriter) prune(ctx context.Context, names map[string]bool) error {
	var kids []string
	err := w.s.Retry(ctx, func() (err error) {
		kids, _, err = w.s.Children(ctx, SeriesPath)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil
	case err != nil:
		return fmt.Errorf("monitor: list %s: %w", SeriesPath, err)
	}
	for _, k := range kids {
		if names[k] {
			continue
		}
		p := SeriesPath + "/" + k
		_, err := w.s.Multi(ctx, &zk.CheckVersionRequest{Path: w.term, Version: 0}, &zk.DeleteRequest{Path: p, Version: -1})
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("monitor: delete %s (fenced by %s): %w", p, w.term, err)
		}
	}
	return nil
}

// ReadSeries reads a task's series as the active monitor stored it, and
// when it was last written; found is false when there is none. Its
// content is untrusted input: a node a session without the reader's
// identity could have written is refused (recipe.ErrUntrusted, with the
// fix), one that does not decode is an error wrapping
// series.ErrBadSeries.
func ReadSeries(ctx context.Context, s *recipe.Session, task string) (r *series.Ring, written time.Time, found bool, err error) {
	p, err := SeriesNode(task)
	if err != nil {
		return nil, time.Time{}, false, err
	}
	var data []byte
	var stat *zk.Stat
	err = s.Retry(ctx, func() (err error) {
		data, stat, err = s.Get(ctx, p)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return &series.Ring{}, time.Time{}, false, nil
	case err != nil:
		return nil, time.Time{}, false, fmt.Errorf("monitor: read %s: %w", p, err)
	}
	if err := s.CheckTrusted(ctx, Root, p); err != nil {
		return nil, time.Time{}, false, fmt.Errorf("monitor: series of task %s: %w", task, err)
	}
	if r, err = series.Decode(data); err != nil {
		return nil, time.Time{}, false, fmt.Errorf("monitor: %s: %w: the active monitor replaces it at the task's next sample", p, err)
	}
	return r, time.UnixMilli(stat.Mtime).UTC(), true, nil
}
