package collector

import (
	"fmt"
	"sort"
)

// Strategy is how the assigner reassigns sources.
type Strategy string

// The strategies of the source documents.
const (
	// Global re-partitions all sources evenly over the live collectors
	// whenever the set of live collectors or of sources changes. Even,
	// but a single death or join can move most sources.
	Global Strategy = "global"
	// Local moves only what must move: a dead collector's sources go one
	// by one to the least-loaded live collector, new sources likewise,
	// and a collector with no sources (a join, or a return from the dead)
	// takes sources from the most-loaded until it holds its share.
	Local Strategy = "local"
)

// ParseStrategy checks a --strategy value.
func ParseStrategy(s string) (Strategy, error) {
	switch Strategy(s) {
	case Global, Local:
		return Strategy(s), nil
	}
	return "", fmt.Errorf("collector: strategy %q: want global or local", s)
}

// Member is a collector as the assigner sees it.
type Member struct {
	Name     string
	Alive    bool
	Assigned []string // its sources now
	Load     Load
}

// Plan returns the sources each collector should hold under strategy,
// given the sources to collect and the collectors. Dead collectors get
// none; with no live collector the current assignment is kept. Plan is a
// pure function: the same input gives the same plan.
func Plan(strategy Strategy, sources []string, members []Member) map[string][]string {
	ms := append([]Member(nil), members...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	var live []int
	for i, m := range ms {
		if m.Alive {
			live = append(live, i)
		}
	}
	out := make(map[string][]string, len(ms))
	if len(live) == 0 {
		for _, m := range ms {
			out[m.Name] = sortedCopy(m.Assigned)
		}
		return out
	}
	srcs := sortedCopy(sources)
	for _, m := range ms {
		out[m.Name] = nil
	}
	if strategy == Global {
		for i, s := range srcs {
			n := ms[live[i%len(live)]].Name
			out[n] = append(out[n], s)
		}
		return out
	}
	planLocal(srcs, ms, live, out)
	for n := range out {
		sort.Strings(out[n])
	}
	return out
}

// planLocal fills out for the local strategy.
func planLocal(srcs []string, ms []Member, live []int, out map[string][]string) {
	want := make(map[string]bool, len(srcs))
	for _, s := range srcs {
		want[s] = true
	}
	held := map[string]bool{}
	for _, i := range live {
		for _, s := range sortedCopy(ms[i].Assigned) {
			if want[s] && !held[s] {
				held[s] = true
				out[ms[i].Name] = append(out[ms[i].Name], s)
			}
		}
	}
	newcomers := map[string]bool{}
	for _, i := range live {
		if len(out[ms[i].Name]) == 0 {
			newcomers[ms[i].Name] = true
		}
	}
	// less orders live collectors by load: sources held, then reported
	// bytes per second, then name.
	less := func(a, b int) bool {
		na, nb := len(out[ms[a].Name]), len(out[ms[b].Name])
		if na != nb {
			return na < nb
		}
		if ms[a].Load.BytesPerSec != ms[b].Load.BytesPerSec {
			return ms[a].Load.BytesPerSec < ms[b].Load.BytesPerSec
		}
		return ms[a].Name < ms[b].Name
	}
	for _, s := range srcs {
		if held[s] {
			continue
		}
		min := live[0]
		for _, i := range live[1:] {
			if less(i, min) {
				min = i
			}
		}
		out[ms[min].Name] = append(out[ms[min].Name], s)
	}
	share := len(srcs) / len(live)
	for _, n := range sortedKeys(newcomers) {
		for len(out[n]) < share {
			max := -1
			for _, i := range live {
				if ms[i].Name != n && (max < 0 || less(max, i)) {
					max = i
				}
			}
			from := ms[max].Name
			if len(out[from]) <= len(out[n])+1 {
				break
			}
			sort.Strings(out[from])
			last := len(out[from]) - 1
			out[n] = append(out[n], out[from][last])
			out[from] = out[from][:last]
		}
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Moves counts the sources whose collector differs between two plans
// (a source new to after counts as a move too).
func Moves(before, after map[string][]string) int {
	owner := map[string]string{}
	for n, ss := range before {
		for _, s := range ss {
			owner[s] = n
		}
	}
	moves := 0
	for n, ss := range after {
		for _, s := range ss {
			if owner[s] != n {
				moves++
			}
		}
	}
	return moves
}
