package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ProcSample is one reading of a process's counters.
type ProcSample struct {
	// CPU is user+system time of the whole thread group, from
	// /proc/<pid>/stat (which sums every thread, live and exited).
	CPU time.Duration
	// Switches holds voluntary+nonvoluntary context switches per thread
	// id. The kernel counts them per thread (/proc/<pid>/status reports
	// the main thread only), so a multi-threaded server's switches are the
	// sum over /proc/<pid>/task/*/status.
	Switches map[int]int64
	// IOCalls is read- and write-family system calls (syscr+syscw of
	// /proc/<pid>/io, which counts every thread, live and exited): for a
	// network server, mostly socket reads and writes.
	IOCalls int64
}

// SampleProcess reads pid's CPU time and per-thread context switches.
func SampleProcess(pid int) (ProcSample, error) {
	cpu, err := ProcessCPU(pid)
	if err != nil {
		return ProcSample{}, err
	}
	s := ProcSample{CPU: cpu, Switches: map[int]int64{}}
	io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return ProcSample{}, fmt.Errorf("bench: read I/O counters of pid %d: %w", pid, err)
	}
	if s.IOCalls, err = parseIOCalls(io); err != nil {
		return ProcSample{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return ProcSample{}, fmt.Errorf("bench: list threads of pid %d: %w", pid, err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", t.Name(), "status"))
		if os.IsNotExist(err) {
			continue // the thread exited between the listing and the read
		}
		if err != nil {
			return ProcSample{}, fmt.Errorf("bench: read thread %d of pid %d: %w", tid, pid, err)
		}
		n, err := parseStatusSwitches(b)
		if err != nil {
			return ProcSample{}, fmt.Errorf("thread %d of pid %d: %w", tid, pid, err)
		}
		s.Switches[tid] = n
	}
	return s, nil
}

// switchesSince returns the context switches of s's threads since
// before: a thread present in both counts its difference, a thread born
// since counts all of its own. Switches of threads that exited in
// between are lost (the kernel does not keep them), so this is a lower
// bound; servers keep their threads for their lifetime.
func (s ProcSample) switchesSince(before ProcSample) int64 {
	var n int64
	for tid, after := range s.Switches {
		d := after - before.Switches[tid]
		if d < 0 { // the thread id was reused by a new thread
			d = after
		}
		n += d
	}
	return n
}

// parseIOCalls returns syscr+syscw from the contents of /proc/<pid>/io.
func parseIOCalls(b []byte) (int64, error) {
	return sumNamedValues(b, "syscr", "syscw")
}

// parseStatusSwitches returns voluntary_ctxt_switches +
// nonvoluntary_ctxt_switches from the contents of a status file.
func parseStatusSwitches(b []byte) (int64, error) {
	return sumNamedValues(b, "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
}

// sumNamedValues adds up the "name: value" lines of a /proc file with
// the given names, each of which must be there once.
func sumNamedValues(b []byte, names ...string) (int64, error) {
	var total int64
	found := 0
	for line := range strings.Lines(string(b)) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: %s value %q", ErrProcFormat, name, strings.TrimSpace(rest))
		}
		total += n
		found++
	}
	if found != len(names) {
		return 0, fmt.Errorf("%w: %d of the lines %v", ErrProcFormat, found, names)
	}
	return total, nil
}

// SampleKernelThreads returns the CPU time all kernel threads (children
// of kthreadd: kworkers, jbd2, ksoftirqd, …) have used so far. The disk
// work behind a server's fsyncs (journal commits, unwritten-extent
// conversion, writeback) runs there, not in the server's process.
func SampleKernelThreads() (time.Duration, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("bench: list /proc: %w", err)
	}
	var total time.Duration
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited since the listing
		}
		ppid, cpu, err := parseStatParentCPU(b)
		if err != nil {
			return 0, fmt.Errorf("pid %s: %w", e.Name(), err)
		}
		if ppid == kthreadd {
			total += cpu
		}
	}
	return total, nil
}

// kthreadd is the parent of every kernel thread.
const kthreadd = 2

// parseStatParentCPU returns the parent pid and utime+stime from the
// contents of /proc/<pid>/stat.
func parseStatParentCPU(b []byte) (int, time.Duration, error) {
	cpu, err := parseStatCPU(b)
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ppid, err := strconv.Atoi(f[1]) // fields 3 (state) and 4 (ppid)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: stat ppid %q", ErrProcFormat, f[1])
	}
	return ppid, cpu, nil
}

// CPUTimes is one CPU's time since boot, from a cpuN line of /proc/stat.
type CPUTimes struct {
	// Busy is user+nice+system+irq+softirq: time anything ran on it.
	Busy time.Duration
	// Steal is time the hypervisor gave this virtual CPU to someone else.
	Steal time.Duration
}

// SampleCPUs reads every CPU's times from /proc/stat, by CPU number.
func SampleCPUs() (map[int]CPUTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, fmt.Errorf("bench: read /proc/stat: %w", err)
	}
	return parseProcStat(b)
}

// parseProcStat parses the cpuN lines of /proc/stat: user nice system
// idle iowait irq softirq steal [guest guest_nice], in clock ticks. Guest
// time is already part of user time.
func parseProcStat(b []byte) (map[int]CPUTimes, error) {
	cpus := map[int]CPUTimes{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		id, err := strconv.Atoi(f[0][3:])
		if err != nil {
			return nil, fmt.Errorf("%w: /proc/stat line %q", ErrProcFormat, sc.Text())
		}
		if len(f) < 9 {
			return nil, fmt.Errorf("%w: /proc/stat line %q has %d fields, want at least 9", ErrProcFormat, sc.Text(), len(f))
		}
		var v [8]int64
		for i := range v {
			if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil || v[i] < 0 {
				return nil, fmt.Errorf("%w: /proc/stat line %q field %d", ErrProcFormat, sc.Text(), i+1)
			}
		}
		const user, nice, system, irq, softirq, steal = 0, 1, 2, 5, 6, 7
		busy := v[user] + v[nice] + v[system] + v[irq] + v[softirq]
		cpus[id] = CPUTimes{Busy: time.Duration(busy) * clockTick, Steal: time.Duration(v[steal]) * clockTick}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: scan /proc/stat: %w", err)
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("%w: /proc/stat has no cpuN lines", ErrProcFormat)
	}
	return cpus, nil
}
