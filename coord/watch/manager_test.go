package watch

import (
	"maps"
	"slices"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

const (
	wChildren = proto.WatcherChildren
	wData     = proto.WatcherData
	wAny      = proto.WatcherAny
)

// TestRemoveAndHas checks removeWatches and checkWatches for each watcher
// type, including every NoWatcher case, against the same registry.
func TestRemoveAndHas(t *testing.T) {
	const me, other = 1, 2
	tests := []struct {
		name  string
		have  []w
		path  string
		typ   int32
		found bool // Remove reports this; Has too, and also a persistent watch for a data or child check
		left  []w  // registry after Remove
	}{
		{"data removes data", []w{{me, "/a", Data}}, "/a", wData, true, nil},
		{"data keeps child", []w{{me, "/a", Data}, {me, "/a", Child}}, "/a", wData, true, []w{{me, "/a", Child}}},
		{"children removes child", []w{{me, "/a", Child}}, "/a", wChildren, true, nil},
		{"children keeps data", []w{{me, "/a", Data}, {me, "/a", Child}}, "/a", wChildren, true, []w{{me, "/a", Data}}},
		{"any removes data and child", []w{{me, "/a", Data}, {me, "/a", Child}}, "/a", wAny, true, nil},
		{"any removes data alone", []w{{me, "/a", Data}}, "/a", wAny, true, nil},
		{"any removes child alone", []w{{me, "/a", Child}}, "/a", wAny, true, nil},
		{"any removes persistent", []w{{me, "/a", Persistent}}, "/a", wAny, true, nil},
		{"any removes recursive", []w{{me, "/a", PersistentRecursive}}, "/a", wAny, true, nil},
		{"any removes every kind", []w{{me, "/a", Data}, {me, "/a", Child}, {me, "/a", Persistent}, {me, "/a", PersistentRecursive}}, "/a", wAny, true, nil},
		{"data keeps persistent", []w{{me, "/a", Data}, {me, "/a", Persistent}}, "/a", wData, true, []w{{me, "/a", Persistent}}},
		{"children keeps recursive", []w{{me, "/a", Child}, {me, "/a", PersistentRecursive}}, "/a", wChildren, true, []w{{me, "/a", PersistentRecursive}}},

		// NoWatcher: nothing matching for this session, path and type.
		{"no watches at all", nil, "/a", wAny, false, nil},
		{"data when only child", []w{{me, "/a", Child}}, "/a", wData, false, []w{{me, "/a", Child}}},
		{"children when only data", []w{{me, "/a", Data}}, "/a", wChildren, false, []w{{me, "/a", Data}}},
		{"data does not cover persistent", []w{{me, "/a", Persistent}}, "/a", wData, false, []w{{me, "/a", Persistent}}},
		{"children does not cover persistent", []w{{me, "/a", Persistent}}, "/a", wChildren, false, []w{{me, "/a", Persistent}}},
		{"data does not cover recursive", []w{{me, "/a", PersistentRecursive}}, "/a", wData, false, []w{{me, "/a", PersistentRecursive}}},
		{"other session's watch", []w{{other, "/a", Data}, {other, "/a", Child}}, "/a", wAny, false, []w{{other, "/a", Data}, {other, "/a", Child}}},
		{"other session's data watch", []w{{other, "/a", Data}, {me, "/a", Child}}, "/a", wData, false, []w{{other, "/a", Data}, {me, "/a", Child}}},
		{"other path", []w{{me, "/b", Data}}, "/a", wAny, false, []w{{me, "/b", Data}}},
		{"recursive on ancestor is not on path", []w{{me, "/", PersistentRecursive}}, "/a", wAny, false, []w{{me, "/", PersistentRecursive}}},
		{"child path", []w{{me, "/a/b", Data}}, "/a", wAny, false, []w{{me, "/a/b", Data}}},

		// Types ZooKeeper 3.8 does not know.
		{"type 0", []w{{me, "/a", Data}}, "/a", 0, false, []w{{me, "/a", Data}}},
		{"type 4 (3.9 Persistent)", []w{{me, "/a", Persistent}}, "/a", 4, false, []w{{me, "/a", Persistent}}},
		{"type 5 (3.9 PersistentRecursive)", []w{{me, "/a", PersistentRecursive}}, "/a", 5, false, []w{{me, "/a", PersistentRecursive}}},
		{"type -1", []w{{me, "/a", Child}}, "/a", -1, false, []w{{me, "/a", Child}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newWith(t, tt.have...)
			wantHas := tt.found || (ValidWatcherType(tt.typ) && holdsPersistent(tt.have, me, tt.path))
			if got := m.Has(me, tt.path, tt.typ); got != wantHas {
				t.Errorf("Has(%d, %q, %d) = %v, want %v", me, tt.path, tt.typ, got, wantHas)
			}
			wantEntries(t, m, tt.have...) // Has changes nothing
			if got := m.Remove(me, tt.path, tt.typ); got != tt.found {
				t.Errorf("Remove(%d, %q, %d) = %v, want %v", me, tt.path, tt.typ, got, tt.found)
			}
			wantEntries(t, m, tt.left...)
			checkInvariants(t, m)
			if tt.found {
				if m.Remove(me, tt.path, tt.typ) {
					t.Errorf("second Remove(%d, %q, %d) = true, want false", me, tt.path, tt.typ)
				}
				if got, want := m.Has(me, tt.path, tt.typ), holdsPersistent(tt.left, me, tt.path); got != want {
					t.Errorf("Has(%d, %q, %d) = %v after Remove, want %v", me, tt.path, tt.typ, got, want)
				}
			}
		})
	}
}

// holdsPersistent reports whether ws has a persistent or recursive watch of
// session on exactly path: checkWatches counts those for any watcher type.
func holdsPersistent(ws []w, session int64, path string) bool {
	for _, x := range ws {
		if x.Session == session && x.Path == path && (x.Kind == Persistent || x.Kind == PersistentRecursive) {
			return true
		}
	}
	return false
}

func TestValidWatcherType(t *testing.T) {
	for typ := int32(-2); typ <= 6; typ++ {
		want := typ == wChildren || typ == wData || typ == wAny
		if got := ValidWatcherType(typ); got != want {
			t.Errorf("ValidWatcherType(%d) = %v, want %v", typ, got, want)
		}
	}
}

// TestRemovedWatchDoesNotFire checks that removeWatches really stops
// notifications, not only the bookkeeping.
func TestRemovedWatchDoesNotFire(t *testing.T) {
	m := newWith(t, w{1, "/a", Data}, w{1, "/a", Child}, w{1, "/", PersistentRecursive})
	m.Remove(1, "/a", wData)
	m.Remove(1, "/", wAny)
	if got := m.Trigger(changed, "/a"); len(got) != 0 {
		t.Errorf("data change told %v after its watches were removed", got)
	}
	if got := m.Trigger(children, "/a"); len(got) != 1 {
		t.Errorf("children change told %v, want the remaining child watch", got)
	}
	checkInvariants(t, m)
}

func TestAdd(t *testing.T) {
	t.Run("idempotent", func(t *testing.T) {
		m := New()
		for range 3 {
			m.Add(1, "/a", Data)
			m.Add(1, "/a", Persistent)
		}
		wantEntries(t, m, w{1, "/a", Data}, w{1, "/a", Persistent})
		// One data-table entry (data and persistent share it, as in
		// ZooKeeper's per-path WatchStats) and one child-table entry.
		if got := m.Count(); got != 2 {
			t.Errorf("Count() = %d, want 2", got)
		}
		checkInvariants(t, m)
	})
	t.Run("kinds coexist", func(t *testing.T) {
		// ZooKeeper 3.8 would demote the persistent watch here
		// (ZOOKEEPER-4466); we keep both, as 3.9 does.
		m := newWith(t, w{1, "/a", Persistent}, w{1, "/a", Data})
		m.Trigger(changed, "/a")
		m.Add(1, "/a", Data)
		m.Trigger(changed, "/a")
		if got := m.Trigger(changed, "/a"); len(got) != 1 {
			t.Errorf("persistent watch told %v after data watches came and went, want one notification", got)
		}
		wantEntries(t, m, w{1, "/a", Persistent})
	})
	t.Run("invalid kind panics", func(t *testing.T) {
		for _, k := range []Kind{0, PersistentRecursive + 1} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("Add with %v did not panic", k)
					}
				}()
				New().Add(1, "/a", k)
			}()
		}
	})
}

func TestRemoveSession(t *testing.T) {
	m := newWith(t,
		w{1, "/a", Data}, w{1, "/a", Child}, w{1, "/b", Persistent}, w{1, "/", PersistentRecursive},
		w{2, "/a", Data}, w{2, "/b", Persistent}, w{2, "/c", Child},
	)
	m.RemoveSession(1)
	wantEntries(t, m, w{2, "/a", Data}, w{2, "/b", Persistent}, w{2, "/c", Child})
	checkInvariants(t, m)
	m.RemoveSession(1) // already gone
	m.RemoveSession(3) // never seen
	wantEntries(t, m, w{2, "/a", Data}, w{2, "/b", Persistent}, w{2, "/c", Child})
	if got := sortFired(m.Trigger(created, "/a/x")); len(got) != 0 {
		t.Errorf("removed session's recursive watch still fires: %v", got)
	}
	m.RemoveSession(2)
	wantEntries(t, m)
	checkInvariants(t, m)
	if m.Count() != 0 || m.Paths() != 0 || len(m.BySession()) != 0 || len(m.ByPath()) != 0 || len(m.paths) != 0 || len(m.sessions) != 0 {
		t.Errorf("registry not empty after removing every session: count %d, paths %d, %d path entries, %d session entries",
			m.Count(), m.Paths(), len(m.paths), len(m.sessions))
	}
}

// TestReports checks Count (mntr zk_watch_count) and the data-table views
// behind wchs, wchc and wchp against what ZooKeeper 3.8 prints.
func TestReports(t *testing.T) {
	tests := []struct {
		name      string
		have      []w
		count     int
		paths     int
		bySession map[int64][]string
		byPath    map[string][]int64
	}{
		{"empty", nil, 0, 0, map[int64][]string{}, map[string][]int64{}},
		// Measured on ZooKeeper 3.8.0: exists(/w) by A, getChildren(/w) by A
		// and B gives zk_watch_count 3, wchs "1 connections watching 1
		// paths, Total watches:1", wchc and wchp list A on /w only.
		{"child watches invisible to four-letter words",
			[]w{{0xa, "/w", Data}, {0xa, "/w", Child}, {0xb, "/w", Child}},
			3, 1, map[int64][]string{0xa: {"/w"}}, map[string][]int64{"/w": {0xa}}},
		{"persistent counts in both tables",
			[]w{{1, "/p", Persistent}},
			2, 1, map[int64][]string{1: {"/p"}}, map[string][]int64{"/p": {1}}},
		{"recursive counts once",
			[]w{{1, "/r", PersistentRecursive}},
			1, 1, map[int64][]string{1: {"/r"}}, map[string][]int64{"/r": {1}}},
		{"one data-table entry per session and path",
			[]w{{1, "/p", Data}, {1, "/p", Persistent}, {1, "/p", PersistentRecursive}},
			2, 1, map[int64][]string{1: {"/p"}}, map[string][]int64{"/p": {1}}},
		{"sorted views",
			[]w{{3, "/b", Data}, {1, "/b", Data}, {2, "/a", Persistent}, {1, "/a", Data}, {2, "/c", Child}},
			6, 2, map[int64][]string{1: {"/a", "/b"}, 2: {"/a"}, 3: {"/b"}}, map[string][]int64{"/a": {1, 2}, "/b": {1, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newWith(t, tt.have...)
			if got := m.Count(); got != tt.count {
				t.Errorf("Count() = %d, want %d", got, tt.count)
			}
			if got := m.Paths(); got != tt.paths {
				t.Errorf("Paths() = %d, want %d", got, tt.paths)
			}
			if got := m.BySession(); !maps.EqualFunc(got, tt.bySession, slices.Equal) {
				t.Errorf("BySession() = %v, want %v", got, tt.bySession)
			}
			if got := m.ByPath(); !maps.EqualFunc(got, tt.byPath, slices.Equal) {
				t.Errorf("ByPath() = %v, want %v", got, tt.byPath)
			}
		})
	}
}

// TestReportsAreCopies checks that callers may keep and change the maps
// they get without touching the registry.
func TestReportsAreCopies(t *testing.T) {
	m := newWith(t, w{1, "/a", Data}, w{1, "/b", Data})
	bs := m.BySession()
	bs[1][0] = "/changed"
	delete(bs, 1)
	bp := m.ByPath()
	bp["/a"][0] = 99
	if got := m.BySession(); !slices.Equal(got[1], []string{"/a", "/b"}) {
		t.Errorf("BySession() = %v after a caller changed an earlier result", got)
	}
	if got := m.ByPath(); !slices.Equal(got["/a"], []int64{1}) {
		t.Errorf("ByPath() = %v after a caller changed an earlier result", got)
	}
}
