package collector

import (
	"slices"
	"testing"
	"time"
)

// TestDecideRound: the assigner's decision, without a server.
func TestDecideRound(t *testing.T) {
	const ref = int64(1_000_000)
	fresh := stamp{exists: true, mtime: ref - 100}
	stale := stamp{exists: true, mtime: ref - 60_000} // a minute old: dead after 10s
	leaving := stamp{exists: true, mtime: ref - 100, leaving: true}
	node := func(name string, st stamp, leases ...Lease) collectorNode {
		n := collectorNode{name: name, stamp: st, version: 7, assign: Assignment{Sources: leases}}
		n.status.Leaving = st.leaving
		return n
	}
	r := round{ref: ref, deadAfter: 10 * time.Second, strategy: Global, by: "a1", token: 0xab, counter: 5, now: time.Unix(1, 0)}
	settled := r
	settled.settled = true
	srcs := []string{"file:///a", "file:///b", "file:///c", "file:///d"}
	held := func(p roundPlan) map[string][]Lease {
		m := map[string][]Lease{}
		for _, w := range p.writes {
			if w.version != 7 || w.doc.By != "a1" {
				t.Errorf("write %+v: want it conditional on version 7, by a1", w)
			}
			m[w.name] = w.doc.Sources
		}
		return m
	}

	t.Run("new sources go to the live collectors with new lease ids", func(t *testing.T) {
		p := decideRound(settled, srcs, []collectorNode{node("c1", fresh), node("c2", fresh), node("c3", stamp{})})
		h := held(p)
		if len(h["c1"]) != 2 || len(h["c2"]) != 2 || h["c3"] != nil || p.counter != 9 {
			t.Fatalf("writes %v, counter %d; want 2 sources each on c1 and c2, none on c3 (no status), ids 6-9", h, p.counter)
		}
		if id := h["c1"][0].ID; id != "ab-6" {
			t.Errorf("first lease id %q, want ab-6 (token-counter)", id)
		}
	})
	t.Run("a source that stays keeps its lease", func(t *testing.T) {
		c1 := node("c1", fresh, Lease{"file:///a", "old-1"}, Lease{"file:///b", "old-2"}, Lease{"file:///c", "old-3"}, Lease{"file:///d", "old-4"})
		p := decideRound(settled, srcs, []collectorNode{c1, node("c2", fresh)})
		h := held(p)
		for _, l := range h["c1"] {
			if !slices.Contains([]string{"old-1", "old-2", "old-3", "old-4"}, l.ID) {
				t.Errorf("c1 kept %s with a new lease %q", l.URI, l.ID)
			}
		}
		if len(h["c1"]) != 2 || len(h["c2"]) != 2 || p.moved != 2 {
			t.Fatalf("writes %v, moved %d; want 2 of c1's sources moved to c2", h, p.moved)
		}
	})
	t.Run("unsettled, a collector dead for its status's age keeps its sources", func(t *testing.T) {
		c1 := node("c1", stale, Lease{"file:///a", "x"})
		if p := decideRound(r, srcs[:1], []collectorNode{c1, node("c2", fresh)}); len(p.writes) != 0 {
			t.Fatalf("writes %v before the leader settled", held(p))
		}
		p := decideRound(settled, srcs[:1], []collectorNode{c1, node("c2", fresh)})
		if h := held(p); len(h["c2"]) != 1 || len(h["c1"]) != 0 || p.moved != 1 {
			t.Fatalf("settled: writes %v, moved %d; want a moved from c1 to c2", h, p.moved)
		}
	})
	t.Run("a leaving collector's sources move at once", func(t *testing.T) {
		c1 := node("c1", leaving, Lease{"file:///a", "x"})
		p := decideRound(r, srcs[:1], []collectorNode{c1, node("c2", fresh)})
		if h := held(p); len(h["c2"]) != 1 || len(h["c1"]) != 0 {
			t.Fatalf("writes %v; want a moved from the leaving c1 to c2 though unsettled", h)
		}
	})
	t.Run("nothing to change writes nothing", func(t *testing.T) {
		c1 := node("c1", fresh, Lease{"file:///a", "x"})
		if p := decideRound(settled, srcs[:1], []collectorNode{c1}); len(p.writes) != 0 || p.counter != 5 {
			t.Fatalf("writes %v, counter %d; want none", held(p), p.counter)
		}
	})
}
