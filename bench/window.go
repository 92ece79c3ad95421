package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Thresholds of a window's verdict. A generator using 90% of its CPUs is
// close enough to full that the server may be waiting on it, unless the
// server used 90% of its own CPUs too: then the server was at its
// capacity whatever the generator could have offered. Other processes
// (or the hypervisor) taking a tenth of the server's CPUs make CPU per op
// and throughput no longer the server's own.
const (
	generatorSaturatedShare = 0.90
	serverSaturatedShare    = 0.90
	stolenShare             = 0.10
)

// Layout is which CPUs the server and the load generators may run on.
// The two sets are disjoint.
type Layout struct {
	Server    []int
	Generator []int
}

// ParseCPUList parses a CPU list as taskset and Cpus_allowed_list write
// it: "0", "1-3", "0,2-3".
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	for part := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%w: CPU list %q: bad element %q (want e.g. 0,2-3)", ErrBadOption, s, part)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

// FormatCPUList renders cpus as a comma-separated list taskset accepts.
func FormatCPUList(cpus []int) string {
	parts := make([]string, len(cpus))
	for i, c := range cpus {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}

// DefaultLayout gives the server the first half of the online CPUs
// (at least one) and the generators the rest.
func DefaultLayout(online []int) (Layout, error) {
	if len(online) < 2 {
		return Layout{}, fmt.Errorf("%w: %d CPUs online; server and load generator need one each at least", ErrBadOption, len(online))
	}
	n := max(1, len(online)/2)
	return Layout{Server: online[:n:n], Generator: online[n:]}, nil
}

func (l Layout) validate() error {
	if len(l.Server) == 0 || len(l.Generator) == 0 {
		return fmt.Errorf("%w: CPU layout needs CPUs for both the server (%v) and the generators (%v)", ErrBadOption, l.Server, l.Generator)
	}
	for _, c := range l.Server {
		if slices.Contains(l.Generator, c) {
			return fmt.Errorf("%w: CPU %d is in both the server's (%v) and the generators' (%v) set", ErrBadOption, c, l.Server, l.Generator)
		}
	}
	return nil
}

// Snapshot is every counter the harness reads at one edge of the
// measured window.
type Snapshot struct {
	At         time.Time
	Server     ProcSample
	Generators []time.Duration // CPU time of each generator process
	CPUs       map[int]CPUTimes
	// KernelThreads is the CPU time of all kernel threads.
	KernelThreads time.Duration
}

// Window is what the server, the generators and everyone else did on
// the layout's CPUs between two snapshots.
type Window struct {
	Layout  Layout
	Elapsed time.Duration
	// ServerCPU and ServerSwitches are the server's own.
	ServerCPU      time.Duration
	ServerSwitches int64
	ServerIOCalls  int64
	// GeneratorCPU is the generator processes' CPU time, summed.
	GeneratorCPU time.Duration
	// KernelThreadsCPU is what all kernel threads used, on any CPU: it
	// holds the disk work the server's fsyncs cause (which the server's
	// own CPU time does not), and whatever other processes caused.
	KernelThreadsCPU time.Duration
	// ServerCPUsOthers is time the server's CPUs ran something other
	// than the server (other processes, interrupts) plus hypervisor
	// steal on them: capacity the server was denied.
	ServerCPUsOthers time.Duration
}

// Account computes the window between two snapshots of the same
// processes. It fails if they do not match or a counter went backwards,
// which would mean a process was replaced in between.
func Account(before, after Snapshot, l Layout) (Window, error) {
	w := Window{Layout: l, Elapsed: after.At.Sub(before.At)}
	if w.Elapsed <= 0 {
		return Window{}, fmt.Errorf("bench: window of %v: snapshots out of order", w.Elapsed)
	}
	if len(before.Generators) != len(after.Generators) {
		return Window{}, fmt.Errorf("bench: %d generators before the window, %d after", len(before.Generators), len(after.Generators))
	}
	if w.ServerCPU = after.Server.CPU - before.Server.CPU; w.ServerCPU < 0 {
		return Window{}, fmt.Errorf("bench: server CPU time went back from %v to %v: was it restarted?", before.Server.CPU, after.Server.CPU)
	}
	w.ServerSwitches = after.Server.switchesSince(before.Server)
	if w.ServerIOCalls = after.Server.IOCalls - before.Server.IOCalls; w.ServerIOCalls < 0 {
		return Window{}, fmt.Errorf("bench: server I/O call count went back from %d to %d: was it restarted?", before.Server.IOCalls, after.Server.IOCalls)
	}
	for i := range after.Generators {
		d := after.Generators[i] - before.Generators[i]
		if d < 0 {
			return Window{}, fmt.Errorf("bench: generator %d CPU time went back from %v to %v", i, before.Generators[i], after.Generators[i])
		}
		w.GeneratorCPU += d
	}
	w.KernelThreadsCPU = max(0, after.KernelThreads-before.KernelThreads)
	var busy, steal time.Duration
	for _, c := range l.Server {
		b, okB := before.CPUs[c]
		a, okA := after.CPUs[c]
		if !okB || !okA {
			return Window{}, fmt.Errorf("bench: CPU %d missing from /proc/stat", c)
		}
		busy += a.Busy - b.Busy
		steal += a.Steal - b.Steal
	}
	// Tick granularity can make the server's own time exceed what its
	// CPUs' counters show by a tick or two.
	w.ServerCPUsOthers = max(0, busy-w.ServerCPU) + max(0, steal)
	return w, nil
}

func (w Window) capacity(cpus []int) time.Duration {
	return w.Elapsed * time.Duration(len(cpus))
}

// ServerShare is the server's CPU time over its CPUs' capacity.
func (w Window) ServerShare() float64 {
	return float64(w.ServerCPU) / float64(w.capacity(w.Layout.Server))
}

// GeneratorShare is the generators' CPU time over their CPUs' capacity.
func (w Window) GeneratorShare() float64 {
	return float64(w.GeneratorCPU) / float64(w.capacity(w.Layout.Generator))
}

// StolenShare is the share of the server's CPUs' capacity taken by
// anything other than the server.
func (w Window) StolenShare() float64 {
	return float64(w.ServerCPUsOthers) / float64(w.capacity(w.Layout.Server))
}

// GeneratorSaturated reports whether the generators used their CPUs
// nearly fully while the server did not: then they, not the server, may
// have set the pace. When both were saturated, the server was at its
// capacity and its figures are its own.
func (w Window) GeneratorSaturated() bool {
	return w.GeneratorShare() >= generatorSaturatedShare && w.ServerShare() < serverSaturatedShare
}

// Stolen reports whether the server's CPUs were busy with something
// else for a material part of the window.
func (w Window) Stolen() bool { return w.StolenShare() >= stolenShare }

// Clean reports whether the window measured the server alone at the
// pace the server set.
func (w Window) Clean() bool { return !w.GeneratorSaturated() && !w.Stolen() }

// Problems says, in words, why the window is not clean; empty if it is.
func (w Window) Problems() []string {
	var p []string
	if w.GeneratorSaturated() {
		p = append(p, fmt.Sprintf("generator saturated (%.0f%% of CPUs %s; the server used %.0f%% of CPUs %s)",
			100*w.GeneratorShare(), FormatCPUList(w.Layout.Generator), 100*w.ServerShare(), FormatCPUList(w.Layout.Server)))
	}
	if w.Stolen() {
		p = append(p, fmt.Sprintf("%.0f%% of the server's CPUs %s taken by others", 100*w.StolenShare(), FormatCPUList(w.Layout.Server)))
	}
	return p
}

// PerOp divides the server's CPU time, context switches and read/write
// system calls by ops.
func (w Window) PerOp(ops int) (cpu time.Duration, switches, ioCalls float64) {
	if ops <= 0 {
		return 0, 0, 0
	}
	return w.ServerCPU / time.Duration(ops), float64(w.ServerSwitches) / float64(ops), float64(w.ServerIOCalls) / float64(ops)
}
