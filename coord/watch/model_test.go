package watch

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// model is the obvious, slow registry: a set of watches and the trigger
// rules written out one by one, straight from the package documentation.
type model map[w]bool

func (md model) trigger(typ proto.EventType, path string) []Fired {
	told := map[int64]bool{}
	for x := range md {
		fires := false
		switch x.Kind {
		case Data:
			fires = x.Path == path && (typ == created || typ == changed || typ == deleted)
		case Child:
			fires = x.Path == path && (typ == children || typ == deleted)
		case Persistent:
			fires = x.Path == path && typ >= created && typ <= children
		case PersistentRecursive:
			under := x.Path == path || x.Path == "/" || strings.HasPrefix(path, x.Path+"/")
			fires = under && (typ == created || typ == changed || typ == deleted)
		}
		if !fires {
			continue
		}
		told[x.Session] = true
		if x.Kind == Data || x.Kind == Child {
			delete(md, x)
		}
	}
	var out []Fired
	for s := range told {
		out = append(out, Fired{Session: s, Type: typ, Path: path})
	}
	return sortFired(out)
}

func (md model) remove(session int64, path string, typ int32) bool {
	var ks []Kind
	switch typ {
	case wData:
		ks = []Kind{Data}
	case wChildren:
		ks = []Kind{Child}
	case wAny:
		ks = []Kind{Data, Child, Persistent, PersistentRecursive}
	}
	removed := false
	for _, k := range ks {
		if md[w{session, path, k}] {
			delete(md, w{session, path, k})
			removed = true
		}
	}
	return removed
}

func (md model) count() int {
	data, child := map[w]bool{}, map[w]bool{}
	for x := range md {
		key := w{x.Session, x.Path, 0}
		if x.Kind != Child {
			data[key] = true
		}
		if x.Kind == Child || x.Kind == Persistent {
			child[key] = true
		}
	}
	return len(data) + len(child)
}

func (md model) bySession() map[int64][]string {
	out := map[int64][]string{}
	for x := range md {
		if x.Kind != Child && !slices.Contains(out[x.Session], x.Path) {
			out[x.Session] = append(out[x.Session], x.Path)
		}
	}
	for _, paths := range out {
		slices.Sort(paths)
	}
	return out
}

func (md model) byPath() map[string][]int64 {
	out := map[string][]int64{}
	for x := range md {
		if x.Kind != Child && !slices.Contains(out[x.Path], x.Session) {
			out[x.Path] = append(out[x.Path], x.Session)
		}
	}
	for _, sessions := range out {
		slices.Sort(sessions)
	}
	return out
}

// TestAgainstModel runs long random sequences of operations on a Manager
// and on the model and fails at the first disagreement, with the
// operations that led there.
func TestAgainstModel(t *testing.T) {
	paths := []string{"/", "/a", "/a/b", "/a/b/c", "/ab", "/ab/c", "/x", "/x/y/z"}
	events := []proto.EventType{created, changed, deleted, children}
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		m, md := New(), model{}
		var log []string
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d after %d ops (last: %s): "+format, append([]any{seed, len(log), strings.Join(log[max(0, len(log)-8):], "; ")}, args...)...)
		}
		for range 1500 {
			session := rng.Int64N(5) + 1
			path := paths[rng.IntN(len(paths))]
			switch op := rng.IntN(100); {
			case op < 45:
				k := Kind(rng.IntN(4) + 1)
				log = append(log, "add "+w{session, path, k}.String())
				m.Add(session, path, k)
				md[w{session, path, k}] = true
			case op < 75:
				typ := events[rng.IntN(len(events))]
				log = append(log, "trigger "+path)
				got, want := sortFired(m.Trigger(typ, path)), md.trigger(typ, path)
				if !slices.Equal(got, want) {
					fail("Trigger(%d, %q) = %v, model says %v", typ, path, got, want)
				}
			case op < 88:
				typ := int32(rng.IntN(5)) // includes invalid 0 and 4
				log = append(log, "remove "+path)
				if got, want := m.Remove(session, path, typ), md.remove(session, path, typ); got != want {
					fail("Remove(%d, %q, %d) = %v, model says %v", session, path, typ, got, want)
				}
			case op < 96:
				typ := int32(rng.IntN(5))
				wantHas := md.clone().remove(session, path, typ) ||
					(ValidWatcherType(typ) && (md[w{session, path, Persistent}] || md[w{session, path, PersistentRecursive}]))
				if got := m.Has(session, path, typ); got != wantHas {
					fail("Has(%d, %q, %d) = %v, model says %v", session, path, typ, got, wantHas)
				}
			default:
				log = append(log, "remove session")
				m.RemoveSession(session)
				for x := range md {
					if x.Session == session {
						delete(md, x)
					}
				}
			}
			if got, want := entries(m), md.sorted(); !slices.Equal(got, want) {
				fail("registry holds %v, model %v", got, want)
			}
			if got, want := m.Count(), md.count(); got != want {
				fail("Count() = %d, model says %d", got, want)
			}
			if got, want := m.Paths(), len(md.byPath()); got != want {
				fail("Paths() = %d, model says %d", got, want)
			}
			if got, want := m.BySession(), md.bySession(); !maps.EqualFunc(got, want, slices.Equal) {
				fail("BySession() = %v, model says %v", got, want)
			}
			if got, want := m.ByPath(), md.byPath(); !maps.EqualFunc(got, want, slices.Equal) {
				fail("ByPath() = %v, model says %v", got, want)
			}
			checkInvariants(t, m)
			if t.Failed() {
				fail("invariants broken")
			}
		}
	}
}

func (md model) clone() model { return maps.Clone(md) }

func (md model) sorted() []w {
	out := slices.Collect(maps.Keys(md))
	slices.SortFunc(out, cmpW)
	return out
}
