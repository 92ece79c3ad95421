package audit

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestDiff: changed, added and removed fields by dotted path, arrays by
// index or whole, creations and deletions, structs as their JSON, exact
// numbers, and the bound on a long diff.
func TestDiff(t *testing.T) {
	type endpoint struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	}
	type spec struct {
		Name   string   `json:"name"`
		Source endpoint `json:"source"`
		Hosts  []string `json:"hosts,omitempty"`
	}
	for _, tc := range []struct {
		name          string
		before, after any
		want          []string
	}{
		{"nested field", map[string]any{"spec": map[string]any{"source": map[string]any{"host": "db1", "port": 3306}}},
			map[string]any{"spec": map[string]any{"source": map[string]any{"host": "db2", "port": 3306}}},
			[]string{"spec.source.host: db1 → db2"}},
		{"structs as their JSON", spec{Name: "orders", Source: endpoint{"db1", 3306}}, spec{Name: "orders", Source: endpoint{"db1", 3307}, Hosts: []string{"a"}},
			[]string{`hosts: added ["a"]`, "source.port: 3306 → 3307"}},
		{"added and removed keys", map[string]any{"a": 1, "gone": map[string]any{"x": true}}, map[string]any{"a": 1, "new": "v"},
			[]string{`gone: removed (was {"x":true})`, "new: added v"}},
		{"arrays of one length by index", map[string][]string{"include": {"a.*", "b.*"}}, map[string][]string{"include": {"a.*", "c.*"}},
			[]string{"include[1]: b.* → c.*"}},
		{"arrays of other lengths whole", map[string][]string{"include": {"a.*"}}, map[string][]string{"include": {"a.*", "c.*"}},
			[]string{`include: ["a.*"] → ["a.*","c.*"]`}},
		{"objects in arrays", []map[string]int{{"n": 1}, {"n": 2}}, []map[string]int{{"n": 1}, {"n": 3}},
			[]string{"[1].n: 2 → 3"}},
		{"a creation", nil, map[string]string{"runKey": "k1"}, []string{"runKey: added k1"}},
		{"a deletion", map[string]bool{"paused": true}, nil, []string{"paused: removed (was true)"}},
		{"bools", map[string]bool{"paused": false}, map[string]bool{"paused": true}, []string{"paused: false → true"}},
		{"empty strings are quoted", map[string]string{"owner": ""}, map[string]string{"owner": "core-1"}, []string{`owner: "" → core-1`}},
		{"null is a value", map[string]any{"remove": nil}, map[string]any{"remove": []string{"x"}}, []string{`remove: null → ["x"]`}},
		{"numbers exact", map[string]uint64{"pos": 1 << 62}, map[string]uint64{"pos": 1<<62 + 1},
			[]string{"pos: 4611686018427387904 → 4611686018427387905"}},
		{"scalars at the root", "a", "b", []string{"a → b"}},
		{"a type change", map[string]any{"x": map[string]any{"y": 1}}, map[string]any{"x": "flat"}, []string{`x: {"y":1} → flat`}},
		{"nothing changed", map[string]any{"a": []int{1}}, map[string]any{"a": []int{1}}, nil},
		{"nothing at all", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range Diff(tc.before, tc.after) {
				if c.Text != c.String() {
					t.Errorf("Text %q, String %q", c.Text, c.String())
				}
				got = append(got, c.Text)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Diff:\n got %q\nwant %q", got, tc.want)
			}
		})
	}

	// Ops and values are there for API clients.
	cs := Diff(map[string]string{"a": "1", "b": "2"}, map[string]string{"b": "3", "c": "4"})
	want := []Change{{Path: "a", Op: OpRemoved, Before: "1"}, {Path: "b", Op: OpChanged, Before: "2", After: "3"}, {Path: "c", Op: OpAdded, After: "4"}}
	for i := range cs {
		cs[i].Text = ""
	}
	if fmt.Sprint(cs) != fmt.Sprint(want) {
		t.Errorf("Diff = %+v, want %+v", cs, want)
	}

	// A long diff is cut, and says how much is left out.
	before, after := map[string]int{}, map[string]int{}
	for i := range MaxChanges + 50 {
		before[fmt.Sprintf("k%03d", i)] = i
		after[fmt.Sprintf("k%03d", i)] = i + 1
	}
	cs = Diff(before, after)
	if len(cs) != MaxChanges || !strings.HasPrefix(cs[MaxChanges-1].Text, "… 51 more changes") {
		t.Errorf("long diff: %d changes, last %q", len(cs), cs[len(cs)-1].Text)
	}
}
