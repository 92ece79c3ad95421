package tree

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// workload drives a tree with random requests of every kind, as a server
// would: the point is to reach odd states (sequential names, containers
// that empty, sessions that die with ephemerals, failing multis), not to
// succeed.
type workload struct {
	h        *harness
	rng      *rand.Rand
	sessions []int64
	results  []Result
}

func newWorkload(t testing.TB, seed uint64) *workload {
	return &workload{h: newHarness(t), rng: rand.New(rand.NewPCG(seed, seed^0x5eed))}
}

var workloadNames = []string{"a", "b", "c", "q-", "s", "e"}

// anyPath returns an existing node most of the time, else a path that
// may not exist.
func (w *workload) anyPath() string {
	var paths []string
	for p := range w.h.tr.nodes {
		paths = append(paths, p)
	}
	slices.Sort(paths) // map order must not leak into the random stream
	p := paths[w.rng.IntN(len(paths))]
	if w.rng.IntN(4) == 0 {
		p = zpath.Join(p, workloadNames[w.rng.IntN(len(workloadNames))])
	}
	return p
}

func (w *workload) caller() Caller {
	c := []Caller{anyone, alice, bob, root}[w.rng.IntN(4)]
	if len(w.sessions) > 0 && w.rng.IntN(3) > 0 {
		c.Session = w.sessions[w.rng.IntN(len(w.sessions))]
	}
	return c
}

func (w *workload) acl() []proto.ACL {
	switch w.rng.IntN(6) {
	case 0:
		return proto.ACLCreatorAll
	case 1:
		return acl(proto.PermAll, "digest", DigestID("bob", "pw"))
	case 2:
		return []proto.ACL{{Perms: proto.PermRead | proto.PermCreate, Id: proto.Id{Scheme: "ip", ID: "127.0.0.0/8"}}, open[0]}
	case 3:
		return nil
	}
	return open
}

func (w *workload) version(path string) int32 {
	if w.rng.IntN(3) == 0 {
		return -1
	}
	if n := w.h.tr.nodes[path]; n != nil && w.rng.IntN(3) > 0 {
		return n.version
	}
	return int32(w.rng.IntN(3))
}

func (w *workload) op() Op {
	switch w.rng.IntN(12) {
	case 0, 1, 2, 3:
		codes := []proto.OpCode{proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL}
		parent := w.anyPath()
		return Op{
			Code:  codes[w.rng.IntN(len(codes))],
			Path:  zpath.Join(parent, workloadNames[w.rng.IntN(len(workloadNames))]),
			Data:  []byte(fmt.Sprint(w.rng.IntN(1000))),
			ACL:   w.acl(),
			Flags: int32(w.rng.IntN(8)),
			TTL:   int64(w.rng.IntN(50)),
		}
	case 4, 5:
		p := w.anyPath()
		return Op{Code: proto.OpDelete, Path: p, Version: w.version(p)}
	case 6, 7:
		p := w.anyPath()
		var data []byte
		if w.rng.IntN(5) > 0 {
			data = []byte(fmt.Sprint("v", w.rng.IntN(100)))
		}
		return Op{Code: proto.OpSetData, Path: p, Data: data, Version: w.version(p)}
	case 8:
		p := w.anyPath()
		return Op{Code: proto.OpSetACL, Path: p, ACL: w.acl(), Version: int32(w.rng.IntN(2)) - 1}
	case 9:
		p := w.anyPath()
		return Op{Code: proto.OpCheck, Path: p, Version: w.version(p)}
	case 10:
		if r := w.h.tr.Reapable(w.h.now); len(r) > 0 {
			return Op{Code: proto.OpDeleteContainer, Path: r[w.rng.IntN(len(r))]}
		}
		return Op{Code: proto.OpDeleteContainer, Path: w.anyPath()}
	}
	return Op{Code: proto.OpGetData, Path: "/"} // not a write: refused
}

// step issues one random request.
func (w *workload) step() {
	h := w.h
	var txn *Txn
	zxid, now := h.tick()
	now += int64(w.rng.IntN(20))
	h.now = now
	switch k := w.rng.IntN(20); {
	case k == 0:
		id := int64(0x1000 + w.rng.IntN(6))
		txn = h.tr.PrepareCreateSession(zxid, now, id, int32(1000*(1+w.rng.IntN(30))))
		if !slices.Contains(w.sessions, id) {
			w.sessions = append(w.sessions, id)
		}
	case k == 1 && len(w.sessions) > 0:
		i := w.rng.IntN(len(w.sessions))
		txn = h.tr.PrepareCloseSession(zxid, now, w.sessions[i])
		w.sessions = slices.Delete(w.sessions, i, i+1)
	case k < 6:
		ops := make([]Op, w.rng.IntN(5))
		for i := range ops {
			ops[i] = w.op()
		}
		txn = h.tr.Prepare(w.caller(), zxid, now, ops, true)
	default:
		txn = h.tr.Prepare(w.caller(), zxid, now, []Op{w.op()}, false)
	}
	w.results = append(w.results, h.commit(txn))
}

func TestReplayIsDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			w := newWorkload(t, seed)
			for range 600 {
				w.step()
			}
			checkInvariants(t, w.h.tr)

			replayed := New()
			for i, b := range w.h.log {
				txn, err := DecodeTxn(b)
				if err != nil {
					t.Fatalf("txn %d: %v", i, err)
				}
				if got := replayed.Apply(txn); !reflect.DeepEqual(got, w.results[i]) {
					t.Fatalf("txn %d (%v): replay gave %+v, the live apply %+v", i, txn.kind, got, w.results[i])
				}
			}
			if got, want := dump(replayed), dump(w.h.tr); got != want {
				t.Fatalf("replayed tree differs:\n%s\nlive:\n%s", got, want)
			}
			if got, want := walkOutput(replayed), walkOutput(w.h.tr); got != want {
				t.Fatalf("Walk differs after replay")
			}
			checkInvariants(t, replayed)
		})
	}
}

func TestWorkloadReachesEveryOutcome(t *testing.T) {
	// Guards the workload itself: a generator that only ever failed would
	// make the replay and snapshot tests vacuous.
	seen := map[string]bool{}
	w := newWorkload(t, 99)
	for range 3000 {
		w.step()
	}
	for _, r := range w.results {
		seen[r.Err.Error()] = true
		for _, o := range r.Ops {
			if o.Err == proto.ErrOK {
				seen["applied "+o.Code.String()] = true
			}
			seen[o.Err.Error()] = true
		}
		for _, e := range r.Events {
			seen[fmt.Sprint("event ", e.Type)] = true
		}
	}
	for _, want := range []string{
		"applied create", "applied create2", "applied createContainer", "applied createTTL",
		"applied delete", "applied deleteContainer", "applied setData", "applied setACL", "applied check",
		proto.ErrNoNode.Error(), proto.ErrNodeExists.Error(), proto.ErrBadVersion.Error(), proto.ErrNotEmpty.Error(),
		proto.ErrNoAuth.Error(), proto.ErrInvalidACL.Error(), proto.ErrBadArguments.Error(),
		proto.ErrNoChildrenForEphemerals.Error(), proto.ErrRuntimeInconsistency.Error(), proto.ErrMarshallingError.Error(),
		"event 1", "event 2", "event 3", "event 4",
	} {
		if !seen[want] {
			t.Errorf("the workload never produced %q", want)
		}
	}
	if w.h.tr.EphemeralCount() == 0 && len(w.h.tr.containers) == 0 {
		t.Error("the workload ends with neither ephemerals nor containers")
	}
}

func walkOutput(tr *Tree) string {
	var out []byte
	tr.Walk(func(path string, st proto.Stat) bool {
		out = fmt.Appendf(out, "%s %+v\n", path, st)
		return true
	})
	return string(out)
}
