package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/ctxsleep"
	"github.com/shepherd-dev/shepherd/internal/hostallow"
)

// Defaults of Options.
const (
	DefaultResync = 30 * time.Second
	// maxCatchUp bounds how many missed runs a returning scheduler
	// enumerates per job; older ones are only counted in the log.
	maxCatchUp = 1000
)

// Options configures a Scheduler. The zero value works.
type Options struct {
	// Jobs are the jobs of a jobs file (ParseJobs); stored jobs
	// (/scheduler/jobs) are added to them. A stored job named like a
	// file job is refused (logged): the file, which only its machine's
	// operator can change, wins. Run publishes them, read-only, for ctl
	// (SchedulersPath).
	Jobs []Job
	// JobsFile names the file Jobs came from; it is only published, in
	// SchedulerInfo.JobsFile.
	JobsFile string
	// Host names this scheduler in results; default the hostname.
	Host string
	// LogDir holds the per-run log files, <LogDir>/<job>/<run-key>.log;
	// default <temp dir>/shepherd-scheduler.
	LogDir string
	// Logger receives the scheduler's log; default slog.Default().
	Logger *slog.Logger
	// Resync is how often stored jobs are re-read even without a watch
	// event; default DefaultResync.
	Resync time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Registerer, if set, gets the scheduler's Prometheus metrics
	// (shepherd_scheduler_*).
	Registerer prometheus.Registerer
	// Labels are this scheduler's labels: it fires only the jobs whose
	// nodeSelector they match (--labels). Published with it.
	Labels map[string]string
	// HTTPAllow are the hosts HTTP jobs may call (--http-allow): CIDRs,
	// IP addresses, host names as written. Empty: none.
	HTTPAllow []string
	// Freshness answers the freshness gates of jobs (Dependency.Task).
	// Nil: a run with one waits until its starting deadline and is
	// recorded missed.
	Freshness Freshness
}

// Scheduler fires jobs on their schedules and runs each run exactly once
// across all schedulers sharing the coordination server.
type Scheduler struct {
	sess   *recipe.Session
	opts   Options
	host   string
	pid    int
	logDir string
	log    *slog.Logger
	now    func() time.Time

	runs    sync.WaitGroup // settle calls in flight
	metrics *metrics

	httpAllow  hostallow.List // hosts HTTP jobs may call
	httpClient *http.Client

	mu       sync.Mutex
	refused  map[string]string // stored job or trigger path -> why it is refused
	funcs    map[string]JobFunc
	subs     map[int]chan Result
	nextSub  int
	inflight map[string]bool // job + "/" + run key settling here
	// elsewhere are the jobs whose nodeSelector this scheduler does not
	// match.
	elsewhere map[string]bool
}

// New returns a Scheduler over s. It checks the file jobs; a bad one is
// an error naming it.
func New(s *recipe.Session, opts Options) (*Scheduler, error) {
	seen := map[string]bool{}
	for _, j := range opts.Jobs {
		if err := j.Validate(); err != nil {
			return nil, err
		}
		if seen[j.Name] {
			return nil, fmt.Errorf("%w: name %q is used twice", ErrInvalidJob, j.Name)
		}
		seen[j.Name] = true
	}
	if err := CheckCycles(opts.Jobs); err != nil {
		return nil, err
	}
	if err := checkLabels("labels", opts.Labels); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidLabels, err)
	}
	allow, err := ParseHTTPAllow(opts.HTTPAllow)
	if err != nil {
		return nil, err
	}
	if opts.Host == "" {
		opts.Host, _ = os.Hostname()
	}
	if opts.LogDir == "" {
		opts.LogDir = filepath.Join(os.TempDir(), "shepherd-scheduler")
	}
	// Results name the log file for `ctl job logs`, run from anywhere.
	if abs, err := filepath.Abs(opts.LogDir); err == nil {
		opts.LogDir = abs
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("scheduler: register metrics: %w", err)
	}
	return &Scheduler{
		httpAllow: allow, httpClient: httpClient(allow),
		metrics: m, sess: s, opts: opts, host: opts.Host, pid: os.Getpid(), logDir: opts.LogDir,
		log: opts.Logger.With("scheduler", opts.Host), now: opts.Now,
		refused: map[string]string{}, funcs: map[string]JobFunc{}, subs: map[int]chan Result{}, inflight: map[string]bool{},
	}, nil
}

// RegisterFunc makes fn the job function named name (Job.Func).
func (sc *Scheduler) RegisterFunc(name string, fn JobFunc) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.funcs[name] = fn
}

// Subscribe returns a channel of the results of every run this scheduler
// settles — run by it or by another master — and a function that ends
// the subscription. Results are dropped, with a warning, when the
// channel's buffer of buf is full.
func (sc *Scheduler) Subscribe(buf int) (<-chan Result, func()) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	id := sc.nextSub
	sc.nextSub++
	ch := make(chan Result, buf)
	sc.subs[id] = ch
	return ch, func() {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		if _, ok := sc.subs[id]; ok {
			delete(sc.subs, id)
			close(ch)
		}
	}
}

func (sc *Scheduler) notify(r Result) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, ch := range sc.subs {
		select {
		case ch <- r:
		default:
			sc.log.Warn("result subscriber is full; result dropped", "job", r.Job, "run", r.RunKey)
		}
	}
}

// Run schedules until ctx ends, then waits for the runs in flight to
// stop (a master hands its run over rather than record a failure). It
// publishes this scheduler and its file jobs under SchedulersPath while
// it runs. The end of ctx is a clean stop at any moment, start-up
// included: Run then returns nil.
func (sc *Scheduler) Run(ctx context.Context) error {
	err := sc.run(ctx)
	if ctx.Err() != nil {
		return nil // stopped: whatever step it interrupted failed for that reason
	}
	return err
}

func (sc *Scheduler) run(ctx context.Context) error {
	s := sc.sess
	for _, p := range []string{JobsPath, PausedPath, TriggersPath, ElectionRoot} {
		if err := s.Retry(ctx, func() error { return s.EnsurePath(ctx, p) }); err != nil {
			if ctx.Err() != nil {
				return nil // stopped while starting
			}
			return fmt.Errorf("scheduler: create %s: %w", p, err)
		}
	}
	unpublish := sc.announce(ctx)
	defer unpublish()
	loops := map[string]*jobLoop{}
	defer func() {
		for _, l := range loops {
			l.stop()
		}
		sc.runs.Wait()
	}()
	kick := make(chan struct{}, 1)
	for {
		iter, cancelIter := context.WithCancel(ctx)
		st, err := sc.readState(iter, kick)
		if err != nil && ctx.Err() == nil {
			sc.log.Warn("cannot read stored jobs; keeping the current ones", "err", err)
		}
		if err == nil {
			sc.reconcile(ctx, loops, st)
		}
		t := time.NewTimer(sc.opts.Resync)
		select {
		case <-kick:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		cancelIter()
		if ctx.Err() != nil {
			return nil
		}
	}
}

// announce registers this scheduler, with its file jobs, as the ephemeral
// member <host>-<pid> of SchedulersPath, in the background: a node left
// by an earlier process of the same name goes only when that process's
// session expires, and scheduling must not wait for it. The returned
// function leaves and waits. Publishing is best effort: ctl shows less
// without it, nothing runs differently.
func (sc *Scheduler) announce(ctx context.Context) (stop func()) {
	data, err := json.Marshal(sc.info())
	if err != nil {
		sc.log.Error("cannot encode this scheduler's jobs for ctl", "err", err)
		return func() {}
	}
	member := fmt.Sprintf("%s-%d", sc.host, sc.pid)
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m, err := recipe.Join(pctx, sc.sess, SchedulersPath, member, data)
		if err != nil {
			if pctx.Err() == nil {
				sc.log.Warn("cannot publish this scheduler's jobs; ctl job list will not show its file jobs", "path", SchedulersPath+"/"+member, "err", err)
			}
			return
		}
		<-pctx.Done()
		lctx, lcancel := context.WithTimeout(context.Background(), leaveTimeout)
		defer lcancel()
		if err := m.Leave(lctx); err != nil {
			sc.log.Debug("leaving "+SchedulersPath+"; the node goes with the session", "err", err)
		}
	}()
	return func() { cancel(); <-done }
}

// leaveTimeout bounds the deletion of this scheduler's node on stop; the
// node goes with the session anyway.
const leaveTimeout = 5 * time.Second

// info is what announce writes: the file jobs with the values of their
// environment variables left out, since a jobs file may carry secrets that
// were never meant for the coordination service.
func (sc *Scheduler) info() SchedulerInfo {
	in := SchedulerInfo{Version: 1, Host: sc.host, PID: sc.pid, Started: sc.now().UTC(), JobsFile: sc.opts.JobsFile, FileJobs: []Job{}, Labels: sc.opts.Labels}
	for _, j := range sc.opts.Jobs {
		j = j.withEnv(func(string) string { return RedactedEnv })
		j.Version = 1
		in.FileJobs = append(in.FileJobs, j)
	}
	return in
}

// state is what the scheduler should be doing.
type state struct {
	jobs     map[string]*plan
	paused   map[string]bool
	triggers map[string]triggerDoc // by trigger node name
}

// readState reads the stored jobs, paused jobs and triggers, watching
// each (a watch event kicks), decides what to run and records what it
// refuses: read (readStored), decide (decideState, pure), write
// (setRefused).
func (sc *Scheduler) readState(ctx context.Context, kick chan struct{}) (state, error) {
	raw, err := sc.readStored(ctx, kick)
	if err != nil {
		return state{}, err
	}
	st, refused := decideState(sc.opts.Jobs, raw)
	sc.setRefused(refused)
	sc.selectJobs(st)
	return st, nil
}

// selectJobs leaves out of st the jobs whose nodeSelector this
// scheduler's labels do not match: it neither fires them nor answers
// their triggers. A change of that set is logged.
func (sc *Scheduler) selectJobs(st state) {
	elsewhere := map[string]bool{}
	for name, p := range st.jobs {
		if !Matches(p.NodeSelector, sc.opts.Labels) {
			elsewhere[name] = true
			delete(st.jobs, name)
		}
	}
	sc.mu.Lock()
	old := sc.elsewhere
	sc.elsewhere = elsewhere
	sc.mu.Unlock()
	for name := range elsewhere {
		if !old[name] {
			sc.log.Info("job not for this scheduler: its nodeSelector does not match the labels", "job", name, "labels", sc.opts.Labels)
		}
	}
}

// storedNode is a node of the scheduler's tree as read: its data, and
// the trust check's verdict (nil, or an error wrapping
// recipe.ErrUntrusted: an unauthenticated session could have written it).
type storedNode struct {
	data  []byte
	trust error
}

// storedState is the scheduler's tree as one pass of readStored found it.
type storedState struct {
	jobs     map[string]storedNode // by job (node) name
	paused   []string
	triggers map[string]storedNode // by trigger node name
}

// readStored reads /scheduler/jobs, /scheduler/paused and
// /scheduler/triggers with the trust verdict of each node, leaving a
// watch on each job and list that kicks when it fires. Nodes deleted as
// it reads are left out. An error means the tree could not be read: the
// caller keeps its current jobs.
func (sc *Scheduler) readStored(ctx context.Context, kick chan struct{}) (storedState, error) {
	s := sc.sess
	raw := storedState{jobs: map[string]storedNode{}, triggers: map[string]storedNode{}}
	forward := func(ch <-chan zk.Event) {
		go func() {
			select {
			case <-ch:
				select {
				case kick <- struct{}{}:
				default:
				}
			case <-ctx.Done():
			}
		}()
	}
	children := func(path string) ([]string, error) {
		names, _, ch, err := s.Retrying().ChildrenW(ctx, path)
		if err != nil {
			return nil, err
		}
		forward(ch)
		return names, nil
	}
	// read returns a node's data and trust verdict; ok is false if it
	// was deleted meanwhile.
	read := func(path string, watch bool) (n storedNode, ok bool, err error) {
		var ch <-chan zk.Event
		if watch {
			n.data, _, ch, err = s.Retrying().GetW(ctx, path)
		} else {
			n.data, _, err = s.Retrying().Get(ctx, path)
		}
		if err == nil {
			if watch {
				forward(ch)
			}
			err = s.CheckTrusted(ctx, Root, path)
			if errors.Is(err, recipe.ErrUntrusted) {
				n.trust, err = err, nil
			}
		}
		if errors.Is(err, zk.ErrNoNode) {
			return n, false, nil
		}
		return n, err == nil, err
	}
	names, err := children(JobsPath)
	if err != nil {
		return raw, err
	}
	for _, name := range names {
		n, ok, err := read(JobPath(name), true)
		if err != nil {
			return raw, err
		}
		if ok {
			raw.jobs[name] = n
		}
	}
	if raw.paused, err = children(PausedPath); err != nil {
		return raw, err
	}
	if names, err = children(TriggersPath); err != nil {
		return raw, err
	}
	for _, name := range names {
		n, ok, err := read(TriggersPath+"/"+name, false)
		if err != nil {
			return raw, err
		}
		if ok {
			raw.triggers[name] = n
		}
	}
	return raw, ctx.Err()
}

// decideState is what the scheduler runs given its jobs file and the
// stored tree, and what it refuses (path -> why): a stored job that does
// not decode or names another job (decodeStoredJob), that a file job of
// its name overrides, or that is untrusted; an untrusted trigger, or one
// that does not decode (decodeTrigger: bad parameters).
func decideState(fileJobs []Job, raw storedState) (state, map[string]string) {
	st := state{jobs: map[string]*plan{}, paused: map[string]bool{}, triggers: map[string]triggerDoc{}}
	refused := map[string]string{}
	for _, j := range fileJobs {
		p, _ := compile(j) // validated by New
		st.jobs[j.Name] = p
	}
	for name, n := range raw.jobs {
		j, err := decodeStoredJob(name, n.data)
		if _, ok := st.jobs[name]; ok && err == nil {
			err = fmt.Errorf("%w: %s: the --jobs file defines a job %q too, and the file wins; remove one of them (shepherd ctl job rm %s, or rename it)",
				ErrJobRefused, JobPath(name), name, name)
		}
		if err == nil {
			err = n.trust
		}
		if err != nil {
			refused[JobPath(name)] = err.Error()
			continue
		}
		st.jobs[name], _ = compile(j)
	}
	// A stored job on a dependency cycle would wait for itself (a cycle
	// that ctl job add refuses, made by two adds at once, or with a
	// file job).
	all := make([]Job, 0, len(st.jobs))
	for _, p := range st.jobs {
		all = append(all, p.Job)
	}
	g := upstreamOf(all)
	var onCycle []string
	for name := range raw.jobs {
		if _, ok := st.jobs[name]; !ok || slices.ContainsFunc(fileJobs, func(j Job) bool { return j.Name == name }) {
			continue
		}
		if c := cycleThrough(g, name); c != nil {
			refused[JobPath(name)] = cycleError(c).Error()
			onCycle = append(onCycle, name)
		}
	}
	for _, name := range onCycle {
		delete(st.jobs, name)
	}
	for _, name := range raw.paused {
		st.paused[name] = true
	}
	for name, n := range raw.triggers {
		if n.trust != nil {
			refused[TriggersPath+"/"+name] = n.trust.Error()
			continue
		}
		tr, err := decodeTrigger(n.data)
		if err != nil {
			refused[TriggersPath+"/"+name] = err.Error()
			continue
		}
		st.triggers[name] = tr
	}
	return st, refused
}

// setRefused records what the last read of the stored state refused:
// path -> reason. A refusal is logged at error level when new or when its
// reason changed (the state is re-read at every watch event and resync),
// and its end at info level.
func (sc *Scheduler) setRefused(refused map[string]string) {
	sc.mu.Lock()
	old := sc.refused
	sc.refused = refused
	sc.mu.Unlock()
	for p, why := range refused {
		if old[p] != why {
			sc.log.Error("refusing stored job or trigger", "path", p, "err", why)
		}
	}
	for p := range old {
		if _, ok := refused[p]; !ok {
			sc.log.Info("no longer refused", "path", p)
		}
	}
	sc.metrics.refused.Set(float64(len(refused)))
}

// Refused returns the stored jobs and triggers this scheduler does not
// act on — malformed, clashing with a file job, or untrusted (an
// unauthenticated session could have written them) — by path, with why.
func (sc *Scheduler) Refused() map[string]string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	out := make(map[string]string, len(sc.refused))
	for k, v := range sc.refused {
		out[k] = v
	}
	return out
}

// jobLoop fires one job's schedule.
type jobLoop struct {
	spec   string // the plan's JSON, to notice changes
	cancel context.CancelFunc
	done   chan struct{}
}

func (l *jobLoop) stop() { l.cancel(); <-l.done }

func (sc *Scheduler) reconcile(ctx context.Context, loops map[string]*jobLoop, st state) {
	for name, l := range loops {
		p, ok := st.jobs[name]
		if !ok || st.paused[name] || string(p.Encode()) != l.spec {
			l.stop()
			delete(loops, name)
			sc.log.Info("job stopped", "job", name, "removed", !ok, "paused", st.paused[name])
		}
	}
	for name, p := range st.jobs {
		if _, ok := loops[name]; ok || st.paused[name] {
			continue
		}
		lctx, cancel := context.WithCancel(ctx)
		l := &jobLoop{spec: string(p.Encode()), cancel: cancel, done: make(chan struct{})}
		loops[name] = l
		go func() {
			defer close(l.done)
			sc.loop(lctx, ctx, p)
		}()
		sc.log.Info("job scheduled", "job", name, "schedule", p.Schedule)
	}
	for trig, tr := range st.triggers {
		job, key, ok := strings.Cut(trig, "@")
		p := st.jobs[job]
		if !ok || p == nil {
			continue // another scheduler may know the job
		}
		sc.start(ctx, runReq{p: p, key: key, scheduled: tr.Scheduled, manual: true, params: tr.Params}, func() {
			err := sc.sess.Retry(ctx, func() error {
				err := sc.sess.Delete(ctx, TriggersPath+"/"+trig, -1)
				if errors.Is(err, zk.ErrNoNode) {
					return nil
				}
				return err
			})
			if err != nil && ctx.Err() == nil {
				sc.log.Warn("cannot delete trigger", "trigger", trig, "err", err)
			}
		})
	}
}

// loop fires p's schedule until lctx ends; runs live on runCtx so that a
// changed spec does not kill a run in progress.
func (sc *Scheduler) loop(lctx, runCtx context.Context, p *plan) {
	sc.catchUp(lctx, runCtx, p)
	for {
		next := p.sched.Next(sc.now())
		if next.IsZero() {
			return
		}
		if ctxsleep.Sleep(lctx, next.Sub(sc.now())) != nil {
			return
		}
		// The timer may fire a little early on some clocks: wait for the
		// scheduled time itself.
		for sc.now().Before(next) {
			if ctxsleep.Sleep(lctx, next.Sub(sc.now())+time.Millisecond) != nil {
				return
			}
		}
		sc.fire(lctx, runCtx, p, next, false)
	}
}

// fire starts the run of p scheduled at t, unless it is a stale fire for a
// run already cleaned up.
func (sc *Scheduler) fire(ctx, runCtx context.Context, p *plan, t time.Time, missedOnly bool) {
	key := p.RunKey(t)
	m, ver, err := sc.readMarker(ctx, p.Name)
	if err != nil {
		sc.log.Warn("cannot read the job's marker; firing anyway", "job", p.Name, "err", err)
	}
	if err == nil && t.Before(m.LastScheduled) {
		ok, _, err := sc.sess.Exists(ctx, RunPath(p.Name, key))
		if err == nil && !ok {
			// Older than runs already fired and no trace of it: it ran and
			// was cleaned up, or was recorded missed and cleaned up. A
			// scheduler whose clock is behind must not run it again.
			sc.log.Warn("not firing a run older than the job's latest; is this clock behind?", "job", p.Name, "run", key, "latest", m.LastScheduled)
			return
		}
	}
	if err == nil && t.After(m.LastScheduled) {
		sc.writeMarker(ctx, p.Name, marker{LastScheduled: t}, ver)
	}
	sc.start(runCtx, runReq{p: p, key: key, scheduled: t, missedOnly: missedOnly}, nil)
}

// start settles a run in the background unless this scheduler already
// does; then runs after.
func (sc *Scheduler) start(ctx context.Context, req runReq, after func()) {
	p, key := req.p, req.key
	id := p.Name + "/" + key
	sc.mu.Lock()
	if sc.inflight[id] {
		sc.mu.Unlock()
		return
	}
	sc.inflight[id] = true
	sc.mu.Unlock()
	sc.runs.Add(1)
	go func() {
		defer sc.runs.Done()
		defer func() {
			sc.mu.Lock()
			delete(sc.inflight, id)
			sc.mu.Unlock()
		}()
		r, err := sc.settle(ctx, req)
		if err != nil {
			if ctx.Err() == nil {
				sc.log.Error("run not settled", "job", p.Name, "run", key, "err", err)
			}
			return
		}
		sc.notify(r)
		if after != nil {
			after()
		}
	}()
}

// catchUp settles the runs scheduled since the job's marker while no
// scheduler was firing it: the latest is run if within the starting
// deadline, the others are recorded missed (as Kubernetes starts only the
// latest missed run).
func (sc *Scheduler) catchUp(ctx, runCtx context.Context, p *plan) {
	m, _, err := sc.readMarker(ctx, p.Name)
	if err != nil || m.LastScheduled.IsZero() {
		return
	}
	now := sc.now()
	var missed []time.Time
	for t := p.sched.Next(m.LastScheduled); !t.IsZero() && !t.After(now); t = p.sched.Next(t) {
		if len(missed) == maxCatchUp {
			sc.log.Warn("too many missed runs; only the latest are recorded", "job", p.Name, "limit", maxCatchUp)
			missed = missed[len(missed)-p.HistoryLimit:]
		}
		missed = append(missed, t)
	}
	if len(missed) > p.HistoryLimit {
		missed = missed[len(missed)-p.HistoryLimit:]
	}
	for i, t := range missed {
		sc.log.Info("catching up a run missed while no scheduler was up", "job", p.Name, "run", p.RunKey(t))
		sc.fire(ctx, runCtx, p, t, i < len(missed)-1)
	}
}

func (sc *Scheduler) readMarker(ctx context.Context, job string) (marker, int32, error) {
	data, st, err := sc.sess.Retrying().Get(ctx, RunsPath(job))
	if errors.Is(err, zk.ErrNoNode) {
		return marker{}, -1, nil
	}
	if err != nil {
		return marker{}, 0, err
	}
	var m marker
	if len(data) > 0 {
		if err := json.Unmarshal(data, &m); err != nil {
			return marker{}, 0, fmt.Errorf("scheduler: marker of %s: %w", job, err)
		}
	}
	return m, st.Version, nil
}

// writeMarker advances the marker to m, keeping the latest time when
// schedulers race.
func (sc *Scheduler) writeMarker(ctx context.Context, job string, m marker, ver int32) {
	m.Version = 1
	data, _ := json.Marshal(m)
	s := sc.sess
	for range 5 {
		var err error
		if ver < 0 {
			if err = s.EnsurePath(ctx, ElectionRoot); err == nil {
				_, err = s.Create(ctx, RunsPath(job), data, zk.FlagPersistent, nil)
			}
		} else {
			_, err = s.Set(ctx, RunsPath(job), data, ver)
		}
		if err == nil {
			return
		}
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) && !recipe.IsRetryable(err) {
			sc.log.Warn("cannot write the job's marker", "job", job, "err", err)
			return
		}
		cur, v, rerr := sc.readMarker(ctx, job)
		if rerr != nil {
			return
		}
		if !m.LastScheduled.After(cur.LastScheduled) {
			return
		}
		ver = v
	}
}

func removeFile(name string) error {
	err := os.Remove(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
