package bench

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Synthetic /proc readings: the harness's arithmetic must not depend on
// a live machine.
const (
	statusTail = "Name:\tcoord\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t%d\nnonvoluntary_ctxt_switches:\t%d\n"
	procStat   = "cpu  100 0 100 800 0 0 0 0 0 0\n" +
		"cpu0 %d 0 %d 400 0 %d %d %d 0 0\n" +
		"cpu1 %d 0 0 400 0 0 0 0 0 0\nintr 1 2 3\nctxt 99\n"
)

func mustCPUs(t *testing.T, user0, sys0, irq0, softirq0, steal0, user1 int) map[int]CPUTimes {
	t.Helper()
	cpus, err := parseProcStat(fmtBytes(procStat, user0, sys0, irq0, softirq0, steal0, user1))
	if err != nil {
		t.Fatal(err)
	}
	return cpus
}

func fmtBytes(format string, args ...any) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, format, args...)
	return []byte(b.String())
}

func TestParseProcStatCountsBusyAndSteal(t *testing.T) {
	cpus := mustCPUs(t, 300, 100, 5, 15, 7, 50)
	want := map[int]CPUTimes{
		0: {Busy: 420 * clockTick, Steal: 7 * clockTick},
		1: {Busy: 50 * clockTick},
	}
	if len(cpus) != 2 || cpus[0] != want[0] || cpus[1] != want[1] {
		t.Errorf("parseProcStat = %+v, want %+v (the aggregate cpu line skipped)", cpus, want)
	}
	for _, bad := range []string{"", "cpu0 1 2 3\n", "cpux 1 2 3 4 5 6 7 8\n", "cpu0 1 2 3 4 5 6 -7 8\n"} {
		if _, err := parseProcStat([]byte(bad)); !errors.Is(err, ErrProcFormat) {
			t.Errorf("parseProcStat(%q) error = %v, want ErrProcFormat", bad, err)
		}
	}
}

func TestParseStatusSwitchesSumsBothKinds(t *testing.T) {
	n, err := parseStatusSwitches(fmtBytes(statusTail, 1200, 34))
	if err != nil || n != 1234 {
		t.Errorf("parseStatusSwitches = %d, %v; want 1234", n, err)
	}
	if _, err := parseStatusSwitches([]byte("voluntary_ctxt_switches:\t5\n")); !errors.Is(err, ErrProcFormat) {
		t.Errorf("status with one of the two lines: error = %v, want ErrProcFormat", err)
	}
}

func TestParseStatParentCPUFindsKernelThreads(t *testing.T) {
	ppid, cpu, err := parseStatParentCPU([]byte("77 (kworker/u8:2-ext4-rsv-conversion) I 2 0 0 0 -1 69238880 0 0 0 0 40 28 0 0 20 0 1 0 5 0 0\n"))
	if err != nil || ppid != kthreadd || cpu != 68*clockTick {
		t.Errorf("parseStatParentCPU(kworker) = %d, %v, %v; want ppid 2 and 680ms", ppid, cpu, err)
	}
}

func TestParseIOCallsSumsReadsAndWrites(t *testing.T) {
	n, err := parseIOCalls([]byte("rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 32\nread_bytes: 0\n"))
	if err != nil || n != 42 {
		t.Errorf("parseIOCalls = %d, %v; want 42", n, err)
	}
	if _, err := parseIOCalls([]byte("rchar: 1\nsyscr: 10\n")); !errors.Is(err, ErrProcFormat) {
		t.Errorf("io without syscw: error = %v, want ErrProcFormat", err)
	}
}

func TestSwitchesSinceSumsThreadsAndCountsNewOnes(t *testing.T) {
	before := ProcSample{Switches: map[int]int64{10: 100, 11: 50, 12: 7}}
	// Thread 12 exited (its switches are lost), 13 was born, 11's id
	// was reused by a thread with fewer switches than the old one had.
	after := ProcSample{Switches: map[int]int64{10: 160, 11: 20, 13: 5}}
	if got, want := after.switchesSince(before), int64(60+20+5); got != want {
		t.Errorf("switchesSince = %d, want %d", got, want)
	}
}

// The server ran 2.5 s of CPU time in a 5 s window on one CPU, the
// generators 4 s on the other; others used 0.3 s of the server's CPU and
// the hypervisor stole 0.2 s more.
func syntheticWindow(t *testing.T, genCPUAfter time.Duration, othersTicks, stealTicks int) Window {
	t.Helper()
	return syntheticWindowWithServer(t, 2500*time.Millisecond, genCPUAfter, othersTicks, stealTicks)
}

// syntheticWindowWithServer is syntheticWindow with the server using
// serverCPU of its one CPU's 5 s.
func syntheticWindowWithServer(t *testing.T, serverCPU, genCPUAfter time.Duration, othersTicks, stealTicks int) Window {
	t.Helper()
	serverTicks := int(serverCPU / (10 * time.Millisecond))
	l := Layout{Server: []int{0}, Generator: []int{1}}
	t0 := time.Unix(1000, 0)
	before := Snapshot{
		At:            t0,
		Server:        ProcSample{CPU: 10 * time.Second, Switches: map[int]int64{1: 1000, 2: 500}, IOCalls: 7000},
		Generators:    []time.Duration{time.Second, 2 * time.Second},
		CPUs:          mustCPUs(t, 1000, 200, 0, 0, 0, 500),
		KernelThreads: 3 * time.Second,
	}
	after := Snapshot{
		At:         t0.Add(5 * time.Second),
		Server:     ProcSample{CPU: 10*time.Second + serverCPU, Switches: map[int]int64{1: 6000, 2: 5500}, IOCalls: 107_000},
		Generators: []time.Duration{time.Second + genCPUAfter/2, 2*time.Second + genCPUAfter/2},
		// cpu0 busy grows by the server's 250 ticks plus the others'.
		CPUs:          mustCPUs(t, 1000+serverTicks*4/5+othersTicks, 200+serverTicks/5, 0, 0, stealTicks, 500+400),
		KernelThreads: 3500 * time.Millisecond,
	}
	w, err := Account(before, after, l)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestAccountChargesOnlyTheWindowToTheServer(t *testing.T) {
	w := syntheticWindow(t, 4*time.Second, 30, 20)
	if w.Elapsed != 5*time.Second || w.ServerCPU != 2500*time.Millisecond || w.ServerSwitches != 10000 {
		t.Errorf("window = %+v; want 5s elapsed, 2.5s server CPU, 10000 switches", w)
	}
	cpu, sw, io := w.PerOp(50_000)
	if cpu != 50*time.Microsecond || sw != 0.2 || io != 2 {
		t.Errorf("PerOp(50000) = %v, %v, %v; want 50µs, 0.2 switches and 2 I/O calls", cpu, sw, io)
	}
	if w.KernelThreadsCPU != 500*time.Millisecond {
		t.Errorf("kernel threads CPU %v, want 0.5s", w.KernelThreadsCPU)
	}
	if w.GeneratorCPU != 4*time.Second || w.ServerCPUsOthers != 500*time.Millisecond {
		t.Errorf("generator CPU %v, others on server CPU %v; want 4s and 0.5s (0.3s others + 0.2s steal)", w.GeneratorCPU, w.ServerCPUsOthers)
	}
	if got := w.ServerShare(); got != 0.5 {
		t.Errorf("ServerShare = %v, want 0.5", got)
	}
	if cpu, sw, io := w.PerOp(0); cpu != 0 || sw != 0 || io != 0 {
		t.Errorf("PerOp(0) = %v, %v, %v; want zeros, not a division by zero", cpu, sw, io)
	}
}

func TestAccountRejectsMismatchedSnapshots(t *testing.T) {
	l := Layout{Server: []int{0}, Generator: []int{1}}
	cpus := mustCPUs(t, 1, 1, 0, 0, 0, 1)
	t0 := time.Unix(1000, 0)
	base := Snapshot{At: t0, Server: ProcSample{CPU: time.Second}, Generators: []time.Duration{0}, CPUs: cpus}
	tests := []struct {
		name  string
		after Snapshot
	}{
		{"restarted server", Snapshot{At: t0.Add(time.Second), Server: ProcSample{}, Generators: []time.Duration{0}, CPUs: cpus}},
		{"generator count", Snapshot{At: t0.Add(time.Second), Server: ProcSample{CPU: time.Second}, CPUs: cpus}},
		{"no time passed", Snapshot{At: t0, Server: ProcSample{CPU: time.Second}, Generators: []time.Duration{0}, CPUs: cpus}},
		{"CPU missing", Snapshot{At: t0.Add(time.Second), Server: ProcSample{CPU: time.Second}, Generators: []time.Duration{0}, CPUs: map[int]CPUTimes{1: {}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Account(base, tt.after, l); err == nil {
				t.Errorf("Account accepted a %s", tt.name)
			}
		})
	}
}

func TestWindowVerdict(t *testing.T) {
	tests := []struct {
		name                 string
		serverCPU, genCPU    time.Duration
		othersTicks, steal   int
		saturated, stolen    bool
		problemsMentionWords []string
	}{
		{"clean", 2500 * time.Millisecond, 4 * time.Second, 10, 0, false, false, nil},
		{"generator at 90%", 2500 * time.Millisecond, 4500 * time.Millisecond, 0, 0, true, false,
			[]string{"generator saturated (90% of CPUs 1; the server used 50% of CPUs 0)"}},
		{"generator and server at 90%", 4500 * time.Millisecond, 4500 * time.Millisecond, 0, 0, false, false, nil},
		{"generator at 90%, server at 89%", 4450 * time.Millisecond, 4500 * time.Millisecond, 0, 0, true, false, []string{"the server used 89%"}},
		{"others took 10%", 2500 * time.Millisecond, time.Second, 50, 0, false, true, []string{"10% of the server's CPUs 0 taken by others"}},
		{"steal counts as taken", 2500 * time.Millisecond, time.Second, 0, 60, false, true, []string{"12% of the server's CPUs"}},
		{"both", 2500 * time.Millisecond, 5 * time.Second, 100, 0, true, true, []string{"generator saturated", "taken by others"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := syntheticWindowWithServer(t, tt.serverCPU, tt.genCPU, tt.othersTicks, tt.steal)
			if w.GeneratorSaturated() != tt.saturated || w.Stolen() != tt.stolen || w.Clean() != (!tt.saturated && !tt.stolen) {
				t.Errorf("saturated %v stolen %v clean %v; want %v %v (generator %.2f, stolen %.2f)",
					w.GeneratorSaturated(), w.Stolen(), w.Clean(), tt.saturated, tt.stolen, w.GeneratorShare(), w.StolenShare())
			}
			problems := strings.Join(w.Problems(), "; ")
			if len(tt.problemsMentionWords) == 0 && problems != "" {
				t.Errorf("Problems = %q, want none", problems)
			}
			for _, want := range tt.problemsMentionWords {
				if !strings.Contains(problems, want) {
					t.Errorf("Problems = %q, want it to mention %q", problems, want)
				}
			}
		})
	}
}

func TestLayoutAndCPUList(t *testing.T) {
	cpus, err := ParseCPUList("0,2-3,3\n")
	if err != nil || FormatCPUList(cpus) != "0,2,3" {
		t.Errorf("ParseCPUList = %v, %v; want 0,2,3", cpus, err)
	}
	for _, bad := range []string{"", "a", "3-1", "-1"} {
		if _, err := ParseCPUList(bad); !errors.Is(err, ErrBadOption) {
			t.Errorf("ParseCPUList(%q) error = %v, want ErrBadOption", bad, err)
		}
	}
	l, err := DefaultLayout([]int{0, 1, 2, 3})
	if err != nil || FormatCPUList(l.Server) != "0,1" || FormatCPUList(l.Generator) != "2,3" {
		t.Errorf("DefaultLayout(0-3) = %+v, %v; want server 0,1 and generators 2,3", l, err)
	}
	if _, err := DefaultLayout([]int{0}); !errors.Is(err, ErrBadOption) {
		t.Errorf("DefaultLayout of one CPU: error = %v, want ErrBadOption", err)
	}
	if err := (Layout{Server: []int{0, 1}, Generator: []int{1}}).validate(); !errors.Is(err, ErrBadOption) {
		t.Errorf("overlapping layout: error = %v, want ErrBadOption", err)
	}
}

func TestMergeReportsWeighsGeneratorsByOps(t *testing.T) {
	fast := GeneratorReport{Ops: 3000, Quantiles: []time.Duration{1, 1, 1}}
	slow := GeneratorReport{Ops: 1000, Quantiles: []time.Duration{100, 100, 100, 100}}
	ops, dist := mergeReports([]GeneratorReport{slow, fast})
	if ops != 4000 {
		t.Errorf("ops = %d, want 4000", ops)
	}
	// Three quarters of the operations took 1ns.
	if p50, p75, p76 := dist.percentile(0.5), dist.percentile(0.75), dist.percentile(0.76); p50 != 1 || p75 != 1 || p76 != 100 {
		t.Errorf("p50, p75, p76 = %v, %v, %v; want 1ns, 1ns, 100ns", p50, p75, p76)
	}
}

func TestReportRefusesToCallUncleanRunsClean(t *testing.T) {
	clean := Measurement{OpsPerSec: 1000, CPUPerOp: 20 * time.Microsecond, Window: syntheticWindow(t, time.Second, 0, 0)}
	saturated := Measurement{OpsPerSec: 3000, CPUPerOp: 10 * time.Microsecond, Window: syntheticWindow(t, 5*time.Second, 0, 0)}
	rows := []HarnessRow{
		{Workload: "get", Target: "zookeeper", Runs: []Measurement{clean, clean}},
		{Workload: "get", Target: "shepherd", Runs: []Measurement{clean, saturated}, Errors: 1},
	}
	var b strings.Builder
	if err := WriteHarnessReport(&b, "Method.", rows); err != nil {
		t.Fatal(err)
	}
	report := b.String()
	for _, want := range []string{
		"**NOT CLEAN: 2 of 5 runs",
		"| 2/2 ", "| 1/3 (generator saturated 1, failed 1) |",
		"| 0.75 ", // median CPU per op 15µs against the baseline's 20µs
		"| 2.00 ", // median 2000 ops/s against 1000
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	b.Reset()
	if err := WriteHarnessReport(&b, "Method.", rows[:1]); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "All 2 runs clean.") || strings.Contains(b.String(), "NOT CLEAN") {
		t.Errorf("report of clean runs:\n%s", b.String())
	}
}
