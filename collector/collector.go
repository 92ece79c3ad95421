package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Subtrees are the roots of the collectors' nodes, for
// recipe.Session.EnsureSubtree.
func Subtrees() []recipe.Subtree { return []recipe.Subtree{{Path: LogsRoot}} }

// ErrNameInUse is returned by Run when another process writes this
// collector's status: two collectors were started with one name.
var ErrNameInUse = errors.New("collector: another process writes this collector's status")

// Config configures a Collector. Zero durations and sizes take the
// defaults below.
type Config struct {
	Name   string    // the collector's node name, unique per collector
	OutDir string    // output directory; "" for none
	Stdout io.Writer // if set, committed lines are also copied here (at most once)
	// PollInterval is how often sources are read when they had nothing new.
	PollInterval time.Duration
	// StatusInterval bounds the time between status writes (heartbeats).
	StatusInterval time.Duration
	// RotateSize is the size at which an output segment is closed.
	RotateSize int64
	// MaxRead bounds what one round reads from one source.
	MaxRead int
	// ReadTimeout bounds one read of one source (an HTTP request).
	ReadTimeout time.Duration
	HTTPClient  *http.Client
	Logger      *slog.Logger
}

// Defaults of Config.
const (
	DefaultPollInterval   = 200 * time.Millisecond
	DefaultStatusInterval = time.Second
	DefaultRotateSize     = 64 << 20
	DefaultMaxRead        = 1 << 20
	DefaultReadTimeout    = 5 * time.Second
)

func (c Config) withDefaults() Config {
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.StatusInterval <= 0 {
		c.StatusInterval = DefaultStatusInterval
	}
	if c.RotateSize <= 0 {
		c.RotateSize = DefaultRotateSize
	}
	if c.MaxRead <= 0 {
		c.MaxRead = DefaultMaxRead
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Collector collects the sources assigned to it. Create with New, run
// with Run.
type Collector struct {
	s   *recipe.Session
	cfg Config
	log *slog.Logger
	out outputs

	// Owned by the Run goroutine.
	status        Status // as last committed
	statusVersion int32
	assignVersion int32 // version of our node that srcs reflect; -1: none yet
	srcs          map[string]*source
	uncommitted   bool   // output was written that a failed commit did not cover
	inflight      []byte // status sent by a commit whose outcome is unknown
	// inflightDone is closed once the request of that commit has its
	// answer, or failed with its connection: until then it may still
	// reach the server, after anything sent meanwhile.
	inflightDone <-chan struct{}
	lastCommit   time.Time
	refused      string // why the assignment is refused; "" if trusted

	mu    sync.Mutex
	stats Stats
}

// source is one assigned source.
type source struct {
	uri       string
	lease     string
	rd        reader
	committed Progress // as in the last committed status
	pending   Progress // committed plus what this round wrote
	claimed   bool     // the takeover entry is not committed yet: write nothing
	lines     []byte   // what pending adds, for Stdout
}

// Stats is a snapshot of a collector's work.
type Stats struct {
	Sources []string // owned sources, sorted
	Commits int64    // status writes that succeeded
	Bytes   int64    // bytes committed
	Lines   int64    // lines committed
	// Refused is why the collector refuses its assignment (a node an
	// unauthenticated session could have written), or "".
	Refused string
}

// New returns a collector named cfg.Name working through s.
func New(s *recipe.Session, cfg Config) (*Collector, error) {
	if err := ValidName(cfg.Name); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Collector{
		s:             s,
		cfg:           cfg,
		log:           cfg.Logger.With("collector", cfg.Name),
		out:           outputs{dir: cfg.OutDir, name: cfg.Name},
		srcs:          map[string]*source{},
		assignVersion: -1,
	}, nil
}

// Stats returns a snapshot of the collector's work so far.
func (c *Collector) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Sources = append([]string(nil), st.Sources...)
	return st
}

// Run registers the collector and collects until ctx ends. It returns
// nil when ctx ends, or the error that makes going on unsafe.
func (c *Collector) Run(ctx context.Context) error {
	if err := c.s.Retry(ctx, func() error { return c.register(ctx) }); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("collector %s: register: %w", c.cfg.Name, err)
	}
	val, err := recipe.WatchValue(ctx, c.s, CollectorPath(c.cfg.Name))
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("collector %s: watch assignment: %w", c.cfg.Name, err)
	}
	defer val.Close()
	c.log.Info("collector started", "out", c.cfg.OutDir)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			c.shutdown()
			return nil
		case <-val.Changes():
		case <-timer.C:
		}
		more, err := c.round(ctx, val)
		switch {
		case errors.Is(err, ErrNameInUse):
			return fmt.Errorf("collector %s: %w", c.cfg.Name, err)
		case err != nil && ctx.Err() == nil:
			c.log.Warn("collection round failed", "err", err)
		}
		next := c.cfg.PollInterval
		if more && err == nil {
			next = 0
		}
		timer.Reset(next)
	}
}

// shutdown leaves the outputs matching the committed status when Run is
// stopped: it commits what the last round wrote, or, if that fails
// for sure, cuts it away. If a commit's outcome stays unknown the files
// are left for the next start, which rolls back to whatever status says.
// Otherwise it marks the status Leaving, so that the assigner hands the
// sources to others at its next round instead of after DeadAfter.
func (c *Collector) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if c.settleOutputs(ctx) {
		c.leave(ctx)
	}
}

// leave writes the committed status once more, marked Leaving. It
// changes no progress, so it needs no fence but the status's version.
func (c *Collector) leave(ctx context.Context) {
	st := c.status
	st.Version, st.Name, st.Leaving, st.Time = statusSchema, c.cfg.Name, true, time.Now().UTC()
	st.Load = Load{}
	if _, err := c.s.Set(ctx, StatusPath(c.cfg.Name), encode(st), c.statusVersion); err != nil {
		c.log.Warn("stopping: could not mark the status leaving; the sources move after the assigner's --dead-after", "err", err)
		return
	}
	c.log.Info("collector stopped; its sources are handed back", "sources", len(c.srcs))
}

// settleOutputs makes the outputs match the committed status and reports
// whether they do (false: a commit's outcome is unknown).
func (c *Collector) settleOutputs(ctx context.Context) bool {
	if !c.uncommitted {
		return true
	}
	if c.inflight != nil {
		if err := c.settle(ctx); err != nil {
			c.log.Warn("stopping with a commit of unknown outcome; the next start rolls back", "err", err)
			return false
		}
	}
	if c.uncommitted {
		if err := c.commit(ctx); err != nil || c.inflight != nil {
			c.log.Warn("stopping with a commit of unknown outcome; the next start rolls back", "err", err)
			return false
		}
	}
	if !c.uncommitted {
		return true
	}
	ok := true
	for uri, src := range c.srcs {
		if err := c.rollback(uri, src.committed); err != nil {
			c.log.Warn("stopping: rollback failed; the next start retries it", "source", uri, "err", err)
			ok = false
		}
	}
	return ok
}

// register creates the collector's node and status if missing, loads the
// committed status and rolls the outputs back to it.
func (c *Collector) register(ctx context.Context) error {
	if err := c.s.EnsurePath(ctx, CollectorPath(c.cfg.Name)); err != nil {
		return err
	}
	data, stat, err := c.s.Get(ctx, StatusPath(c.cfg.Name))
	if errors.Is(err, zk.ErrNoNode) {
		st := Status{Version: statusSchema, Name: c.cfg.Name, Time: time.Now().UTC(), Progress: map[string]Progress{}}
		if _, err := c.s.Create(ctx, StatusPath(c.cfg.Name), encode(st), zk.FlagPersistent, nil); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		data, stat, err = c.s.Get(ctx, StatusPath(c.cfg.Name))
	}
	if err != nil {
		return err
	}
	var st Status
	if err := decode(StatusPath(c.cfg.Name), data, &st); err != nil {
		return err
	}
	if st.Progress == nil {
		st.Progress = map[string]Progress{}
	}
	c.status, c.statusVersion = st, stat.Version
	if c.cfg.OutDir != "" {
		for uri, p := range st.Progress {
			if err := c.rollback(uri, p); err != nil {
				return err
			}
		}
	}
	c.lastCommit = time.Now()
	if st.Leaving {
		c.lastCommit = time.Time{} // back: say so at the first round
	}
	return nil
}

// round is one pass: settle an unknown commit, follow the assignment,
// read and write what the sources have, commit. more reports that a
// source had more than one round's worth.
func (c *Collector) round(ctx context.Context, val *recipe.Value) (more bool, err error) {
	if !c.s.State().Connected() {
		return false, nil // nothing can be committed; do not write either
	}
	if c.inflight != nil {
		if err := c.settle(ctx); err != nil {
			return false, err
		}
	}
	data, stat, exists := val.Get()
	if !exists {
		// Deleted by an operator: register again, with no assignment.
		return false, c.s.EnsurePath(ctx, CollectorPath(c.cfg.Name))
	}
	if stat.Version != c.assignVersion || c.refused != "" {
		var a Assignment
		if err := decode(CollectorPath(c.cfg.Name), data, &a); err != nil {
			return false, err
		}
		// Securing the node (shepherd ctl secure) changes no version: a
		// refused assignment is checked again every round.
		switch err := c.checkAssignment(ctx); {
		case errors.Is(err, recipe.ErrUntrusted):
			a = Assignment{} // read nothing an untrusted node names
		case err != nil:
			return false, err // the check itself failed: change nothing, try again next round
		}
		if err := c.reconcile(ctx, a, stat.Version); err != nil {
			return false, err
		}
	}
	if !c.uncommitted {
		more, err = c.collect(ctx)
		if err != nil {
			c.log.Warn("reading sources", "err", err)
		}
	}
	return more, c.commit(ctx)
}

// checkAssignment checks that only this collector's identity could have
// written its assignment node (recipe.Session.CheckTrusted): a collector
// reads the files and URLs it lists. A refusal is logged when it starts
// or its reason changes, and published in status (Status.Refused).
func (c *Collector) checkAssignment(ctx context.Context) error {
	err := c.s.CheckTrusted(ctx, LogsRoot, CollectorPath(c.cfg.Name))
	if err != nil && !errors.Is(err, recipe.ErrUntrusted) {
		return err
	}
	why := ""
	if err != nil {
		why = err.Error()
	}
	switch {
	case why != "" && why != c.refused:
		c.log.Error("refusing the assignment: collecting nothing", "path", CollectorPath(c.cfg.Name), "err", err)
	case why == "" && c.refused != "":
		c.log.Info("assignment trusted again", "path", CollectorPath(c.cfg.Name))
	}
	c.refused = why
	c.mu.Lock()
	c.stats.Refused = why
	c.mu.Unlock()
	return err
}

// settle finds out whether the commit whose reply was lost took effect.
func (c *Collector) settle(ctx context.Context) error {
	if c.inflightDone != nil {
		// A read sent before the commit's request has gone out would
		// see the old status, call the commit lost, and the retry would
		// then find its own commit's version: order, not time.
		select {
		case <-c.inflightDone:
			c.inflightDone = nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	data, stat, err := c.s.Get(ctx, StatusPath(c.cfg.Name))
	if err != nil {
		return err
	}
	sent := c.inflight
	c.inflight = nil
	if bytes.Equal(data, sent) {
		var st Status
		if err := decode("sent status", sent, &st); err != nil {
			return err
		}
		c.applyCommit(st, stat.Version)
		return nil
	}
	if stat.Version != c.statusVersion {
		return ErrNameInUse
	}
	return nil // not applied: pending stays, the next commit retries it
}

// reconcile makes the owned sources those of assignment a (node version
// v): sources taken away are rolled back and marked not owned, sources
// given are claimed from their latest commit.
func (c *Collector) reconcile(ctx context.Context, a Assignment, v int32) error {
	for uri, src := range c.srcs {
		if lease, ok := a.lease(uri); ok && lease == src.lease {
			continue
		}
		if err := c.rollback(uri, src.committed); err != nil {
			return err
		}
		delete(c.srcs, uri)
		c.log.Info("source taken away", "source", uri, "offset", src.committed.Pos.Offset)
	}
	var latest map[string]Progress
	for _, l := range a.Sources {
		if _, ok := c.srcs[l.URI]; ok {
			continue
		}
		rd, err := newReader(l.URI, c.cfg.HTTPClient)
		if err != nil {
			c.log.Error("cannot collect source", "source", l.URI, "err", err)
			continue
		}
		src := &source{uri: l.URI, lease: l.ID, rd: rd}
		if p, ok := c.status.Progress[l.URI]; ok && p.Owned && p.Lease == l.ID {
			// Ours all along (we restarted): our commit is the latest.
			src.committed, src.pending = p, p
			c.srcs[l.URI] = src
			continue
		}
		if latest == nil {
			var err error
			if latest, err = c.latest(ctx); err != nil {
				return err
			}
		}
		prev := latest[l.URI]
		src.committed = c.status.Progress[l.URI] // what to roll back to if taken away before claiming
		src.pending = Progress{
			Seq:   prev.Seq + 1,
			Lease: l.ID,
			Pos:   prev.Pos,
			Out:   segmentName(c.cfg.Name, prev.Seq+1),
			Owned: true,
		}
		src.claimed = true
		c.srcs[l.URI] = src
		c.log.Info("source assigned", "source", l.URI, "offset", prev.Pos.Offset, "seq", prev.Seq)
	}
	c.assignVersion = v
	c.setSources()
	return nil
}

// rollback cuts uri's output back to committed progress p (see outputs).
func (c *Collector) rollback(uri string, p Progress) error {
	if c.cfg.OutDir == "" {
		return nil
	}
	cut, err := c.out.rollback(uri, p)
	if cut > 0 {
		c.log.Info("cut uncommitted output", "source", uri, "bytes", cut, "segment", p.Out, "size", p.OutSize)
	}
	return err
}

// latest reads every collector's status and returns, per source, the
// progress with the highest sequence number: the source's last commit.
func (c *Collector) latest(ctx context.Context) (map[string]Progress, error) {
	names, _, err := c.s.Children(ctx, CollectorsPath)
	if err != nil {
		return nil, err
	}
	best := map[string]Progress{}
	for _, n := range names {
		data, _, err := c.s.Get(ctx, StatusPath(n))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var st Status
		if err := decode(StatusPath(n), data, &st); err != nil {
			c.log.Warn("ignoring a malformed status", "path", StatusPath(n), "err", err)
			continue
		}
		for uri, p := range st.Progress {
			if p.Seq > best[uri].Seq {
				best[uri] = p
			}
		}
	}
	return best, nil
}

// readers bounds how many sources a collector reads at once.
const readers = 8

// collect reads every owned, claimed source once and writes what it has.
// Sources are read in parallel, each read bounded by ReadTimeout, so
// that a slow HTTP source delays neither the others nor the heartbeat
// by more than that.
func (c *Collector) collect(ctx context.Context) (more bool, err error) {
	type result struct {
		src  *source
		p    Progress
		data []byte
		err  error
	}
	var work []*source
	for _, src := range c.srcs {
		if !src.claimed {
			work = append(work, src)
		}
	}
	results := make([]result, len(work))
	sem := make(chan struct{}, readers)
	var wg sync.WaitGroup
	for i, src := range work {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			p, data, err := c.collectOne(ctx, src)
			results[i] = result{src, p, data, err}
		}()
	}
	wg.Wait()
	var errs []error
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		r.src.pending = r.p
		if len(r.data) > 0 {
			r.src.lines = append(r.src.lines, r.data...)
			c.uncommitted = true
			if len(r.data) >= c.cfg.MaxRead/2 {
				more = true
			}
		}
	}
	return more, errors.Join(errs...)
}

// collectOne reads src past its pending position and appends what it
// read to its output, returning the new pending progress and the data.
// It touches nothing shared but src's own output files.
func (c *Collector) collectOne(ctx context.Context, src *source) (Progress, []byte, error) {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.ReadTimeout)
	defer cancel()
	p := src.pending
	data, next, lag, err := src.rd.Read(rctx, p.Pos, c.cfg.MaxRead)
	if err != nil {
		return p, nil, fmt.Errorf("source %s: %w", src.uri, err)
	}
	if len(data) == 0 && next == p.Pos {
		p.Lag = lag
		return p, nil, nil
	}
	p.Seq = src.committed.Seq + 1
	p.Pos, p.Lag = next, lag
	if len(data) > 0 {
		if c.cfg.OutDir != "" {
			if p.OutSize >= c.cfg.RotateSize || p.Out == "" {
				p.Out, p.OutSize = segmentName(c.cfg.Name, p.Seq), 0
			}
			if err := c.out.append(src.uri, p.Out, p.OutSize, data); err != nil {
				// Nothing is committed: the next round writes it again.
				return src.pending, nil, err
			}
			p.OutSize += int64(len(data))
		}
		p.Lines += int64(bytes.Count(data, []byte{'\n'}))
	}
	return p, data, nil
}

// commit writes status if anything changed or a heartbeat is due, as a
// multi that fails if our assignment changed since we last read it.
func (c *Collector) commit(ctx context.Context) error {
	dirty := c.uncommitted
	st := Status{Version: statusSchema, Name: c.cfg.Name, Progress: maps.Clone(c.status.Progress), Refused: c.refused}
	if st.Refused != c.status.Refused {
		dirty = true
	}
	for uri, p := range st.Progress {
		if _, ok := c.srcs[uri]; !ok && p.Owned {
			p.Owned = false
			st.Progress[uri] = p
			dirty = true
		}
	}
	for uri, src := range c.srcs {
		if src.pending != st.Progress[uri] {
			dirty = true
		}
		st.Progress[uri] = src.pending
	}
	now := time.Now()
	if !dirty && now.Sub(c.lastCommit) < c.cfg.StatusInterval {
		return nil
	}
	st.Time = now.UTC()
	st.Load = c.load(now)
	data := encode(st)
	// The request runs to its answer even if ctx ends first (it cannot
	// be called back once sent); settle waits for it then.
	var res []zk.MultiResponse
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = c.s.Multi(context.WithoutCancel(ctx),
			&zk.CheckVersionRequest{Path: CollectorPath(c.cfg.Name), Version: c.assignVersion},
			&zk.SetDataRequest{Path: StatusPath(c.cfg.Name), Data: data, Version: c.statusVersion},
		)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		c.inflight, c.inflightDone, c.uncommitted = data, done, true
		return fmt.Errorf("commit status: %w", ctx.Err())
	}
	switch {
	case err == nil:
		c.applyCommit(st, res[1].Stat.Version)
		return nil
	case errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode):
		if len(res) == 2 && res[0].Error == nil && errors.Is(res[1].Error, zk.ErrBadVersion) {
			return ErrNameInUse // our node is as we read it, our status is not
		}
		c.uncommitted = c.uncommitted || dirty
		return nil // the assignment changed: the next round follows it
	default:
		// The reply is lost: the commit may or may not have happened.
		c.inflight = data
		c.uncommitted = true
		return fmt.Errorf("commit status: %w", err)
	}
}

// load is the rate of committed bytes and lines since the last commit.
func (c *Collector) load(now time.Time) Load {
	var b, l int64
	for _, src := range c.srcs {
		b += int64(len(src.lines))
		l += int64(bytes.Count(src.lines, []byte{'\n'}))
	}
	secs := now.Sub(c.lastCommit).Seconds()
	if secs <= 0 {
		secs = 1e-3
	}
	return Load{BytesPerSec: float64(b) / secs, LinesPerSec: float64(l) / secs, Sources: len(c.srcs)}
}

// applyCommit records a successful commit of st.
func (c *Collector) applyCommit(st Status, version int32) {
	c.status, c.statusVersion = st, version
	c.lastCommit = time.Now()
	c.uncommitted = false
	var nb, nl int64
	for uri, src := range c.srcs {
		p, ok := st.Progress[uri]
		if !ok || p != src.pending {
			continue // claimed after st was built
		}
		src.committed = p
		src.claimed = false
		if len(src.lines) > 0 {
			nb += int64(len(src.lines))
			nl += int64(bytes.Count(src.lines, []byte{'\n'}))
			if c.cfg.Stdout != nil {
				if _, err := c.cfg.Stdout.Write(src.lines); err != nil {
					c.log.Warn("writing to stdout", "err", err)
				}
			}
			src.lines = nil
		}
	}
	c.mu.Lock()
	c.stats.Commits++
	c.stats.Bytes += nb
	c.stats.Lines += nl
	c.mu.Unlock()
}

// setSources publishes the owned sources to Stats.
func (c *Collector) setSources() {
	uris := make([]string, 0, len(c.srcs))
	for uri := range c.srcs {
		uris = append(uris, uri)
	}
	sort.Strings(uris)
	c.mu.Lock()
	c.stats.Sources = uris
	c.mu.Unlock()
}
