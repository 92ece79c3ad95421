package watch

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
)

// w is one registered watch, for building and comparing registry contents.
type w struct {
	Session int64
	Path    string
	Kind    Kind
}

func (x w) String() string { return fmt.Sprintf("%#x %s %v", x.Session, x.Path, x.Kind) }

func cmpW(a, b w) int {
	return cmp.Or(cmp.Compare(a.Session, b.Session), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Kind, b.Kind))
}

// newWith returns a Manager holding exactly ws.
func newWith(t *testing.T, ws ...w) *Manager {
	t.Helper()
	m := New()
	for _, x := range ws {
		m.Add(x.Session, x.Path, x.Kind)
	}
	checkInvariants(t, m)
	return m
}

// entries lists every watch in m, sorted.
func entries(m *Manager) []w {
	var out []w
	for path, ws := range m.paths {
		for session, held := range ws.sessions {
			for k := Data; k <= PersistentRecursive; k++ {
				if held.has(k) {
					out = append(out, w{session, path, k})
				}
			}
		}
	}
	slices.SortFunc(out, cmpW)
	return out
}

// wantEntries fails the test unless m holds exactly want.
func wantEntries(t *testing.T, m *Manager, want ...w) {
	t.Helper()
	want = slices.Clone(want)
	slices.SortFunc(want, cmpW)
	if got := entries(m); !slices.Equal(got, want) {
		t.Errorf("registry holds %v, want %v", got, want)
	}
}

// sortFired orders a Trigger result for comparison.
func sortFired(f []Fired) []Fired {
	f = slices.Clone(f)
	slices.SortFunc(f, func(a, b Fired) int {
		return cmp.Or(cmp.Compare(a.Session, b.Session), cmp.Compare(a.Type, b.Type), cmp.Compare(a.Path, b.Path))
	})
	return f
}

// checkInvariants recomputes every index and counter of m from its path
// table and fails the test where the incremental bookkeeping disagrees.
func checkInvariants(t *testing.T, m *Manager) {
	t.Helper()
	var data, child, dataPaths, rec, pairs, bySession int
	for path, ws := range m.paths {
		if len(ws.sessions) == 0 {
			t.Errorf("path %q kept with no watchers", path)
		}
		var pathData, pathRec int
		pairs += len(ws.sessions)
		for session, held := range ws.sessions {
			if held == 0 || held&^allKinds != 0 {
				t.Errorf("path %q session %#x holds invalid kind set %#b", path, session, held)
			}
			if held&dataTable != 0 {
				pathData++
			}
			if held&childTable != 0 {
				child++
			}
			if held&recursive != 0 {
				pathRec++
			}
			if _, ok := m.sessions[session][path]; !ok {
				t.Errorf("session index lacks %#x on %q", session, path)
			}
		}
		if ws.data != pathData || ws.rec != pathRec {
			t.Errorf("path %q counts data=%d rec=%d, want %d %d", path, ws.data, ws.rec, pathData, pathRec)
		}
		data += pathData
		rec += pathRec
		if pathData > 0 {
			dataPaths++
		}
	}
	for session, paths := range m.sessions {
		if len(paths) == 0 {
			t.Errorf("session %#x kept with no paths", session)
		}
		for path := range paths {
			if ws := m.paths[path]; ws == nil || ws.sessions[session] == 0 {
				t.Errorf("session index has %#x on %q, path table does not", session, path)
			}
		}
		bySession += len(paths)
	}
	if bySession != pairs {
		t.Errorf("session index holds %d (session, path) pairs, path table %d", bySession, pairs)
	}
	if got := m.dataWatches; got != data {
		t.Errorf("dataWatches = %d, want %d", got, data)
	}
	if got := m.childWatches; got != child {
		t.Errorf("childWatches = %d, want %d", got, child)
	}
	if got := m.dataPaths; got != dataPaths {
		t.Errorf("dataPaths = %d, want %d", got, dataPaths)
	}
	if got := m.recursive; got != rec {
		t.Errorf("recursive = %d, want %d", got, rec)
	}
	if len(m.seen) != 0 {
		t.Errorf("Trigger left %d sessions in its scratch set", len(m.seen))
	}
}
