package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Defaults of ScannerOptions.
const (
	DefaultScanInterval = time.Second
	DefaultCheckTimeout = 2 * time.Second
	DefaultFailAfter    = 2
	DefaultGrace        = 5 * time.Second
	maxChecksInFlight   = 32
)

// ScannerOptions configures a Scanner.
type ScannerOptions struct {
	// Name is the candidate's id in the election; default host-pid.
	Name string
	// Interval between rounds; default DefaultScanInterval.
	Interval time.Duration
	// CheckTimeout bounds one active check; default DefaultCheckTimeout.
	CheckTimeout time.Duration
	// FailAfter is how many failed checks in a row make an address
	// unhealthy; default DefaultFailAfter. One success makes it healthy.
	FailAfter int
	// Grace: see judge; default DefaultGrace.
	Grace  time.Duration
	Logger *slog.Logger
	// Registerer, if set, gets the scanner's metrics.
	Registerer prometheus.Registerer
	// Now, when set, is the clock heartbeats are judged by; by default
	// it is the coordination server's (the mtime of the scanner's own
	// write each round), the clock heartbeats are stamped with.
	Now func() time.Time
}

// Scanner contends to be the registry's one scanner (election at
// ScannerPath) and, while it leads, marks addresses unhealthy or healthy
// again each round: heartbeat-registered ones by the TTL rule, those
// with a check by its result. It never deletes a registration.
type Scanner struct {
	s       *recipe.Session
	opts    ScannerOptions
	log     *slog.Logger
	metrics *scannerMetrics

	fails map[string]int // name + "|" + addr -> failed checks in a row; owned by the lead goroutine
}

// NewScanner returns a Scanner over s.
func NewScanner(s *recipe.Session, opts ScannerOptions) (*Scanner, error) {
	if opts.Name == "" {
		host, _ := os.Hostname()
		opts.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultScanInterval
	}
	if opts.CheckTimeout <= 0 {
		opts.CheckTimeout = DefaultCheckTimeout
	}
	if opts.FailAfter <= 0 {
		opts.FailAfter = DefaultFailAfter
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m, err := newScannerMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("dns: register scanner metrics: %w", err)
	}
	return &Scanner{s: s, opts: opts, log: opts.Logger.With("scanner", opts.Name), metrics: m}, nil
}

// Run campaigns and scans while leading, until ctx ends (then nil).
func (sc *Scanner) Run(ctx context.Context) error {
	err := recipe.RunSelector(ctx, sc.s, ScannerPath, sc.opts.Name, sc.lead)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// lead scans until ctx ends.
func (sc *Scanner) lead(ctx context.Context, e *recipe.Election) error {
	sc.log.Info("scanner elected", "token", e.Token())
	sc.metrics.leading.Set(1)
	defer sc.metrics.leading.Set(0)
	sc.fails = map[string]int{}
	var since, last time.Time // local: start of the rounds without a gap, and the last round
	maxGap := 2*sc.opts.Interval + sc.opts.CheckTimeout
	for {
		began := time.Now()
		if last.IsZero() || began.Sub(last) > maxGap {
			since = began
		}
		if err := sc.round(ctx, e, began.Sub(since) >= sc.opts.Grace); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			sc.log.Warn("scanner round failed", "err", err)
		} else {
			last = began
			sc.metrics.rounds.Inc()
		}
		t := time.NewTimer(sc.opts.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// scanState is the round's view of one address.
type scanState struct {
	n    Name
	a    AddressStatus
	ok   bool // provider readable and trusted
	hb   time.Duration
	fail error // the check's result, when it has one
}

// round is one round of the leader: it stamps the round (fenced by the
// election node; the mtime is the round's time on the server's clock),
// reads every name, runs the checks, judges and writes the marks that
// changed in one fenced multi per name.
func (sc *Scanner) round(ctx context.Context, e *recipe.Election, settled bool) error {
	fence := &zk.CheckVersionRequest{Path: e.Node(), Version: 0}
	res, err := sc.s.Multi(ctx, fence, &zk.SetDataRequest{Path: ScannerPath, Data: encode(map[string]any{"version": schemaVersion, "leader": sc.opts.Name}), Version: -1})
	if err != nil {
		return fmt.Errorf("stamp %s: %w", ScannerPath, err)
	}
	now := time.UnixMilli(res[1].Stat.Mtime)
	if sc.opts.Now != nil {
		now = sc.opts.Now()
	}
	names, err := listNames(ctx, sc.s, nil)
	if err != nil {
		return fmt.Errorf("list %s: %w", Root, err)
	}
	var states []*scanState
	reads := map[Name]domainRead{}
	for _, n := range names {
		d, _, err := readDomain(ctx, sc.s, n, nil, nil, true, now)
		if err != nil {
			return err
		}
		reads[n] = d
		for _, a := range d.status(n).Addresses {
			st := &scanState{n: n, a: a, ok: a.Refused == "", hb: a.HeartbeatAge}
			states = append(states, st)
		}
	}
	sc.runChecks(ctx, states)
	for _, n := range names {
		if err := sc.apply(ctx, fence, n, reads[n], states, settled); err != nil {
			sc.log.Warn("cannot write the scanner's verdicts", "name", n.String(), "err", err)
		}
	}
	return nil
}

// runChecks runs the active checks of the trusted addresses that have
// one, concurrently, and counts failures in a row.
func (sc *Scanner) runChecks(ctx context.Context, states []*scanState) {
	sem := make(chan struct{}, maxChecksInFlight)
	var wg sync.WaitGroup
	for _, st := range states {
		if !st.ok || st.a.Check == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st.fail = probe(ctx, st.a.Check, st.a.Addr, sc.opts.CheckTimeout)
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, st := range states {
		if !st.ok || st.a.Check == nil {
			continue
		}
		key := st.n.String() + "|" + st.a.Addr
		seen[key] = true
		result := "ok"
		if st.fail != nil {
			result = "fail"
			sc.fails[key]++
		} else {
			sc.fails[key] = 0
		}
		sc.metrics.checks.WithLabelValues(st.a.Check.Kind, result).Inc()
	}
	for k := range sc.fails {
		if !seen[k] {
			delete(sc.fails, k)
		}
	}
}

// apply writes the verdicts of name n that change its marks, and deletes
// the marks and heartbeats of addresses no longer registered.
func (sc *Scanner) apply(ctx context.Context, fence *zk.CheckVersionRequest, n Name, d domainRead, states []*scanState, settled bool) error {
	ops := []any{fence}
	registered := map[string]bool{}
	for _, st := range states {
		if st.n != n {
			continue
		}
		registered[st.a.Addr] = true
		if !st.ok {
			continue // untrusted or malformed: neither served nor judged
		}
		if st.a.Mode == "heartbeat" {
			result := "ok"
			if st.hb < 0 || st.hb > st.a.TTL {
				result = "fail"
			}
			sc.metrics.checks.WithLabelValues("heartbeat", result).Inc()
		}
		v := judge(st.a, st.hb, settled, sc.fails[n.String()+"|"+st.a.Addr], sc.opts.FailAfter)
		addr, _ := ParseAddr(st.a.Addr)
		switch {
		case !v.healthy && st.a.Healthy:
			sc.log.Warn("address unhealthy: no longer served", "name", n.String(), "addr", st.a.Addr, "why", v.reason)
			sc.metrics.marks.WithLabelValues("unhealthy").Inc()
			ops = append(ops, &zk.CreateRequest{Path: n.unhealthy(addr), Flags: zk.FlagPersistent, Acl: sc.s.NodeACL(),
				Data: encode(Mark{Version: schemaVersion, By: "scanner " + sc.opts.Name, Reason: v.reason, Time: time.Now().UTC()})})
		case v.healthy && !st.a.Healthy:
			sc.log.Info("address healthy again: served", "name", n.String(), "addr", st.a.Addr)
			sc.metrics.marks.WithLabelValues("healthy").Inc()
			ops = append(ops, &zk.DeleteRequest{Path: n.unhealthy(addr), Version: -1})
		}
	}
	for a := range d.unhealthy {
		if !registered[a] {
			ops = append(ops, &zk.DeleteRequest{Path: path.Join(n.dir(dirUnhealthy), a), Version: -1})
		}
	}
	hbs, _, err := sc.s.Retrying().Children(ctx, n.dir(dirHeartbeats))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	for _, a := range hbs {
		if !registered[a] {
			ops = append(ops, &zk.DeleteRequest{Path: path.Join(n.dir(dirHeartbeats), a), Version: -1})
		}
	}
	if len(ops) == 1 {
		return nil
	}
	if needsUnhealthyDir(ops) {
		if err := ensureDirs(ctx, sc.s, n, dirUnhealthy); err != nil {
			return err
		}
	}
	_, err = sc.s.Multi(ctx, ops...)
	return err
}

func needsUnhealthyDir(ops []any) bool {
	for _, op := range ops {
		if _, ok := op.(*zk.CreateRequest); ok {
			return true
		}
	}
	return false
}
