package watch

import (
	"slices"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

const (
	created  = proto.EventNodeCreated
	deleted  = proto.EventNodeDeleted
	changed  = proto.EventNodeDataChanged
	children = proto.EventNodeChildrenChanged
)

// TestTrigger checks each trigger rule of ZooKeeper's DataTree and
// WatchManager: which kinds fire for which event at which path, which are
// consumed, and that a session is told once per event.
func TestTrigger(t *testing.T) {
	const s1, s2, s3 = 0x11, 0x22, 0x33
	tests := []struct {
		name  string
		have  []w
		typ   proto.EventType
		path  string
		fired []int64 // sessions told, each with (typ, path)
		left  []w     // registry afterwards
	}{
		// One-shot data watches (exists, getData).
		{"data fires on created", []w{{s1, "/a", Data}}, created, "/a", []int64{s1}, nil},
		{"data fires on data changed", []w{{s1, "/a", Data}}, changed, "/a", []int64{s1}, nil},
		{"data fires on deleted", []w{{s1, "/a", Data}}, deleted, "/a", []int64{s1}, nil},
		{"data ignores children changed", []w{{s1, "/a", Data}}, children, "/a", nil, []w{{s1, "/a", Data}}},
		{"data ignores child path", []w{{s1, "/a", Data}}, changed, "/a/b", nil, []w{{s1, "/a", Data}}},
		{"data ignores parent path", []w{{s1, "/a/b", Data}}, deleted, "/a", nil, []w{{s1, "/a/b", Data}}},
		{"data ignores name prefix", []w{{s1, "/a", Data}}, changed, "/ab", nil, []w{{s1, "/a", Data}}},

		// One-shot child watches (getChildren).
		{"child fires on children changed", []w{{s1, "/a", Child}}, children, "/a", []int64{s1}, nil},
		{"child fires on deleted", []w{{s1, "/a", Child}}, deleted, "/a", []int64{s1}, nil},
		{"child ignores created", []w{{s1, "/a", Child}}, created, "/a", nil, []w{{s1, "/a", Child}}},
		{"child ignores data changed", []w{{s1, "/a", Child}}, changed, "/a", nil, []w{{s1, "/a", Child}}},
		{"child ignores grandchild change", []w{{s1, "/a", Child}}, children, "/a/b", nil, []w{{s1, "/a", Child}}},

		// Persistent: every event at exactly its path, never consumed.
		{"persistent fires on created", []w{{s1, "/a", Persistent}}, created, "/a", []int64{s1}, []w{{s1, "/a", Persistent}}},
		{"persistent fires on data changed", []w{{s1, "/a", Persistent}}, changed, "/a", []int64{s1}, []w{{s1, "/a", Persistent}}},
		{"persistent fires on deleted", []w{{s1, "/a", Persistent}}, deleted, "/a", []int64{s1}, []w{{s1, "/a", Persistent}}},
		{"persistent fires on children changed", []w{{s1, "/a", Persistent}}, children, "/a", []int64{s1}, []w{{s1, "/a", Persistent}}},
		{"persistent ignores child created", []w{{s1, "/a", Persistent}}, created, "/a/b", nil, []w{{s1, "/a", Persistent}}},
		{"persistent ignores child deleted", []w{{s1, "/a", Persistent}}, deleted, "/a/b", nil, []w{{s1, "/a", Persistent}}},

		// PersistentRecursive: its path and descendants, no children changed.
		{"recursive fires on created at path", []w{{s1, "/a", PersistentRecursive}}, created, "/a", []int64{s1}, []w{{s1, "/a", PersistentRecursive}}},
		{"recursive fires on data changed at path", []w{{s1, "/a", PersistentRecursive}}, changed, "/a", []int64{s1}, []w{{s1, "/a", PersistentRecursive}}},
		{"recursive fires on deleted at path", []w{{s1, "/a", PersistentRecursive}}, deleted, "/a", []int64{s1}, []w{{s1, "/a", PersistentRecursive}}},
		{"recursive ignores children changed at path", []w{{s1, "/a", PersistentRecursive}}, children, "/a", nil, []w{{s1, "/a", PersistentRecursive}}},
		{"recursive fires on child created", []w{{s1, "/a", PersistentRecursive}}, created, "/a/b", []int64{s1}, []w{{s1, "/a", PersistentRecursive}}},
		{"recursive fires on grandchild data changed", []w{{s1, "/a", PersistentRecursive}}, changed, "/a/b/c", []int64{s1}, []w{{s1, "/a", PersistentRecursive}}},
		{"recursive fires on deep delete", []w{{s1, "/a", PersistentRecursive}}, deleted, "/a/b/c/d/e", []int64{s1}, []w{{s1, "/a", PersistentRecursive}}},
		{"recursive ignores descendant children changed", []w{{s1, "/a", PersistentRecursive}}, children, "/a/b", nil, []w{{s1, "/a", PersistentRecursive}}},
		{"recursive ignores parent", []w{{s1, "/a/b", PersistentRecursive}}, changed, "/a", nil, []w{{s1, "/a/b", PersistentRecursive}}},
		{"recursive ignores sibling with name prefix", []w{{s1, "/a", PersistentRecursive}}, created, "/ab/c", nil, []w{{s1, "/a", PersistentRecursive}}},
		{"recursive on root sees everything", []w{{s1, "/", PersistentRecursive}}, created, "/x/y", []int64{s1}, []w{{s1, "/", PersistentRecursive}}},
		{"recursive on root sees top level", []w{{s1, "/", PersistentRecursive}}, deleted, "/x", []int64{s1}, []w{{s1, "/", PersistentRecursive}}},
		{"data on root", []w{{s1, "/", Data}}, changed, "/", []int64{s1}, nil},
		{"child on root", []w{{s1, "/", Child}}, children, "/", []int64{s1}, nil},

		// One notification per session and event.
		{"data and child of one session on delete", []w{{s1, "/a", Data}, {s1, "/a", Child}}, deleted, "/a", []int64{s1}, nil},
		{"data and persistent of one session", []w{{s1, "/a", Data}, {s1, "/a", Persistent}}, changed, "/a",
			[]int64{s1}, []w{{s1, "/a", Persistent}}},
		{"child and persistent of one session", []w{{s1, "/a", Child}, {s1, "/a", Persistent}}, children, "/a",
			[]int64{s1}, []w{{s1, "/a", Persistent}}},
		{"every kind of one session on delete", []w{{s1, "/a", Data}, {s1, "/a", Child}, {s1, "/a", Persistent}, {s1, "/a", PersistentRecursive}}, deleted, "/a",
			[]int64{s1}, []w{{s1, "/a", Persistent}, {s1, "/a", PersistentRecursive}}},
		{"recursive on several ancestors of one session", []w{{s1, "/", PersistentRecursive}, {s1, "/a", PersistentRecursive}, {s1, "/a/b", PersistentRecursive}}, changed, "/a/b/c",
			[]int64{s1}, []w{{s1, "/", PersistentRecursive}, {s1, "/a", PersistentRecursive}, {s1, "/a/b", PersistentRecursive}}},
		{"data on path and recursive on ancestor of one session", []w{{s1, "/a/b", Data}, {s1, "/a", PersistentRecursive}}, changed, "/a/b",
			[]int64{s1}, []w{{s1, "/a", PersistentRecursive}}},
		{"child and recursive of one session on children changed", []w{{s1, "/a", Child}, {s1, "/a", PersistentRecursive}}, children, "/a",
			[]int64{s1}, []w{{s1, "/a", PersistentRecursive}}},

		// Several sessions.
		{"each session told once", []w{{s1, "/a", Data}, {s2, "/a", Data}, {s2, "/a", Child}, {s3, "/", PersistentRecursive}}, deleted, "/a",
			[]int64{s1, s2, s3}, []w{{s3, "/", PersistentRecursive}}},
		{"only matching sessions told", []w{{s1, "/a", Data}, {s2, "/a", Child}, {s3, "/b", Data}}, changed, "/a",
			[]int64{s1}, []w{{s2, "/a", Child}, {s3, "/b", Data}}},
		{"recursive elsewhere does not leak", []w{{s1, "/a", Data}, {s2, "/b", PersistentRecursive}}, created, "/a",
			[]int64{s1}, []w{{s2, "/b", PersistentRecursive}}},
		{"non-recursive watches on ancestor stay silent", []w{{s1, "/a", Data}, {s1, "/a", Child}, {s1, "/a", Persistent}, {s2, "/", PersistentRecursive}}, created, "/a/b",
			[]int64{s2}, []w{{s1, "/a", Data}, {s1, "/a", Child}, {s1, "/a", Persistent}, {s2, "/", PersistentRecursive}}},

		// Events that are not node events fire nothing.
		{"none event", []w{{s1, "/a", Data}, {s1, "/a", Persistent}}, proto.EventNone, "/a", nil, []w{{s1, "/a", Data}, {s1, "/a", Persistent}}},
		{"watch removed event", []w{{s1, "/a", Child}}, proto.EventChildWatchRemoved, "/a", nil, []w{{s1, "/a", Child}}},
		{"no watches", nil, deleted, "/a", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newWith(t, tt.have...)
			got := sortFired(m.Trigger(tt.typ, tt.path))
			var want []Fired
			for _, s := range tt.fired {
				want = append(want, Fired{Session: s, Type: tt.typ, Path: tt.path})
			}
			if !slices.Equal(got, want) {
				t.Errorf("Trigger(%d, %q) = %v, want %v", tt.typ, tt.path, got, want)
			}
			wantEntries(t, m, tt.left...)
			checkInvariants(t, m)
		})
	}
}

// TestTriggerOneShotFiresOnce checks that a consumed watch stays quiet and
// a persistent one keeps firing, event after event.
func TestTriggerOneShotFiresOnce(t *testing.T) {
	m := newWith(t, w{1, "/a", Data}, w{2, "/a", Persistent}, w{3, "/", PersistentRecursive})
	want := [][]int64{{1, 2, 3}, {2, 3}, {2, 3}}
	for i, sessions := range want {
		got := sortFired(m.Trigger(changed, "/a"))
		var gotSessions []int64
		for _, f := range got {
			gotSessions = append(gotSessions, f.Session)
		}
		if !slices.Equal(gotSessions, sessions) {
			t.Fatalf("event %d told sessions %v, want %v", i+1, gotSessions, sessions)
		}
	}
	checkInvariants(t, m)
}

// TestTriggerCreateSequence replays what the server calls for a create and
// a delete of /a/b: the node event, then NodeChildrenChanged on the parent.
func TestTriggerCreateSequence(t *testing.T) {
	m := newWith(t,
		w{1, "/a/b", Data},                  // exists("/a/b", watch) before it existed
		w{2, "/a", Child},                   // getChildren("/a", watch)
		w{3, "/a", Persistent},              // addWatch("/a", PERSISTENT)
		w{4, "/a", PersistentRecursive},     // addWatch("/a", PERSISTENT_RECURSIVE)
		w{5, "/a/b", Persistent},            // addWatch("/a/b", PERSISTENT)
		w{6, "/", PersistentRecursive},      // addWatch("/", PERSISTENT_RECURSIVE)
		w{6, "/a", Child},                   // and a one-shot on the parent
		w{7, "/other", PersistentRecursive}, // elsewhere
	)
	steps := []struct {
		typ  proto.EventType
		path string
		want []int64
	}{
		{created, "/a/b", []int64{1, 4, 5, 6}},
		{children, "/a", []int64{2, 3, 6}},
		{deleted, "/a/b", []int64{4, 5, 6}},
		{children, "/a", []int64{3}},
	}
	for _, st := range steps {
		var got []int64
		for _, f := range sortFired(m.Trigger(st.typ, st.path)) {
			if f.Type != st.typ || f.Path != st.path {
				t.Errorf("Trigger(%d, %q) reported %+v", st.typ, st.path, f)
			}
			got = append(got, f.Session)
		}
		if !slices.Equal(got, st.want) {
			t.Errorf("Trigger(%d, %q) told %v, want %v", st.typ, st.path, got, st.want)
		}
		checkInvariants(t, m)
	}
}

// TestTriggerDoesNotAllocateWithoutWatchers guards the common case: most
// writes touch unwatched paths and must cost a map lookup, not a walk of
// every ancestor or a fresh slice.
func TestTriggerDoesNotAllocateWithoutWatchers(t *testing.T) {
	m := New()
	for s := int64(1); s <= 100; s++ {
		m.Add(s, "/watched", Data)
	}
	if allocs := testing.AllocsPerRun(100, func() { m.Trigger(changed, "/a/b/c/d") }); allocs != 0 {
		t.Errorf("Trigger on an unwatched path allocates %v times, want 0", allocs)
	}
	m.Add(1, "/elsewhere", PersistentRecursive)
	if allocs := testing.AllocsPerRun(100, func() { m.Trigger(changed, "/a/b/c/d") }); allocs != 0 {
		t.Errorf("Trigger on a path without recursive ancestors allocates %v times, want 0", allocs)
	}
}

func TestParent(t *testing.T) {
	for path, want := range map[string]string{
		"/a": "/", "/a/b": "/a", "/a/b/c": "/a/b", "/": "/", "": "/", "a": "/",
	} {
		if got := parent(path); got != want {
			t.Errorf("parent(%q) = %q, want %q", path, got, want)
		}
	}
}
