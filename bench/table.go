package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// maxErrorCell is the most of an error message a table cell shows.
const maxErrorCell = 120

// Row is one line of a comparison table: a workload's result on a target,
// or the error that prevented it.
type Row struct {
	Target string
	Result Result // Result.Workload is set even when Err is not nil
	Err    error
}

// WriteTable writes rows as a Markdown table whose columns are padded, so
// it reads as well in a terminal as in a rendered document. Rows are
// grouped by workload in order of first appearance. In each group the
// first target is the baseline and the last column gives, for every other
// target, how many times better it did: its ops/s over the baseline's,
// and the baseline's p50, p99, CPU per op, RSS and restart time over its
// own. Greater than 1 is better; a column either side lacks is left out.
func WriteTable(w io.Writer, rows []Row) error {
	header := []string{"workload", "target", "ops/s", "p50", "p99", "CPU µs/op", "RSS", "extra", "× baseline"}
	cells := [][]string{header}
	for _, group := range groupByWorkload(rows) {
		base := group[0]
		for i, r := range group {
			ratio := ""
			if i > 0 {
				ratio = ratios(base, r)
			} else if len(group) > 1 {
				ratio = "baseline"
			}
			cells = append(cells, rowCells(r, ratio))
		}
	}
	if err := writeMarkdown(w, cells); err != nil {
		return err
	}
	return writeLegend(w, rows)
}

// writeLegend says, for each workload in rows, what an operation is and
// what the latency columns measure, since both vary by workload.
func writeLegend(w io.Writer, rows []Row) error {
	var b strings.Builder
	b.WriteString("\n")
	for _, group := range groupByWorkload(rows) {
		wl, err := LookupWorkload(group[0].Result.Workload)
		if err != nil {
			continue // a row from elsewhere; nothing to explain
		}
		fmt.Fprintf(&b, "- %s: %s; one op = %s; p50/p99 = %s.\n", wl.Name, wl.Description, wl.Unit, wl.Latency)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// groupByWorkload groups rows by Result.Workload, keeping first-seen order.
func groupByWorkload(rows []Row) [][]Row {
	var order []string
	groups := map[string][]Row{}
	for _, r := range rows {
		name := r.Result.Workload
		if _, ok := groups[name]; !ok {
			order = append(order, name)
		}
		groups[name] = append(groups[name], r)
	}
	out := make([][]Row, len(order))
	for i, name := range order {
		out[i] = groups[name]
	}
	return out
}

func rowCells(r Row, ratio string) []string {
	res := r.Result
	if r.Err != nil {
		// Keep the table one line per row whatever the error says, and
		// the row readable: the full error is returned and logged. The
		// middle goes, because wrapping puts context first and the
		// cause (often a server's last log line) last.
		msg := strings.Join(strings.Fields(r.Err.Error()), " ")
		if runes := []rune(msg); len(runes) > maxErrorCell {
			half := maxErrorCell / 2
			msg = string(runes[:half-1]) + "…" + string(runes[len(runes)-half:])
		}
		return []string{res.Workload, r.Target, "—", "—", "—", "—", "—", "error: " + escapeCell(msg), ""}
	}
	cpu, rss := "—", "—"
	if res.CPUPerOp > 0 || res.RSSBytes > 0 {
		cpu = fmt.Sprintf("%.1f", float64(res.CPUPerOp)/float64(time.Microsecond))
	}
	if res.RSSBytes > 0 {
		rss = formatBytes(res.RSSBytes)
	}
	return []string{
		res.Workload, r.Target, fmt.Sprintf("%.0f", res.OpsPerSec),
		formatDuration(res.P50), formatDuration(res.P99), cpu, rss, formatExtra(res.Extra), ratio,
	}
}

// ratios renders how many times better r did than base, metric by metric.
func ratios(base, r Row) string {
	if base.Err != nil || r.Err != nil {
		return ""
	}
	b, c := base.Result, r.Result
	var parts []string
	add := func(name string, better, worse float64) {
		if better > 0 && worse > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", name, better/worse))
		}
	}
	add("ops/s", c.OpsPerSec, b.OpsPerSec)
	add("p50", float64(b.P50), float64(c.P50))
	add("p99", float64(b.P99), float64(c.P99))
	add("cpu", float64(b.CPUPerOp), float64(c.CPUPerOp))
	add("rss", float64(b.RSSBytes), float64(c.RSSBytes))
	bRestart, errB := time.ParseDuration(b.Extra["restart"])
	cRestart, errC := time.ParseDuration(c.Extra["restart"])
	if errB == nil && errC == nil {
		add("restart", float64(bRestart), float64(cRestart))
	}
	return strings.Join(parts, ", ")
}

func formatExtra(extra map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		parts = append(parts, k+"="+escapeCell(extra[k]))
	}
	return strings.Join(parts, " ")
}

// escapeCell keeps a value from ending its Markdown cell early.
func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// writeMarkdown writes cells (the first row is the header) as a Markdown
// table with every column padded to its widest cell.
func writeMarkdown(w io.Writer, cells [][]string) error {
	widths := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c), 3)
		}
	}
	var b strings.Builder
	line := func(row []string) {
		b.WriteString("|")
		for i, c := range row {
			fmt.Fprintf(&b, " %s%s |", c, strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
		}
		b.WriteString("\n")
	}
	line(cells[0])
	sep := make([]string, len(widths))
	for i, wd := range widths {
		sep[i] = strings.Repeat("-", wd)
	}
	line(sep)
	for _, row := range cells[1:] {
		line(row)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatDuration renders a latency in the unit that suits it, with no
// more digits than the measurement deserves.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

// formatBytes renders a size in MiB, the scale server RSS lives at.
func formatBytes(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
