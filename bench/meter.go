package bench

import (
	"context"
	"fmt"
	"time"
)

// meter measures one phase: its wall time and, when the server's pid is
// known, the server's CPU time over the phase and its RSS at the end.
type meter struct {
	pid     int
	start   time.Time
	cpu0    time.Duration
	elapsed time.Duration
	cpu     time.Duration
	rss     int64
}

func startMeter(pid int) (*meter, error) {
	m := &meter{pid: pid}
	if pid != 0 {
		cpu, err := ProcessCPU(pid)
		if err != nil {
			return nil, err
		}
		m.cpu0 = cpu
	}
	m.start = time.Now()
	return m, nil
}

// stop ends the phase. The RSS is read after the CPU time so that the
// measurement's own cost is not charged to the phase.
func (m *meter) stop() error {
	m.elapsed = time.Since(m.start)
	if m.pid == 0 {
		return nil
	}
	cpu, err := ProcessCPU(m.pid)
	if err != nil {
		return err
	}
	m.cpu = cpu - m.cpu0
	if m.rss, err = ProcessRSS(m.pid); err != nil {
		return err
	}
	return nil
}

// result builds a Result for ops operations whose latencies are in dist.
func (m *meter) result(workload string, ops int, dist distribution) Result {
	r := Result{
		Workload: workload,
		Ops:      ops,
		P50:      dist.percentile(0.50),
		P99:      dist.percentile(0.99),
		RSSBytes: m.rss,
		Extra:    map[string]string{},
		dist:     dist,
	}
	if m.elapsed > 0 {
		r.OpsPerSec = float64(ops) / m.elapsed.Seconds()
	}
	if ops > 0 {
		r.CPUPerOp = m.cpu / time.Duration(ops)
	}
	return r
}

// formatRatio renders n/d with two decimals, for Extra values.
func formatRatio(n, d float64) string {
	if d == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", n/d)
}

// phaseHooks frame the measured phase of a workload, for a harness that
// measures from outside: before is called once setup is done and returns
// when the phase may start; after is called as soon as it has ended,
// before the workload closes its sessions.
type phaseHooks struct {
	before func(context.Context) error
	after  func()
}

// startMeasured starts the meter of a measured phase.
func (e *env) startMeasured(ctx context.Context) (*meter, error) {
	if h := e.o.hooks; h != nil {
		if err := h.before(ctx); err != nil {
			return nil, err
		}
	}
	return startMeter(e.o.PID)
}

// stopMeasured stops the meter of a measured phase.
func (e *env) stopMeasured(m *meter) error {
	err := m.stop()
	if h := e.o.hooks; h != nil {
		h.after()
	}
	return err
}
