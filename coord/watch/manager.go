package watch

import "fmt"

// Manager is the watch registry. The zero value is not usable; call New.
// A Manager is not safe for concurrent use.
type Manager struct {
	// paths indexes watches by path, for Trigger.
	paths map[string]*watchers
	// sessions indexes the same watches by session, so that RemoveSession
	// costs O(the session's watches).
	sessions map[int64]map[string]struct{}

	// Sizes of ZooKeeper's two tables and of the data table's path set,
	// kept up to date by set so the reports need no scan.
	dataWatches, childWatches, dataPaths int
	// recursive counts PersistentRecursive watches. While it is zero,
	// Trigger looks at the event's own path only.
	recursive int

	// seen is Trigger's scratch set for per-session dedupe, kept to save
	// an allocation per event once recursive watches exist.
	seen map[int64]struct{}
}

// watchers is everything registered on one path.
type watchers struct {
	sessions map[int64]kinds
	data     int // sessions whose kinds put them in the data table
	rec      int // sessions holding PersistentRecursive here
}

// New returns an empty registry.
func New() *Manager {
	return &Manager{
		paths:    make(map[string]*watchers),
		sessions: make(map[int64]map[string]struct{}),
		seen:     make(map[int64]struct{}),
	}
}

// Add registers a watch of kind k by session on path. Adding a watch the
// session already holds changes nothing; kinds on the same path are
// independent of each other. It panics if k is not one of the Kind
// constants, which is a bug in the caller.
func (m *Manager) Add(session int64, path string, k Kind) {
	if !k.valid() {
		panic(fmt.Sprintf("watch: Add %q for session %#x with invalid %v", path, session, k))
	}
	w := m.paths[path]
	if w == nil {
		w = &watchers{sessions: make(map[int64]kinds, 1)}
		m.paths[path] = w
	}
	old := w.sessions[session]
	m.set(path, w, session, old, old|k.set())
}

// Remove serves removeWatches: it drops session's watches on path that
// watcherType (proto.WatcherChildren, WatcherData or WatcherAny) covers.
// WatcherChildren and WatcherData cover one-shot watches only; WatcherAny
// covers every kind. It reports whether anything was removed; the server
// answers NoWatcher when it was not. An unknown watcherType removes nothing
// (see ValidWatcherType).
func (m *Manager) Remove(session int64, path string, watcherType int32) bool {
	w := m.paths[path]
	if w == nil {
		return false
	}
	old := w.sessions[session]
	drop := old & watcherKinds(watcherType)
	if drop == 0 {
		return false
	}
	m.set(path, w, session, old, old&^drop)
	return true
}

// Has serves checkWatches: it reports whether session holds a watch on path
// that watcherType covers. Unlike Remove, a persistent (or recursive) watch
// counts for WatcherData and WatcherChildren too, because it delivers both
// kinds of event; ZooKeeper 3.8 answers checkWatches that way.
func (m *Manager) Has(session int64, path string, watcherType int32) bool {
	w := m.paths[path]
	if w == nil {
		return false
	}
	cover := watcherKinds(watcherType)
	if cover != 0 {
		cover |= Persistent.set() | PersistentRecursive.set()
	}
	return w.sessions[session]&cover != 0
}

// RemoveSession drops every watch of session, when it closes or expires.
func (m *Manager) RemoveSession(session int64) {
	for path := range m.sessions[session] {
		w := m.paths[path]
		m.set(path, w, session, w.sessions[session], 0)
	}
}

// set changes the kinds session holds on path from one set to another and
// keeps every index and counter in step. All changes go through here.
func (m *Manager) set(path string, w *watchers, session int64, from, to kinds) {
	if from == to {
		return
	}
	if d := delta(from, to, dataTable); d != 0 {
		w.data += d
		m.dataWatches += d
		if (d > 0 && w.data == 1) || (d < 0 && w.data == 0) {
			m.dataPaths += d // the path entered or left the data table
		}
	}
	m.childWatches += delta(from, to, childTable)
	if d := delta(from, to, recursive); d != 0 {
		w.rec += d
		m.recursive += d
	}

	switch {
	case to == 0:
		delete(w.sessions, session)
		if len(w.sessions) == 0 {
			delete(m.paths, path)
		}
		paths := m.sessions[session]
		delete(paths, path)
		if len(paths) == 0 {
			delete(m.sessions, session)
		}
	case from == 0:
		w.sessions[session] = to
		paths := m.sessions[session]
		if paths == nil {
			paths = make(map[string]struct{})
			m.sessions[session] = paths
		}
		paths[path] = struct{}{}
	default:
		w.sessions[session] = to
	}
}

// delta is +1 when a watch enters the group of kinds (a table, say), -1
// when it leaves it and 0 otherwise.
func delta(from, to, group kinds) int {
	in, was := to&group != 0, from&group != 0
	switch {
	case in && !was:
		return 1
	case was && !in:
		return -1
	}
	return 0
}
