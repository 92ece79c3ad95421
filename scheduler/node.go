package scheduler

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Node selection: a scheduler has labels (Options.Labels, --labels); a
// job's nodeSelector names labels a scheduler must all have for the job
// to be fired there; its routing says which of those schedulers runs a
// run: any (whoever wins the election) or spread (awaitTurn).

// Routing is Job.Routing.
type Routing string

// Routings.
const (
	// RouteAny: the first scheduler to create the run's binding runs it.
	RouteAny Routing = "any"
	// RouteSpread: the runs go round the schedulers that fire the job.
	RouteSpread Routing = "spread"
)

// MaxLabels bounds a scheduler's labels and a job's nodeSelector.
const MaxLabels = 32

var (
	labelKey   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]{0,62})$`)
	labelValue = regexp.MustCompile(`^[A-Za-z0-9._-]{0,63}$`)
)

// checkLabels checks labels or a nodeSelector; the error names field and
// the label.
func checkLabels(field string, labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("%s: %d labels: at most %d", field, len(labels), MaxLabels)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range labels {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		if !labelKey.MatchString(k) {
			return fmt.Errorf("%s: label %q: want 1-63 letters, digits, '.', '_', '/' or '-', starting with a letter or digit", field, k)
		}
		if !labelValue.MatchString(labels[k]) {
			return fmt.Errorf("%s: label %s=%q: want up to 63 letters, digits, '.', '_' or '-'", field, k, labels[k])
		}
	}
	return nil
}

// ParseLabels reads --labels: "k=v" items (a flag may hold several,
// comma-separated). The error names the item.
func ParseLabels(items []string) (map[string]string, error) {
	var out map[string]string
	for _, item := range items {
		for _, kv := range strings.Split(item, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("%w: --labels: %q: want key=value", ErrInvalidLabels, kv)
			}
			if _, dup := out[k]; dup {
				return nil, fmt.Errorf("%w: --labels: %s given twice", ErrInvalidLabels, k)
			}
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	if err := checkLabels("--labels", out); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidLabels, err)
	}
	return out, nil
}

// Matches reports whether a scheduler with labels may fire a job with
// selector: it has every label of the selector, with its value.
func Matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// spreadWait bounds how long a scheduler holds back its election for its
// turn (awaitTurn): the scheduler whose turn it is may never stand for
// the run (it loaded the job after the run's time), and two schedulers
// that read the history at different moments may each wait for the
// other. A variable for tests.
var spreadWait = 10 * time.Second

// turn is what decideTurn decides.
type turn int

const (
	turnMine         turn = iota // elect now
	turnWaitJoined               // another scheduler, already standing for the run, goes first
	turnWaitExpected             // another scheduler that fires the job goes first when it stands
)

// decideTurn is the decision of awaitTurn: whether self elects now. The
// pool is the schedulers standing for the run (joined) and those
// expected to (expected: live, firing the job). A scheduler that was
// master of one of the job's len(pool)-1 latest runs (recent, newest
// first) lets the others go first. It reads nothing and writes nothing.
func decideTurn(self string, joined, expected, recent []string) turn {
	pool := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(joined), expected...))))
	if len(pool) <= 1 {
		return turnMine
	}
	var held []string // hosts whose turn it is not
	for _, h := range recent {
		if len(held) == len(pool)-1 {
			break
		}
		if slices.Contains(pool, h) && !slices.Contains(held, h) {
			held = append(held, h)
		}
	}
	if !slices.Contains(held, self) {
		return turnMine
	}
	v := turnMine
	for _, h := range pool {
		switch {
		case slices.Contains(held, h):
		case slices.Contains(joined, h):
			return turnWaitJoined
		default:
			v = turnWaitExpected
		}
	}
	return v
}

// memberHost is the host of a worker node's name, <host>-<session id>.
func memberHost(member string) string {
	if i := strings.LastIndexByte(member, '-'); i > 0 {
		return member[:i]
	}
	return member
}

// joinRun registers this scheduler (on its current session) as standing
// for a run, under the run's workers, as *me, replacing a registration of
// an earlier session.
func (sc *Scheduler) joinRun(ctx context.Context, job, key string, me *string) error {
	s := sc.sess
	member := fmt.Sprintf("%s-%x", sc.host, s.ID())
	if *me != "" && *me != member {
		sc.leaveWorkers(ctx, job, key, *me)
	}
	err := s.Retry(ctx, func() error {
		if err := s.EnsurePath(ctx, workersPath(job, key)); err != nil {
			return err
		}
		_, err := s.Create(ctx, workersPath(job, key)+"/"+member, nil, zk.FlagEphemeral, nil)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil // our own create whose reply was lost, or the run's work
		}
		return err
	})
	if err == nil {
		*me = member
	}
	return err
}

// awaitTurn holds back the election of a run of a job with routing
// spread while it is not this scheduler's turn (decideTurn), at most
// spreadWait. It returns when the run has a master or a result, or when
// it is its turn. It registers this scheduler among the run's workers
// (*me), which the caller leaves.
func (sc *Scheduler) awaitTurn(ctx context.Context, req runReq, me *string) error {
	p, key := req.p, req.key
	u := runUnit(p.Name, key)
	var until time.Time
	for {
		wctx, cancel := context.WithCancel(ctx)
		wake := make(chan struct{}, 1)
		forward := func(ch <-chan zk.Event) {
			go func() {
				select {
				case <-ch:
					select {
					case wake <- struct{}{}:
					default:
					}
				case <-wctx.Done():
				}
			}()
		}
		v, err := sc.readTurn(wctx, req, u, me, forward)
		if err != nil || v == turnMine {
			cancel()
			return err
		}
		now := sc.now()
		if until.IsZero() {
			until = now.Add(spreadWait)
			sc.log.Info("not this scheduler's turn (routing spread): waiting for another to run it", "job", p.Name, "run", key, "at_most", spreadWait)
		}
		if !now.Before(until) {
			cancel()
			sc.log.Info("the scheduler whose turn it is did not run it; standing for it", "job", p.Name, "run", key)
			return nil
		}
		t := time.NewTimer(until.Sub(now))
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// readTurn reads what decideTurn needs, leaving watches (forward) on
// what changes it: the run's result and binding, its workers, the
// running schedulers. A run that has a master or a result is turnMine:
// the caller goes on to learn it.
func (sc *Scheduler) readTurn(ctx context.Context, req runReq, u unit, me *string, forward func(<-chan zk.Event)) (turn, error) {
	s, p := sc.sess, req.p
	for _, path := range []string{u.resultPath(), u.bindingPath()} {
		ok, _, ch, err := s.Retrying().ExistsW(ctx, path)
		if err != nil || ok {
			return turnMine, err
		}
		forward(ch)
	}
	if err := sc.joinRun(ctx, u.job, u.key, me); err != nil {
		return turnMine, err
	}
	members, _, ch, err := s.Retrying().ChildrenW(ctx, workersPath(u.job, u.key))
	if err != nil {
		return turnMine, err
	}
	forward(ch)
	var joined []string
	for _, m := range members {
		joined = append(joined, memberHost(m))
	}
	_, _, ch, err = s.Retrying().ChildrenW(ctx, SchedulersPath)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return turnMine, err
	}
	if err == nil {
		forward(ch)
	}
	infos, err := NewAdmin(s).Schedulers(ctx)
	if err != nil {
		return turnMine, err
	}
	var expected []string
	for _, in := range infos {
		if firesJob(in, p, sc.opts.Jobs) && (req.manual || !in.Started.After(req.scheduled)) {
			expected = append(expected, in.Host)
		}
	}
	runs, err := listRuns(ctx, s, p.Name)
	if err != nil {
		return turnMine, err
	}
	var recent []string
	for _, r := range slices.Backward(runs) {
		if r.Result != nil && !r.Result.Start.IsZero() && r.Result.Host != "" {
			recent = append(recent, r.Result.Host)
		}
	}
	return decideTurn(sc.host, joined, expected, recent), nil
}

// firesJob reports whether a running scheduler, as it publishes itself,
// fires the job p: its labels match the job's selector, and the job is
// in its jobs file or — a stored job — not in it (a file job of the same
// name would win there). fileJobs are this scheduler's own, which tell
// whether p is a file job.
func firesJob(in SchedulerInfo, p *plan, fileJobs []Job) bool {
	if !Matches(p.NodeSelector, in.Labels) {
		return false
	}
	inFile := slices.ContainsFunc(in.FileJobs, func(j Job) bool { return j.Name == p.Name })
	if slices.ContainsFunc(fileJobs, func(j Job) bool { return j.Name == p.Name }) {
		return inFile
	}
	return !inFile
}
