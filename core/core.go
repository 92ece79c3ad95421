package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/ctxsleep"
	"github.com/shepherd-dev/shepherd/replication/natssink"
)

// Defaults of Config.
const (
	DefaultScanInterval       = 10 * time.Second
	DefaultCheckpointInterval = time.Second
	DefaultMaxFailures        = 3
	DefaultRetryBase          = time.Second
	DefaultRetryMax           = 30 * time.Second
	DefaultBalanceMoves       = 1
)

// BalanceOff as Config.BalanceMoves turns the balancing of a cold group
// off: a core takes every unowned task it finds and hands nothing over.
const BalanceOff = -1

// Config configures a Core. It runs named tasks in hot standby (Tasks),
// or scans a cold-standby group (Group), or both.
type Config struct {
	// Host names this core's instance nodes, <host>-<seq>; default the
	// machine's host name.
	Host string
	// Tasks are the tasks this core is a hot-standby instance of.
	Tasks []string
	// Group is the cold-standby group this core scans; "" for none.
	Group string
	// ScanInterval is the period of the group scan.
	ScanInterval time.Duration
	// Capacity is this core's weight in its group: it holds about
	// Capacity/(sum of the live cores' capacities) of the group's tasks.
	// 0 means 1.
	Capacity int
	// BalanceMoves is how many tasks the core hands over at most per scan
	// interval to even out its group; 0 means DefaultBalanceMoves and
	// BalanceOff turns balancing off.
	BalanceMoves int
	// BalanceGrace is how long a core of the group must be gone before
	// the others count it out of the shares (so that a restart moves
	// nothing twice); 0 means the session timeout.
	BalanceGrace time.Duration
	// Root is the root of the replication znodes (default DefaultRoot).
	Root string
	// CheckpointInterval is how often a RUNNING instance mirrors its
	// checkpoint to lastCommit and its progress to its instance node.
	CheckpointInterval time.Duration
	// MaxFailures is how many instances in a row may fail a task with a
	// non-retryable error before the next one stops trying (FAILED at
	// once) until an operator restarts the task.
	MaxFailures int
	// RetryBase and RetryMax bound the backoff between retries of
	// retryable failures (a server unreachable).
	RetryBase, RetryMax time.Duration
	// Engine opens replicators. Required.
	Engine Engine
	// Logger receives the core's log; nil means slog.Default().
	Logger *slog.Logger
	// Registerer, if set, gets the core's Prometheus metrics.
	Registerer prometheus.Registerer
}

// Core is the replication worker of `shepherd core`: it takes part in
// the election of each of its hot-standby tasks and scans its cold
// group, and runs the tasks its instances come to own.
type Core struct {
	s       *recipe.Session
	cfg     Config
	layout  Layout
	log     *slog.Logger
	metrics *metrics
}

// New returns a Core working through session s. It checks cfg and fills
// in defaults; nothing happens until Run.
func New(s *recipe.Session, cfg Config) (*Core, error) {
	if cfg.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("%w: --host not given and the host name is unknown: %v", ErrBadConfig, err)
		}
		cfg.Host = h
	}
	var errs []error
	if err := checkName(cfg.Host); err != nil {
		errs = append(errs, fmt.Errorf("host: %w", err))
	}
	if len(cfg.Tasks) == 0 && cfg.Group == "" {
		errs = append(errs, errors.New("no work: give tasks to stand by for (--task) or a group to scan (--group)"))
	}
	for i, name := range cfg.Tasks {
		if err := checkName(name); err != nil {
			errs = append(errs, fmt.Errorf("task %d: %w", i+1, err))
		}
		if slices.Index(cfg.Tasks, name) != i {
			errs = append(errs, fmt.Errorf("task %q given twice", name))
		}
	}
	if cfg.Group != "" {
		if err := checkName(cfg.Group); err != nil {
			errs = append(errs, fmt.Errorf("group: %w", err))
		}
	}
	if cfg.Engine == nil {
		errs = append(errs, errors.New("no replication engine"))
	}
	if cfg.ScanInterval == 0 {
		cfg.ScanInterval = DefaultScanInterval
	}
	if cfg.CheckpointInterval == 0 {
		cfg.CheckpointInterval = DefaultCheckpointInterval
	}
	if cfg.MaxFailures == 0 {
		cfg.MaxFailures = DefaultMaxFailures
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.RetryMax == 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	if cfg.Capacity == 0 {
		cfg.Capacity = 1
	}
	if cfg.BalanceMoves == 0 {
		cfg.BalanceMoves = DefaultBalanceMoves
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"scan-interval", cfg.ScanInterval}, {"checkpoint-interval", cfg.CheckpointInterval}, {"retry-base", cfg.RetryBase}, {"retry-max", cfg.RetryMax}, {"balance-grace", cfg.BalanceGrace}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v: must be positive", d.name, d.v))
		}
	}
	if cfg.MaxFailures < 0 {
		errs = append(errs, fmt.Errorf("max-failures %d: must be positive", cfg.MaxFailures))
	}
	if cfg.Capacity < 0 || cfg.Capacity > maxCapacity {
		errs = append(errs, fmt.Errorf("capacity %d: want 1 to %d", cfg.Capacity, maxCapacity))
	}
	if cfg.BalanceMoves < BalanceOff {
		errs = append(errs, fmt.Errorf("balance-moves %d: want -1 (off), 0 (default) or more", cfg.BalanceMoves))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, errors.Join(errs...))
	}
	cfg.RetryMax = max(cfg.RetryMax, cfg.RetryBase)
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("core: register metrics: %w", err)
	}
	return &Core{s: s, cfg: cfg, layout: NewLayout(cfg.Root), log: log.With("host", cfg.Host), metrics: m}, nil
}

// Run runs the core until ctx ends, then stops every task — each RUNNING
// instance stops applying, writes lastCommit and hands over to the next —
// and returns nil. It returns an error only if it cannot start.
func (c *Core) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, name := range c.cfg.Tasks {
		t, err := c.newTaskRun(ctx, name, false)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer t.close()
			c.hot(ctx, t)
		}()
	}
	if c.cfg.Group != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.scan(ctx)
		}()
	}
	c.log.Info("core started", "tasks", c.cfg.Tasks, "group", c.cfg.Group)
	wg.Wait()
	c.log.Info("core stopped")
	return nil
}

// hot is the hot-standby loop of one task: register an instance node,
// wait to be first in line (STANDBY), run the task while first (RUNNING),
// and when the term ends — session lost, fenced — register again at the
// back of the line.
func (c *Core) hot(ctx context.Context, t *taskRun) {
	failures := 0
	defer c.metrics.setState(t.name, "")
	for ctx.Err() == nil {
		e := c.election(c.layout.Instances(t.name))
		c.metrics.setState(t.name, StateStandby)
		if err := e.Campaign(ctx); err != nil {
			if ctx.Err() != nil || errors.Is(err, recipe.ErrClosed) {
				return
			}
			failures++
			t.log.Warn("cannot register the instance; retrying", "err", err)
			c.pause(ctx, failures)
			continue
		}
		err := e.Serve(ctx, t.lead)
		if rerr := e.Resign(); rerr != nil {
			t.log.Warn("instance node not deleted; it goes with the session", "err", rerr)
		}
		switch {
		case ctx.Err() != nil:
			t.log.Info("handed the task over")
			return
		case err != nil:
			// Fenced: a newer instance took over while this one was cut
			// off. Stand by again, after a pause in case something (say a
			// migrated coordination tree) makes every term fenced.
			c.metrics.fenced.WithLabelValues(t.name).Inc()
			failures++
			t.log.Warn("instance term ended; standing by again", "err", err)
			c.pause(ctx, failures)
		default:
			failures = 0
			t.log.Warn("instance term lost; standing by again")
		}
	}
}

// election returns a fresh candidacy of this core in the election at dir.
// Its node data is the STANDBY state, until the instance owns the task.
func (c *Core) election(dir string) *recipe.Election {
	now := time.Now().UTC()
	st := InstanceState{Version: docVersion, State: StateStandby, Host: c.cfg.Host, PID: os.Getpid(), Since: now, Updated: now}
	return recipe.NewElection(c.s, dir, string(st.Marshal()), recipe.WithElectionNodePrefix(c.cfg.Host+"-"))
}

// maxCapacity bounds --capacity, so that shares cannot overflow.
const maxCapacity = 10_000

// grace is how long a gone member still counts in the group's shares.
func (c *Core) grace() time.Duration {
	switch {
	case c.cfg.BalanceGrace > 0:
		return c.cfg.BalanceGrace
	case c.s.Timeout() > 0:
		return c.s.Timeout()
	}
	return recipe.DefaultSessionTimeout
}

// checkDuplicateWindow refuses a NATS target whose duplicate window a
// takeover of this core's may outlast (natssink.CheckWindow): the
// session timeout, and a cold group's scan interval, come first.
func (c *Core) checkDuplicateWindow(sp *Spec) error {
	if !sp.Target.IsNATS() {
		return nil
	}
	timeout := c.s.Timeout()
	if timeout <= 0 {
		timeout = recipe.DefaultSessionTimeout
	}
	var scan time.Duration
	if sp.Standby.Mode == ModeCold {
		scan = c.cfg.ScanInterval
	}
	if err := natssink.CheckWindow(sp.Target.DuplicateWindow.D(), timeout, scan); err != nil {
		return classify(err, ErrNonRetryable)
	}
	return nil
}

// backoff is the jittered delay after n failures in a row.
func (c *Core) backoff(n int) time.Duration {
	d := c.cfg.RetryBase
	for i := 1; i < n && d < c.cfg.RetryMax; i++ {
		d *= 2
	}
	d = min(d, c.cfg.RetryMax)
	return d/2 + rand.N(d/2+1)
}

// pause sleeps the backoff of n failures, or until ctx ends.
func (c *Core) pause(ctx context.Context, n int) {
	_ = ctxsleep.Sleep(ctx, c.backoff(n)) // an ended ctx is the caller's to see
}

// checkTrusted refuses a node of the replication tree that a session
// without this core's identity could have written (recipe.ErrUntrusted):
// a core connects to the databases a spec names.
func (c *Core) checkTrusted(ctx context.Context, p string) error {
	err := c.s.CheckTrusted(ctx, c.layout.Root, p)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, recipe.ErrUntrusted):
		return fmt.Errorf("core: task spec %s: %w", p, err)
	}
	return fmt.Errorf("core: task spec %s: %w: %w", p, errTrustUnknown, err)
}
