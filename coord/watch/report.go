package watch

import "slices"

// Count returns the number of watches, as mntr's zk_watch_count: the sizes
// of ZooKeeper's data and child tables added up. A Persistent watch sits in
// both tables and counts twice; a Data and a Child watch of one session on
// one path count once each.
func (m *Manager) Count() int { return m.dataWatches + m.childWatches }

// Paths returns the number of paths with a data-table watch (Data,
// Persistent or PersistentRecursive), the "watching N paths" of wchs.
// ZooKeeper's wchs, wchc and wchp report the data table only; a path with
// only Child watches is not counted.
func (m *Manager) Paths() int { return m.dataPaths }

// BySession returns, for wchc, each session's watched paths, sorted, over
// the data table only (see Paths). With it wchs needs nothing else: its
// connection count is len(BySession()) and its "Total watches" the sum of
// the slice lengths. The result is a fresh copy.
func (m *Manager) BySession() map[int64][]string {
	out := make(map[int64][]string)
	for session, paths := range m.sessions {
		for path := range paths {
			if m.paths[path].sessions[session]&dataTable != 0 {
				out[session] = append(out[session], path)
			}
		}
		slices.Sort(out[session])
	}
	return out
}

// ByPath returns, for wchp, the sessions watching each path, sorted, over
// the data table only (see Paths). The result is a fresh copy.
func (m *Manager) ByPath() map[string][]int64 {
	out := make(map[string][]int64, m.dataPaths)
	for path, w := range m.paths {
		if w.data == 0 {
			continue
		}
		sessions := make([]int64, 0, w.data)
		for session, held := range w.sessions {
			if held&dataTable != 0 {
				sessions = append(sessions, session)
			}
		}
		slices.Sort(sessions)
		out[path] = sessions
	}
	return out
}
