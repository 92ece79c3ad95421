package realclients

import "strings"

// diffLines returns a line diff of want and got ("-" only in want, "+"
// only in got, " " in both, with up to two lines of context around each
// change), or "" when they are equal. Transcripts are a few hundred lines,
// so the quadratic longest-common-subsequence table is cheap.
func diffLines(want, got []string) string {
	n, m := len(want), len(got)
	// lcs[i][j] is the LCS length of want[i:] and got[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if want[i] == got[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte
		line string
	}
	var ops []op
	changed := false
	for i, j := 0, 0; i < n || j < m; {
		switch {
		case i < n && j < m && want[i] == got[j]:
			ops = append(ops, op{' ', want[i]})
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', want[i]})
			changed = true
			i++
		default:
			ops = append(ops, op{'+', got[j]})
			changed = true
			j++
		}
	}
	if !changed {
		return ""
	}
	const context = 2
	var b strings.Builder
	lastShown := -1
	for k, o := range ops {
		near := false
		for d := max(0, k-context); d <= min(len(ops)-1, k+context); d++ {
			if ops[d].kind != ' ' {
				near = true
				break
			}
		}
		if !near {
			continue
		}
		if lastShown >= 0 && k > lastShown+1 {
			b.WriteString("  ...\n")
		}
		b.WriteByte(o.kind)
		b.WriteByte(' ')
		b.WriteString(o.line)
		b.WriteByte('\n')
		lastShown = k
	}
	return b.String()
}
