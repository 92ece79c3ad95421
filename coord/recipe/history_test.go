package recipe

import (
	"fmt"
	"math/bits"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The fault tests record when each contender believed it acquired and
// released a lock, and porcupine checks that the beliefs are those of a
// real lock: there is an order of the acquisitions and releases, each
// placed inside its recorded interval, in which the lock's rules hold.
//
// A holder's belief ends when it calls Unlock, or when it sees Lost() —
// not when the server deleted its node, which it cannot see. A history
// passes only if no contender was granted the lock while another still
// believed it held it: the property that makes a lock worth having.

// lockInput is one operation of a history.
type lockInput struct {
	client  int
	acquire bool // or release
	shared  bool // a read lock, or a semaphore lease
}

// lockState is who holds the lock: bit i of writers (readers) for client i.
type lockState struct{ writers, readers uint64 }

// lockModel is the sequential specification of a lock whose shared holds
// number at most sharedMax (1 for a semaphore of one lease; 64 = no limit
// for readers) and whose exclusive holds exclude everything.
func lockModel(sharedMax int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return lockState{} },
		Step: func(state, input, _ any) (bool, any) {
			s, in := state.(lockState), input.(lockInput)
			bit := uint64(1) << in.client
			switch {
			case in.acquire && in.shared:
				if s.writers != 0 || s.readers&bit != 0 || bits.OnesCount64(s.readers) >= sharedMax {
					return false, s
				}
				s.readers |= bit
			case in.acquire:
				if s.writers != 0 || s.readers != 0 {
					return false, s
				}
				s.writers |= bit
			case in.shared:
				if s.readers&bit == 0 {
					return false, s
				}
				s.readers &^= bit
			default:
				if s.writers&bit == 0 {
					return false, s
				}
				s.writers &^= bit
			}
			return true, s
		},
		DescribeOperation: func(input, _ any) string {
			in := input.(lockInput)
			verb, kind := "release", "exclusive"
			if in.acquire {
				verb = "acquire"
			}
			if in.shared {
				kind = "shared"
			}
			return fmt.Sprintf("client %d %s %s", in.client, verb, kind)
		},
		DescribeState: func(state any) string {
			s := state.(lockState)
			return fmt.Sprintf("writers %b readers %b", s.writers, s.readers)
		},
	}
}

// history records operations with times relative to its start.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(in lockInput, call, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: in.client, Input: in, Call: call, Output: nil, Return: ret})
}

// count returns how many acquisitions each client recorded.
func (h *history) count() map[int]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := map[int]int{}
	for _, op := range h.ops {
		if op.Input.(lockInput).acquire {
			n[op.ClientId]++
		}
	}
	return n
}

// check runs porcupine on the history and, on failure, writes the
// visualisation into the test's temp dir and names it.
func (h *history) check(t testing.TB, model porcupine.Model) {
	t.Helper()
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	h.mu.Unlock()
	res, info := porcupine.CheckOperationsVerbose(model, ops, 30*time.Second)
	switch res {
	case porcupine.Ok:
		t.Logf("porcupine: %d operations linearizable", len(ops))
		return
	case porcupine.Unknown:
		t.Fatalf("porcupine: no verdict on %d operations within 30s", len(ops))
	}
	path := filepath.Join(t.TempDir(), "history.html")
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		t.Errorf("porcupine: write visualisation: %v", err)
	}
	t.Fatalf("porcupine: the history of %d operations is not that of a lock: two contenders held it at once; see %s", len(ops), path)
}

// TestLockModelCatchesOverlap checks the checker: two exclusive holds
// that overlap in time must be rejected, back-to-back ones accepted.
func TestLockModelCatchesOverlap(t *testing.T) {
	op := func(client int, acquire bool, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: lockInput{client: client, acquire: acquire}, Call: call, Return: ret}
	}
	sequential := []porcupine.Operation{op(0, true, 0, 1), op(0, false, 2, 3), op(1, true, 1, 4), op(1, false, 5, 6)}
	if !porcupine.CheckOperations(lockModel(1), sequential) {
		t.Error("a hand-off was rejected")
	}
	overlapping := []porcupine.Operation{op(0, true, 0, 1), op(1, true, 2, 3), op(0, false, 4, 5), op(1, false, 6, 7)}
	if porcupine.CheckOperations(lockModel(1), overlapping) {
		t.Error("two holders at once were accepted")
	}
	shared := func(client int, acquire bool, call, ret int64) porcupine.Operation {
		o := op(client, acquire, call, ret)
		o.Input = lockInput{client: client, acquire: acquire, shared: true}
		return o
	}
	twoOfTwo := []porcupine.Operation{shared(0, true, 0, 1), shared(1, true, 2, 3), shared(0, false, 4, 5), shared(1, false, 6, 7)}
	if !porcupine.CheckOperations(lockModel(2), twoOfTwo) {
		t.Error("two leases of two were rejected")
	}
	threeOfTwo := append(twoOfTwo[:2:2], shared(2, true, 3, 3), twoOfTwo[2], twoOfTwo[3])
	if porcupine.CheckOperations(lockModel(2), threeOfTwo) {
		t.Error("three leases of two were accepted")
	}
}
