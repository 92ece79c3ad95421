package collector

import (
	"fmt"
	"testing"
)

func srcNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("file:///logs/s%02d.log", i)
	}
	return out
}

// members assigns srcs to names round-robin, all alive.
func members(names []string, srcs []string) []Member {
	ms := make([]Member, len(names))
	for i, n := range names {
		ms[i] = Member{Name: n, Alive: true}
	}
	for i, s := range srcs {
		ms[i%len(ms)].Assigned = append(ms[i%len(ms)].Assigned, s)
	}
	return ms
}

func counts(p map[string][]string) map[string]int {
	out := map[string]int{}
	for n, ss := range p {
		out[n] = len(ss)
	}
	return out
}

func checkComplete(t *testing.T, p map[string][]string, srcs []string) {
	t.Helper()
	seen := map[string]string{}
	for n, ss := range p {
		for _, s := range ss {
			if o, dup := seen[s]; dup {
				t.Fatalf("source %s assigned to both %s and %s", s, o, n)
			}
			seen[s] = n
		}
	}
	for _, s := range srcs {
		if _, ok := seen[s]; !ok {
			t.Fatalf("source %s not assigned: %v", s, p)
		}
	}
}

func TestPlanDeath(t *testing.T) {
	srcs := srcNames(50)
	names := []string{"c1", "c2", "c3", "c4", "c5"}
	for _, tc := range []struct {
		strategy Strategy
		// maxMoves bounds the moves; local moves exactly the dead's 10.
		minMoves, maxMoves int
	}{
		{Local, 10, 10},
		{Global, 10, 50},
	} {
		t.Run(string(tc.strategy), func(t *testing.T) {
			ms := members(names, srcs)
			before := Plan(tc.strategy, srcs, ms)
			if m := Moves(map[string][]string{}, before); m != 50 {
				t.Fatalf("first plan assigns %d sources, want 50", m)
			}
			// Feed the plan back: nothing changes while nothing happens.
			for i := range ms {
				ms[i].Assigned = before[ms[i].Name]
			}
			if again := Plan(tc.strategy, srcs, ms); Moves(before, again) != 0 {
				t.Fatalf("a second plan with nothing changed moves %d sources", Moves(before, again))
			}
			ms[2].Alive = false // c3 dies
			after := Plan(tc.strategy, srcs, ms)
			checkComplete(t, after, srcs)
			if len(after["c3"]) != 0 {
				t.Fatalf("dead c3 keeps %v", after["c3"])
			}
			moves := Moves(before, after)
			if moves < tc.minMoves || moves > tc.maxMoves {
				t.Fatalf("moved %d sources, want %d..%d", moves, tc.minMoves, tc.maxMoves)
			}
			if tc.strategy == Local {
				for n, ss := range after {
					for _, s := range ss {
						if !contains(before[n], s) && !contains(before["c3"], s) {
							t.Fatalf("local strategy moved %s, which dead c3 did not hold, to %s", s, n)
						}
					}
				}
			}
			for n, c := range counts(after) {
				if n != "c3" && (c < 12 || c > 13) {
					t.Fatalf("after the death %s holds %d sources, want 12 or 13: %v", n, c, counts(after))
				}
			}
		})
	}
}

func TestPlanJoin(t *testing.T) {
	srcs := srcNames(50)
	for _, strategy := range []Strategy{Local, Global} {
		t.Run(string(strategy), func(t *testing.T) {
			ms := members([]string{"c1", "c2", "c3", "c4"}, srcs)
			before := Plan(strategy, srcs, ms)
			for i := range ms {
				ms[i].Assigned = before[ms[i].Name]
			}
			ms = append(ms, Member{Name: "c5", Alive: true})
			after := Plan(strategy, srcs, ms)
			checkComplete(t, after, srcs)
			if got := len(after["c5"]); got != 10 {
				t.Fatalf("newcomer c5 got %d sources, want its share 10: %v", got, counts(after))
			}
			if strategy == Local {
				if m := Moves(before, after); m != 10 {
					t.Fatalf("local join moved %d sources, want 10 (only to the newcomer)", m)
				}
			}
			for n, c := range counts(after) {
				if c < 10 || c > 10 {
					t.Fatalf("%s holds %d sources after the join, want 10: %v", n, c, counts(after))
				}
			}
		})
	}
}

func TestPlanNoLiveCollectorKeepsAssignment(t *testing.T) {
	srcs := srcNames(4)
	ms := members([]string{"a", "b"}, srcs)
	ms[0].Alive, ms[1].Alive = false, false
	for _, s := range []Strategy{Local, Global} {
		p := Plan(s, srcs, ms)
		if Moves(map[string][]string{"a": ms[0].Assigned, "b": ms[1].Assigned}, p) != 0 {
			t.Fatalf("%s: with no live collector the plan moved sources: %v", s, p)
		}
	}
}

func TestPlanLocalNewAndRemovedSources(t *testing.T) {
	ms := []Member{
		{Name: "a", Alive: true, Assigned: []string{"s1", "s2", "s3"}},
		{Name: "b", Alive: true, Assigned: []string{"s4"}},
	}
	p := Plan(Local, []string{"s1", "s2", "s4", "s5", "s6"}, ms)
	// s5 goes to b (1 source against 2), s6 to a (a tie, broken by name).
	want := map[string][]string{"a": {"s1", "s2", "s6"}, "b": {"s4", "s5"}}
	for n := range want {
		if fmt.Sprint(p[n]) != fmt.Sprint(want[n]) {
			t.Fatalf("plan %v, want %v (new sources to the least loaded, removed ones dropped)", p, want)
		}
	}
}

func TestParseStrategy(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"global", true}, {"local", true}, {"", false}, {"Global", false}} {
		_, err := ParseStrategy(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseStrategy(%q) error %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
