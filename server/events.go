package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
)

// live is what /api/v1/events sends on every new snapshot: the fields
// the pages update in place, small enough to send to every browser.
type live struct {
	ReadAt     time.Time          `json:"readAt"`
	Tasks      []liveTask         `json:"tasks"`
	Jobs       []liveJob          `json:"jobs"`
	Collectors []liveCollector    `json:"collectors"`
	Errors     map[Section]string `json:"errors,omitempty"`
	// Alerts is the banner every page shows (events only).
	Alerts *alertBanner `json:"alerts,omitempty"`
}

type liveTask struct {
	Name string `json:"name"`
	// Standby is "hot", or "cold (group)".
	Standby  string `json:"standby"`
	Desired  string `json:"desired"`
	State    string `json:"state"` // cluster.ViewTask's
	Owner    string `json:"owner"`
	Position string `json:"position"`
	// Lag is for people ("1m30s", "unknown", "-"); LagSeconds is null
	// when unknown.
	Lag        string   `json:"lag"`
	LagSeconds *float64 `json:"lagSeconds"`
	Error      string   `json:"error,omitempty"`
	// Actions are the task page's actions that apply now (taskActions).
	Actions []string `json:"actions"`
	// Copy sums up a start: snapshot task's table copy (empty when there
	// is none to show) and CopyPercent is its progress bar's value, 0 to
	// 100 (-1: no estimate).
	Copy        string  `json:"copy,omitempty"`
	CopyPercent float64 `json:"copyPercent,omitempty"`
}

// Can reports whether the action (start, stop, handover) applies now.
func (t liveTask) Can(action string) bool { return slices.Contains(t.Actions, action) }

// taskActions are the actions that apply to the task as lt summarizes it:
// start when it is meant to be stopped or its owner FAILED, stop when it
// is meant to run, handover for a hot task with an instance standing by
// (what core.Admin.Handover would refuse otherwise).
func taskActions(ts core.TaskStatus, lt liveTask) []string {
	actions := []string{}
	if lt.Desired == core.DesiredStopped || lt.State == cluster.TaskFailed {
		actions = append(actions, "start")
	}
	if lt.Desired == core.DesiredRunning {
		actions = append(actions, "stop")
	}
	if ts.Spec != nil && ts.Spec.Standby.Mode != core.ModeCold && len(ts.Instances) >= 2 {
		actions = append(actions, "handover")
	}
	return actions
}

type liveJob struct {
	Name     string `json:"name"`
	Schedule string `json:"schedule"`
	// Defined is "stored", or "file on host, …"; Error why the stored
	// job is refused.
	Defined   string `json:"defined"`
	Error     string `json:"error,omitempty"`
	Next      string `json:"next,omitempty"` // the next fire time, as pages show times
	Paused    bool   `json:"paused"`
	Running   bool   `json:"running"`
	LastRun   string `json:"lastRun,omitempty"`
	LastState string `json:"lastState,omitempty"`
	// Runs are the job's runs in the snapshot, oldest first: the jobs
	// page's run grid.
	Runs []liveRun `json:"runs"`
}

// liveRun is one cell of the run grid: a run and its state, the status
// of its result or "running" or "pending".
type liveRun struct {
	Key   string `json:"key"`
	State string `json:"state"`
}

type liveCollector struct {
	Name  string `json:"name"`
	Alive bool   `json:"alive"`
	Lines int64  `json:"lines"`
}

// taskSummary is a task as the API's events and the pages show it:
// cluster.ViewTask's reading, against snap's samples of its source (snap
// may be nil: lag then only from the owner's own report).
func taskSummary(snap *Snapshot, ts core.TaskStatus) liveTask {
	var v cluster.TaskView
	if snap != nil {
		v = snap.TaskView(ts)
	} else {
		v = cluster.ViewTask(ts, nil, time.Now())
	}
	lt := liveTask{Name: ts.Name, State: v.State, Owner: v.Owner, Lag: v.LagText(), Error: v.Error}
	if ts.Spec != nil {
		lt.Desired = ts.Spec.State
		lt.Standby = ts.Spec.Standby.Mode
		if ts.Spec.Standby.Mode == core.ModeCold {
			lt.Standby += " (" + ts.Spec.Standby.Group + ")"
		}
	}
	if !v.Position.IsZero() {
		lt.Position = v.Position.String()
	}
	if v.LagKnown && v.State != cluster.TaskStopped {
		secs := v.Lag.Seconds()
		lt.LagSeconds = &secs
	}
	lt.Actions = taskActions(ts, lt)
	if sn := v.Snapshot; sn != nil {
		lt.Copy, lt.CopyPercent = sn.Text(), sn.Percent()
	}
	return lt
}

func jobSummary(j JobStatus) liveJob {
	lj := liveJob{Name: j.Name, Schedule: j.Job.Schedule, Defined: "stored", Error: j.Error, Paused: j.Paused, Running: len(j.Running()) > 0}
	if !j.Stored {
		lj.Defined = "file on " + strings.Join(j.FileHosts, ", ")
	}
	if len(j.Next) > 0 {
		lj.Next = j.Next[0].UTC().Format(pageTime)
	}
	if last := j.Last(); last != nil {
		lj.LastRun, lj.LastState = last.RunKey, string(last.Status)
	}
	lj.Runs = make([]liveRun, 0, len(j.Runs))
	for _, r := range slices.Backward(j.Runs) {
		lr := liveRun{Key: r.RunKey, State: "pending"}
		switch {
		case r.Result != nil:
			lr.State = string(r.Result.Status)
		case r.Waiting != nil:
			lr.State = "waiting"
		case r.Running:
			lr.State = "running"
		}
		lj.Runs = append(lj.Runs, lr)
	}
	return lj
}

func summarize(snap *Snapshot) live {
	l := live{ReadAt: snap.ReadAt, Errors: snap.Errors,
		Tasks: make([]liveTask, len(snap.Tasks)), Jobs: make([]liveJob, len(snap.Jobs)), Collectors: make([]liveCollector, len(snap.Collectors))}
	for i, ts := range snap.Tasks {
		l.Tasks[i] = taskSummary(snap, ts)
	}
	for i, j := range snap.Jobs {
		l.Jobs[i] = jobSummary(j)
	}
	for i, c := range snap.Collectors {
		l.Collectors[i] = liveCollector{Name: c.Name, Alive: c.Alive, Lines: c.Lines}
	}
	return l
}

// eventCache encodes each snapshot, with the alerts read for it, once
// for all streams: as a whole ("snapshot" event: a stream's first, and
// one that skipped snapshots) and as what changed since the snapshot
// before it ("delta" event: one task's change sends that task).
type eventCache struct {
	mu     sync.Mutex
	snap   *Snapshot
	alerts *alertBoard
	full   []byte // event: snapshot, of snap
	// enc is snap's summary, each entry as JSON by name: what deltas
	// from snap compare against, encoded once.
	enc     encodedLists
	prev    *Snapshot    // the snapshot before snap
	prevEnc encodedLists // enc of prev
	delta   []byte       // event: delta, from prev to snap; nil: send full
}

// encodedLists are a summary's lists, each entry's JSON by its name.
type encodedLists struct{ tasks, jobs, collectors map[string][]byte }

// unreadSection reports whether a section of the tasks, jobs or
// collectors could not be read into snap.
func unreadSection(snap *Snapshot) bool {
	for _, sec := range []Section{cluster.SectionTasks, cluster.SectionJobs, cluster.SectionCollectors} {
		if _, bad := snap.Errors[sec]; bad {
			return true
		}
	}
	return false
}

// listDelta is how one list of the summary changed: the entries set
// (added or changed) and the names deleted.
type listDelta[T any] struct {
	Set []T      `json:"set,omitempty"`
	Del []string `json:"del,omitempty"`
}

// liveDelta is a "delta" event: the changes from the snapshot before.
// A client applies it to the summary it holds and has the new one.
type liveDelta struct {
	ReadAt     time.Time                `json:"readAt"`
	Tasks      listDelta[liveTask]      `json:"tasks"`
	Jobs       listDelta[liveJob]       `json:"jobs"`
	Collectors listDelta[liveCollector] `json:"collectors"`
	Errors     map[Section]string       `json:"errors,omitempty"`
	Alerts     *alertBanner             `json:"alerts,omitempty"`
}

// encodeList is each entry's JSON, what the client holds, by name.
func encodeList[T any](list []T, name func(T) string) map[string][]byte {
	out := make(map[string][]byte, len(list))
	for _, e := range list {
		b, _ := json.Marshal(e)
		out[name(e)] = b
	}
	return out
}

// diffList compares a list, encoded as enc, with the encoding of the one
// before (was): the entries added or changed, the names gone.
func diffList[T any](was, enc map[string][]byte, cur []T, name func(T) string) listDelta[T] {
	var d listDelta[T]
	for _, e := range cur {
		if prev, ok := was[name(e)]; !ok || !bytes.Equal(prev, enc[name(e)]) {
			d.Set = append(d.Set, e)
		}
	}
	for n := range was {
		if _, ok := enc[n]; !ok {
			d.Del = append(d.Del, n)
		}
	}
	slices.Sort(d.Del)
	return d
}

func sseEvent(name string, v any) []byte {
	b, _ := json.Marshal(v)
	return append(append([]byte("event: "+name+"\ndata: "), b...), "\n\n"...)
}

// encode returns the event that brings a stream which last sent the
// snapshot sent (nil: none yet) to snap: the delta when it sent the one
// before snap, else the whole summary.
func (c *eventCache) encode(snap *Snapshot, alerts *alertBoard, sent *Snapshot) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != snap || c.alerts != alerts {
		if c.snap != snap {
			c.prev, c.prevEnc = c.snap, c.enc
		}
		l := summarize(snap)
		banner := alerts.Banner()
		l.Alerts = &banner
		taskName, jobName, colName := func(t liveTask) string { return t.Name }, func(j liveJob) string { return j.Name }, func(c liveCollector) string { return c.Name }
		enc := encodedLists{encodeList(l.Tasks, taskName), encodeList(l.Jobs, jobName), encodeList(l.Collectors, colName)}
		// A section a snapshot could not read is empty in it, and the
		// pages leave such a section as it was: deltas from or to it
		// would not match what a page holds, so those go whole.
		c.delta = nil
		if !unreadSection(snap) && c.prev != nil && !unreadSection(c.prev) {
			was := c.prevEnc
			c.delta = sseEvent("delta", liveDelta{ReadAt: l.ReadAt, Errors: l.Errors, Alerts: l.Alerts,
				Tasks:      diffList(was.tasks, enc.tasks, l.Tasks, taskName),
				Jobs:       diffList(was.jobs, enc.jobs, l.Jobs, jobName),
				Collectors: diffList(was.collectors, enc.collectors, l.Collectors, colName)})
		}
		c.snap, c.alerts, c.enc = snap, alerts, enc
		c.full = sseEvent("snapshot", l)
	}
	if sent != nil && sent == c.prev && c.delta != nil {
		return c.delta
	}
	return c.full
}

// maxStreams bounds the open event streams of one console, and
// maxUserStreams those of one user (every tab of every browser of theirs,
// and every client of their tokens): one user cannot take them all.
const (
	maxStreams     = 1000
	maxUserStreams = 20
)

// keepAlive is how often an idle stream gets a comment, so that proxies
// keep it open and a gone client is noticed.
const keepAlive = 15 * time.Second

// apiEvents streams a summary of the newest snapshot and of every new one as server-sent
// events until the client goes away. A slow client skips snapshots (the
// feed keeps only the newest for it) instead of holding others up.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request, p principal) error {
	if err := s.streams.acquire(p.User); err != nil {
		return err
	}
	defer s.streams.release(p.User)
	s.metrics.streams.Inc()
	defer s.metrics.streams.Dec()
	ch, cancel := s.deps.Feed.Subscribe()
	defer cancel()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	var sent *Snapshot // the last snapshot this stream sent
	for {
		select {
		case <-r.Context().Done():
			return nil
		case snap, ok := <-ch:
			if !ok {
				return nil
			}
			// The credential the stream was opened with must still hold:
			// a logout, a revoked token or a removed user ends it, rather
			// than leaving the cluster streaming to whoever kept it open.
			if still, err := s.authenticate(r); err != nil || still.User != p.User || still.Role != p.Role {
				return nil
			}
			if !send(s.events.encode(snap, s.alertsFor(r.Context(), snap), sent)) {
				return nil
			}
			sent = snap
		case <-tick.C:
			if !send([]byte(": keep-alive\n\n")) {
				return nil
			}
		}
	}
}

// streamQuota counts open event streams, in all and per user, and
// refuses instead of waiting.
type streamQuota struct {
	mu         sync.Mutex
	n, max     int
	perUser    map[string]int
	maxPerUser int
}

func newStreamQuota(max, maxPerUser int) *streamQuota {
	return &streamQuota{max: max, maxPerUser: maxPerUser, perUser: map[string]int{}}
}

// acquire takes a stream for user, or says which limit refuses it.
func (q *streamQuota) acquire(user string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.perUser[user] >= q.maxPerUser:
		return errorf(http.StatusTooManyRequests, "too_many_streams", fmt.Sprintf("%s has %d live-update streams open, the most one user may: close some of the console's tabs", user, q.perUser[user]))
	case q.n >= q.max:
		return errorf(http.StatusServiceUnavailable, "too_many_streams", "this console serves its maximum of event streams: retry later or use another console")
	}
	q.n++
	q.perUser[user]++
	return nil
}

func (q *streamQuota) release(user string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.n--
	if q.perUser[user]--; q.perUser[user] == 0 {
		delete(q.perUser, user)
	}
}
