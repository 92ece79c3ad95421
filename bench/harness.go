package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// Harness defaults.
const (
	DefaultRepeats = 3
	// DefaultHarnessWarmup is the unmeasured load every fresh server gets
	// before its measured window: long enough for a JVM to have compiled
	// the request path (C2 compiles after ~10k calls of a method, so
	// seconds at these rates), with margin for a loaded machine.
	DefaultHarnessWarmup = 10 * time.Second
	// HarnessWorkloads are the workloads make bench compares.
	HarnessWorkloads = "get,set,create,multi,watch-fanout,session-churn"
)

// singleGenerator names the workloads that share one znode (or one lock)
// between all their sessions, so that they cannot be split across
// generator processes; they run from one.
var singleGenerator = []string{"watch-fanout", "lock"}

// notHarnessed are workloads the harness cannot run: tree200k restarts the
// server from inside the workload.
var notHarnessed = []string{"tree200k"}

// pinnable is a Target the harness can confine to a CPU set.
type pinnable interface {
	Target
	pin(cpus []int)
}

// Harness compares servers under the conditions docs/coord.md states:
// server and load generators on disjoint CPUs, both servers started
// alike, a warm-up that is not measured, the server's counters read
// around the measured window only, every (workload, server) pair measured
// Repeats times on fresh servers and the median reported, and every
// window checked for a saturated generator or a server denied its CPUs.
type Harness struct {
	// Targets are the servers; Targets[0] is the baseline. They must be
	// started by this package (ApacheZooKeeper, ShepherdCoord).
	Targets []Target
	// Workloads to run, in order.
	Workloads []string
	// Options of every run: Clients is the total over all generators.
	// Warmup is per run; Addr, PID and Target are ignored.
	Options Options
	// Repeats is how many times each pair is measured. Default 3.
	Repeats int
	// Layout is the CPU split; its zero value means DefaultLayout.
	Layout Layout
	// Generators is the number of generator processes (default: one per
	// generator CPU); workloads that share one znode use one.
	Generators int
	// GeneratorCommand starts one generator process that calls
	// ServeGenerator on its stdin and stdout, e.g. {"shepherd", "bench",
	// "--generator"}.
	GeneratorCommand []string
	// Dir holds generator logs.
	Dir string
}

// Measurement is one measured window of one workload on one server.
type Measurement struct {
	Ops           int
	OpsPerSec     float64
	P50, P99      time.Duration
	CPUPerOp      time.Duration
	SwitchesPerOp float64
	IOCallsPerOp  float64
	// KernelPerOp is all kernel threads' CPU time over the window divided
	// by the operations: an upper bound of the kernel work (mostly disk)
	// the server caused outside its own process.
	KernelPerOp time.Duration
	Window      Window
	Extra       map[string]string
}

// Run measures every workload on every target Repeats times, writes the
// report (see WriteHarnessReport) to out and returns the runs' errors.
func (h Harness) Run(ctx context.Context, out io.Writer) error {
	h, err := h.withDefaults()
	if err != nil {
		return err
	}
	log := h.Options.Logger
	var (
		rows []HarnessRow
		errs []error
	)
	for _, w := range h.Workloads {
		group := make([]HarnessRow, len(h.Targets))
		for i, t := range h.Targets {
			group[i] = HarnessRow{Workload: w, Target: t.Name()}
		}
		// Targets take turns within each repeat, so that a change in
		// the machine's background load hits both alike.
		for rep := range h.Repeats {
			for i, t := range h.Targets {
				if ctx.Err() != nil {
					break
				}
				log.Info("bench: harness run", "workload", w, "target", t.Name(), "repeat", rep+1, "of", h.Repeats)
				m, err := h.runOnce(ctx, t, w)
				if err != nil {
					errs = append(errs, fmt.Errorf("bench: %s on %s, repeat %d: %w", w, t.Name(), rep+1, err))
					log.Error("bench: harness run", "workload", w, "target", t.Name(), "err", err)
					group[i].Errors++
					continue
				}
				log.Info("bench: harness run", "workload", w, "target", t.Name(), "ops_per_sec", int(m.OpsPerSec),
					"cpu_per_op", m.CPUPerOp, "switches_per_op", fmt.Sprintf("%.2f", m.SwitchesPerOp),
					"io_calls_per_op", fmt.Sprintf("%.2f", m.IOCallsPerOp),
					"server_cpu", fmt.Sprintf("%.0f%%", 100*m.Window.ServerShare()),
					"generator_cpu", fmt.Sprintf("%.0f%%", 100*m.Window.GeneratorShare()),
					"stolen", fmt.Sprintf("%.0f%%", 100*m.Window.StolenShare()),
					"not_clean_because", strings.Join(m.Window.Problems(), "; "))
				group[i].Runs = append(group[i].Runs, m)
			}
		}
		rows = append(rows, group...)
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, fmt.Errorf("bench: harness interrupted: %w", err))
	}
	if len(rows) > 0 {
		if err := WriteHarnessReport(out, h.describe(), rows); err != nil {
			errs = append(errs, fmt.Errorf("bench: write report: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (h Harness) withDefaults() (Harness, error) {
	if len(h.Targets) == 0 {
		return h, fmt.Errorf("%w: no targets", ErrBadOption)
	}
	for _, t := range h.Targets {
		if _, ok := t.(pinnable); !ok {
			return h, fmt.Errorf("%w: target %s is not started by bench, so it cannot be pinned to CPUs", ErrBadOption, t.Name())
		}
	}
	for _, w := range h.Workloads {
		if _, err := LookupWorkload(w); err != nil {
			return h, err
		}
		if slices.Contains(notHarnessed, w) {
			return h, fmt.Errorf("%w: workload %s restarts the server and cannot run in the harness; use --zk", ErrBadOption, w)
		}
	}
	if len(h.GeneratorCommand) == 0 || h.Dir == "" {
		return h, fmt.Errorf("%w: the harness needs a generator command (%q) and a directory for their logs (%q)", ErrBadOption, h.GeneratorCommand, h.Dir)
	}
	if h.Repeats == 0 {
		h.Repeats = DefaultRepeats
	}
	if h.Options.Warmup == 0 {
		h.Options.Warmup = DefaultHarnessWarmup
	}
	o, err := h.Options.withDefaults()
	if err != nil {
		return h, err
	}
	h.Options = o
	if len(h.Layout.Server) == 0 && len(h.Layout.Generator) == 0 {
		online, err := onlineCPUs()
		if err != nil {
			return h, err
		}
		if h.Layout, err = DefaultLayout(online); err != nil {
			return h, err
		}
	}
	if err := h.Layout.validate(); err != nil {
		return h, err
	}
	if h.Generators == 0 {
		h.Generators = len(h.Layout.Generator)
	}
	if h.Repeats < 0 || h.Generators < 0 || h.Generators > h.Options.Clients {
		return h, fmt.Errorf("%w: Repeats %d and Generators %d must be positive, Generators at most Clients (%d)",
			ErrBadOption, h.Repeats, h.Generators, h.Options.Clients)
	}
	return h, nil
}

// onlineCPUs is the CPU set this process may use: the harness's layout
// must come from it.
func onlineCPUs() ([]int, error) {
	return cpusAllowed(os.Getpid())
}

// cpusAllowed reads pid's CPU affinity from /proc/<pid>/status.
func cpusAllowed(pid int) ([]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("bench: read affinity of pid %d: %w", pid, err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return ParseCPUList(rest)
		}
	}
	return nil, fmt.Errorf("%w: /proc/%d/status has no Cpus_allowed_list", ErrProcFormat, pid)
}

// describe is the method paragraph printed above the tables.
func (h Harness) describe() string {
	return fmt.Sprintf("Method: each server runs confined to CPU %s and %d load-generator process(es) (%s, %d sessions x %d in flight in all) to CPU %s, "+
		"affinity set with taskset by the harness and checked in /proc/<pid>/status; both servers are started the same way, in a session of their own (setsid). "+
		"Every run starts a fresh server, warms it with %v of the same workload (not measured), then measures %v; server CPU is utime+stime from /proc/<pid>/stat, "+
		"context switches the sum over its threads of /proc/<pid>/task/*/status and read/write calls syscr+syscw of /proc/<pid>/io, all read at the edges of the measured window only. "+
		"Kernel threads is the CPU time of every kernel thread (kworker, jbd2, ksoftirqd) in the window per op: an upper bound of the disk and network work the server caused outside its process, "+
		"which on a shared machine includes other processes' too. "+
		"Each cell is the median of %d runs; the servers take turns within each repeat. "+
		"A run is clean when the server set the pace (the generators used under %.0f%% of their CPUs, or the server %.0f%% or more of its own) and other processes (or the hypervisor) took under %.0f%% of the server's.",
		FormatCPUList(h.Layout.Server), h.Generators, h.clientDescription(), h.Options.Clients, h.Options.InFlight, FormatCPUList(h.Layout.Generator),
		h.Options.Warmup, h.Options.Duration, h.Repeats, 100*generatorSaturatedShare, 100*serverSaturatedShare, 100*stolenShare)
}

// clientDescription names the client the generators use.
func (h Harness) clientDescription() string {
	if h.Options.Client == ClientGoZK {
		return "go-zookeeper"
	}
	return "bench's wire client for " + strings.Join(WireWorkloads, ", ") + ": one write system call per request, as real clients make; go-zookeeper for the others"
}

// runOnce starts t pinned, runs workload w from the generators and returns
// the measurement of its window.
func (h Harness) runOnce(ctx context.Context, t Target, w string) (m Measurement, err error) {
	t.(pinnable).pin(h.Layout.Server)
	if err := t.Start(ctx); err != nil {
		return m, fmt.Errorf("start: %w", err)
	}
	defer func() {
		if serr := t.Stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("stop: %w", serr))
		}
	}()
	pid := t.PID()
	if got, err := cpusAllowed(pid); err != nil {
		return m, err
	} else if !slices.Equal(got, h.Layout.Server) {
		return m, fmt.Errorf("server pid %d runs on CPUs %v, want %v", pid, got, h.Layout.Server)
	}
	gens, err := h.startGenerators(t.Addr(), w)
	defer func() { err = errors.Join(err, stopGenerators(gens)) }()
	if err != nil {
		return m, err
	}
	setup := startTimeout + h.Options.Warmup + 2*setupTimeout
	for _, g := range gens {
		if err := g.expect(ctx, lineReady, setup); err != nil {
			return m, err
		}
	}
	before, err := snapshot(pid, gens)
	if err != nil {
		return m, err
	}
	for _, g := range gens {
		if _, err := fmt.Fprintln(g.stdin, lineGo); err != nil {
			return m, fmt.Errorf("generator %d: send %q: %w", g.id, lineGo, err)
		}
	}
	measured := 2*h.Options.Duration + notifyTimeout
	for _, g := range gens {
		if err := g.expect(ctx, lineDone, measured); err != nil {
			return m, err
		}
	}
	after, err := snapshot(pid, gens)
	if err != nil {
		return m, err
	}
	reports := make([]GeneratorReport, len(gens))
	for i, g := range gens {
		if reports[i], err = g.report(ctx, time.Minute); err != nil {
			return m, err
		}
	}
	win, err := Account(before, after, h.Layout)
	if err != nil {
		return m, err
	}
	ops, dist := mergeReports(reports)
	m = Measurement{
		Ops: ops, OpsPerSec: float64(ops) / win.Elapsed.Seconds(),
		P50: dist.percentile(0.50), P99: dist.percentile(0.99), Window: win, Extra: map[string]string{},
	}
	m.CPUPerOp, m.SwitchesPerOp, m.IOCallsPerOp = win.PerOp(ops)
	if ops > 0 {
		m.KernelPerOp = win.KernelThreadsCPU / time.Duration(ops)
	}
	if len(reports) == 1 {
		m.Extra = reports[0].Extra
	}
	return m, nil
}

// snapshot reads the server's and the generators' counters and the CPUs'.
func snapshot(pid int, gens []*generatorProc) (Snapshot, error) {
	s := Snapshot{At: time.Now()}
	var err error
	if s.Server, err = SampleProcess(pid); err != nil {
		return s, err
	}
	for _, g := range gens {
		cpu, err := ProcessCPU(g.cmd.Process.Pid)
		if err != nil {
			return s, fmt.Errorf("generator %d: %w", g.id, err)
		}
		s.Generators = append(s.Generators, cpu)
	}
	if s.KernelThreads, err = SampleKernelThreads(); err != nil {
		return s, err
	}
	s.CPUs, err = SampleCPUs()
	return s, err
}

// specs splits the run's sessions over the generator processes.
func (h Harness) specs(addr, w string) []GeneratorSpec {
	n := h.Generators
	if slices.Contains(singleGenerator, w) {
		n = 1
	}
	o := h.Options
	specs := make([]GeneratorSpec, n)
	for i := range specs {
		clients := o.Clients / n
		if i < o.Clients%n {
			clients++
		}
		ops := 0
		if o.Ops > 0 {
			ops = max(1, o.Ops/n)
		}
		specs[i] = GeneratorSpec{
			Workload: w, Addr: addr, Clients: clients, InFlight: o.InFlight, Duration: o.Duration,
			Warmup: o.Warmup, Ops: ops, ValueBytes: o.ValueBytes, Watchers: o.Watchers, Client: o.Client,
		}
	}
	return specs
}
