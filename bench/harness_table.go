package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// HarnessRow is one workload on one server: its measured runs and how
// many runs failed.
type HarnessRow struct {
	Workload, Target string
	Runs             []Measurement
	Errors           int
}

// median returns the median of the runs' values of f (the mean of the
// middle two for an even count), or 0 without runs.
func median(runs []Measurement, f func(Measurement) float64) float64 {
	if len(runs) == 0 {
		return 0
	}
	v := make([]float64, len(runs))
	for i, m := range runs {
		v[i] = f(m)
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func durationOf(f func(Measurement) time.Duration) func(Measurement) float64 {
	return func(m Measurement) float64 { return float64(f(m)) }
}

// cleanRuns counts the clean runs and says what spoiled the others.
func (r HarnessRow) cleanRuns() (clean int, why string) {
	var saturated, stolen int
	for _, m := range r.Runs {
		if m.Window.Clean() {
			clean++
		}
		if m.Window.GeneratorSaturated() {
			saturated++
		}
		if m.Window.Stolen() {
			stolen++
		}
	}
	var parts []string
	if saturated > 0 {
		parts = append(parts, fmt.Sprintf("generator saturated %d", saturated))
	}
	if stolen > 0 {
		parts = append(parts, fmt.Sprintf("CPU stolen %d", stolen))
	}
	if r.Errors > 0 {
		parts = append(parts, fmt.Sprintf("failed %d", r.Errors))
	}
	return clean, strings.Join(parts, ", ")
}

// WriteHarnessReport writes the method, then one Markdown table per
// workload: the median of each metric over the runs, for every server,
// and each server's CPU per op and ops/s relative to the first (the
// baseline). It says above the tables, and in each row, when runs were
// not clean: their figures are then not the servers' own.
func WriteHarnessReport(w io.Writer, method string, rows []HarnessRow) error {
	var b strings.Builder
	b.WriteString(method + "\n\n")
	total, unclean := 0, 0
	for _, r := range rows {
		clean, _ := r.cleanRuns()
		total += len(r.Runs) + r.Errors
		unclean += len(r.Runs) + r.Errors - clean
	}
	if unclean > 0 {
		fmt.Fprintf(&b, "**NOT CLEAN: %d of %d runs had a saturated generator, lost CPU to other processes, or failed. "+
			"Their figures are not the servers' own; do not quote them as such.**\n\n", unclean, total)
	} else {
		fmt.Fprintf(&b, "All %d runs clean.\n\n", total)
	}
	for _, group := range groupHarnessRows(rows) {
		fmt.Fprintf(&b, "#### %s\n\n", group[0].Workload)
		cells := [][]string{{"server", "ops/s", "p50", "p99", "CPU µs/op", "kernel threads µs/op", "ctx switches/op", "read+write calls/op", "server CPU", "generator CPU", "others on server CPU", "clean runs", "CPU/op vs " + group[0].Target, "ops/s vs " + group[0].Target}}
		base := group[0]
		for i, r := range group {
			cells = append(cells, harnessCells(r, base, i == 0))
		}
		if err := writeMarkdown(&b, cells); err != nil {
			return err
		}
		if wl, err := LookupWorkload(group[0].Workload); err == nil {
			fmt.Fprintf(&b, "\n%s; one op = %s; p50/p99 = %s.\n", wl.Description, wl.Unit, wl.Latency)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func harnessCells(r, base HarnessRow, isBase bool) []string {
	clean, why := r.cleanRuns()
	cleanCell := fmt.Sprintf("%d/%d", clean, len(r.Runs)+r.Errors)
	if why != "" {
		cleanCell += " (" + why + ")"
	}
	if len(r.Runs) == 0 {
		return []string{r.Target, "—", "—", "—", "—", "—", "—", "—", "—", "—", "—", cleanCell, "", ""}
	}
	ops := median(r.Runs, func(m Measurement) float64 { return m.OpsPerSec })
	cpu := median(r.Runs, durationOf(func(m Measurement) time.Duration { return m.CPUPerOp }))
	relCPU, relOps := "baseline", "baseline"
	if !isBase {
		relCPU, relOps = "—", "—"
		if bc := median(base.Runs, durationOf(func(m Measurement) time.Duration { return m.CPUPerOp })); bc > 0 && len(base.Runs) > 0 {
			relCPU = fmt.Sprintf("%.2f", cpu/bc)
		}
		if bo := median(base.Runs, func(m Measurement) float64 { return m.OpsPerSec }); bo > 0 {
			relOps = fmt.Sprintf("%.2f", ops/bo)
		}
	}
	pct := func(f func(Window) float64) string {
		return fmt.Sprintf("%.0f%%", 100*median(r.Runs, func(m Measurement) float64 { return f(m.Window) }))
	}
	return []string{
		r.Target,
		fmt.Sprintf("%.0f", ops),
		formatDuration(time.Duration(median(r.Runs, durationOf(func(m Measurement) time.Duration { return m.P50 })))),
		formatDuration(time.Duration(median(r.Runs, durationOf(func(m Measurement) time.Duration { return m.P99 })))),
		fmt.Sprintf("%.1f", cpu/float64(time.Microsecond)),
		fmt.Sprintf("%.1f", median(r.Runs, durationOf(func(m Measurement) time.Duration { return m.KernelPerOp }))/float64(time.Microsecond)),
		fmt.Sprintf("%.2f", median(r.Runs, func(m Measurement) float64 { return m.SwitchesPerOp })),
		fmt.Sprintf("%.2f", median(r.Runs, func(m Measurement) float64 { return m.IOCallsPerOp })),
		pct(Window.ServerShare), pct(Window.GeneratorShare), pct(Window.StolenShare),
		cleanCell, relCPU, relOps,
	}
}

// groupHarnessRows groups rows by workload, keeping first-seen order.
func groupHarnessRows(rows []HarnessRow) [][]HarnessRow {
	var out [][]HarnessRow
	for _, r := range rows {
		i := slices.IndexFunc(out, func(g []HarnessRow) bool { return g[0].Workload == r.Workload })
		if i < 0 {
			out = append(out, []HarnessRow{r})
			continue
		}
		out[i] = append(out[i], r)
	}
	return out
}
