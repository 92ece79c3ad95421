package watch

import (
	"strings"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// Fired is one notification the server must send: a WatcherEvent of Type
// for Path, with state SyncConnected, to Session. Path is the path that
// changed, which for a PersistentRecursive watch is below the watched path.
type Fired struct {
	Session int64
	Type    proto.EventType
	Path    string
}

// Trigger reports who must be told about an event of type typ at path; the
// one-shot watches that fire are removed. A session gets at most one
// notification per Trigger call, even if several of its watches match.
// Only NodeCreated, NodeDeleted, NodeDataChanged and NodeChildrenChanged
// fire watches; other types return nil. The result is in no particular
// order and belongs to the caller.
func (m *Manager) Trigger(typ proto.EventType, path string) []Fired {
	fire, consume := triggerKinds(typ)
	if fire == 0 {
		return nil
	}
	var out []Fired
	if w := m.paths[path]; w != nil {
		out = make([]Fired, 0, len(w.sessions))
		// set may delete entries of w.sessions while we range over it,
		// which Go allows; no entry is added.
		for session, held := range w.sessions {
			if held&fire == 0 {
				continue
			}
			out = append(out, Fired{Session: session, Type: typ, Path: path})
			if held&consume != 0 {
				m.set(path, w, session, held, held&^consume)
			}
		}
	}
	if m.recursive == 0 || typ == proto.EventNodeChildrenChanged {
		return out
	}
	return m.triggerAncestors(typ, path, out)
}

// triggerAncestors appends the PersistentRecursive watches on the proper
// ancestors of path to out, skipping sessions out already tells.
func (m *Manager) triggerAncestors(typ proto.EventType, path string, out []Fired) []Fired {
	defer clear(m.seen)
	seeded := false
	for p := path; p != "/"; {
		p = parent(p)
		w := m.paths[p]
		if w == nil || w.rec == 0 {
			continue
		}
		if !seeded {
			// Filled only now: most events have no recursive watcher
			// above them and need no dedupe at all.
			for _, f := range out {
				m.seen[f.Session] = struct{}{}
			}
			seeded = true
		}
		for session, held := range w.sessions {
			if held&recursive == 0 {
				continue
			}
			if _, dup := m.seen[session]; dup {
				continue
			}
			m.seen[session] = struct{}{}
			out = append(out, Fired{Session: session, Type: typ, Path: path})
		}
	}
	return out
}

// parent returns the parent of a znode path other than the root. Anything
// without a slash past its first byte maps to the root, so the ancestor
// walk ends even on a malformed path.
func parent(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}
