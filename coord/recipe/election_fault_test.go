package recipe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// TestElectionFaultHistory runs the lock fault plan (see runLockFaults)
// on elections: a candidate believes it leads from the return of Campaign
// until it resigns or sees Lost, and porcupine checks that no two beliefs
// overlap — across connection cuts and partitions that expire the
// leader's session, which must learn of its loss before anyone else is
// elected.
func TestElectionFaultHistory(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		p := testPath(t)
		runLockFaults(t, tg, lockModel(1), func(s *Session, client int, _ *rand.Rand) acquirer {
			e := NewElection(s, p, fmt.Sprint("candidate-", client))
			return func(ctx context.Context) (held, error) {
				if err := e.Campaign(ctx); err != nil {
					return held{}, err
				}
				return held{lost: e.Lost(), release: e.Resign}, nil
			}
		})
	})
}

// The fencing history: terms won (elect, with the term's token) and
// writes made through the fence (a Multi checking the leader's node) with
// a term's token.
type fenceInput struct {
	client int
	elect  bool
	token  int64
}

type fenceOutcome int

const (
	fenceOK       fenceOutcome = iota
	fenceRejected              // the server refused: the term had ended
	fenceUnknown               // the connection failed: either
)

// fenceModel is the sequential specification of fenced leadership: the
// state is the token of the current term; every term's token is larger
// than the last; a fenced write succeeds only with the current token. A
// rejected or unknown write says nothing.
func fenceModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return int64(0) },
		Step: func(state, input, output any) (bool, any) {
			cur, in := state.(int64), input.(fenceInput)
			if in.elect {
				return in.token > cur, in.token
			}
			if output.(fenceOutcome) == fenceOK {
				return in.token == cur, cur
			}
			return true, cur
		},
		DescribeOperation: func(input, output any) string {
			in := input.(fenceInput)
			if in.elect {
				return fmt.Sprintf("client %d elected, token %d", in.client, in.token)
			}
			return fmt.Sprintf("client %d writes with token %d: %v", in.client, in.token, []string{"ok", "rejected", "unknown"}[output.(fenceOutcome)])
		},
	}
}

func TestFenceModelCatchesStaleWrite(t *testing.T) {
	op := func(client int, elect bool, token int64, out fenceOutcome, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: fenceInput{client, elect, token}, Output: out, Call: call, Return: ret}
	}
	good := []porcupine.Operation{
		op(0, true, 10, fenceOK, 0, 1), op(0, false, 10, fenceOK, 2, 3),
		op(1, true, 20, fenceOK, 1, 5), op(0, false, 10, fenceRejected, 6, 7), op(1, false, 20, fenceOK, 6, 8),
	}
	if !porcupine.CheckOperations(fenceModel(), good) {
		t.Error("a clean hand-off was rejected")
	}
	stale := append(good[:len(good):len(good)], op(0, false, 10, fenceOK, 9, 10))
	if porcupine.CheckOperations(fenceModel(), stale) {
		t.Error("a successful write of a deposed leader after its successor was elected was accepted")
	}
	backwards := []porcupine.Operation{op(0, true, 20, fenceOK, 0, 1), op(1, true, 10, fenceOK, 2, 3)}
	if porcupine.CheckOperations(fenceModel(), backwards) {
		t.Error("a token smaller than its predecessor's was accepted")
	}
}

// fenceHistory records fencing operations, and each term's belief: from
// Campaign's return to the last time the candidate said it led.
type fenceHistory struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	terms []belief
}

type belief struct {
	client     int
	start, end time.Duration
}

func (h *fenceHistory) now() int64 { return int64(time.Since(h.start)) }

func (h *fenceHistory) add(in fenceInput, out fenceOutcome, call, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: in.client, Input: in, Output: out, Call: call, Return: ret})
}

func (h *fenceHistory) count(pred func(in fenceInput, out fenceOutcome) bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, op := range h.ops {
		if pred(op.Input.(fenceInput), op.Output.(fenceOutcome)) {
			n++
		}
	}
	return n
}

// maxOverlap returns the longest time two candidates both said they led;
// negative, the shortest time between one's belief and another's.
func (h *fenceHistory) maxOverlap() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	worst := time.Duration(math.MinInt64)
	for i, a := range h.terms {
		for _, b := range h.terms[i+1:] {
			if a.client != b.client {
				worst = max(worst, min(a.end, b.end)-max(a.start, b.start))
			}
		}
	}
	return worst
}

// fencedWrite writes token into resource if node — the leader's — still
// exists, and classifies the outcome.
func fencedWrite(ctx context.Context, s *Session, node, resource string, token int64) fenceOutcome {
	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := s.Multi(ctx,
		&zk.CheckVersionRequest{Path: node, Version: 0},
		&zk.SetDataRequest{Path: resource, Data: []byte(strconv.FormatInt(token, 10)), Version: -1})
	switch {
	case err == nil:
		return fenceOK
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrBadVersion):
		return fenceRejected
	}
	return fenceUnknown
}

// TestElectionFencing checks what a leader may rely on when its session
// is expired or partitioned away, or its node deleted: three candidates
// campaign in a loop and, while they hold a term, write a shared node
// through the fence (a Multi checking their node). Every fault is aimed
// at the current leader. After each term a candidate plays a paused
// leader waking up: it writes with its old token once more.
//
// Checked: porcupine finds every successful fenced write inside its
// token's term, terms' tokens increasing (the server-side guarantee, true
// even for a leader that does not know it was deposed); the zombie writes
// are refused; and two candidates' beliefs (IsLeader) overlap by less
// than the session timeout — by nothing when the leader is partitioned,
// since its Session declares the session lost before the server can
// expire it, and by the time the old leader takes to read the server's
// closing of its connection when its session is expired by force.
func TestElectionFencing(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		const n = 3
		p := testPath(t)
		resource := p + "-resource"
		admin := dial(t, tg.Addr, Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		if _, err := admin.Create(ctx, resource, nil, zk.FlagPersistent, nil); err != nil {
			if err := admin.EnsurePath(ctx, resource); err != nil {
				t.Fatal(err)
			}
		}
		h := &fenceHistory{start: time.Now()}
		proxies := make([]*faultProxy, n)
		sessions := make([]*Session, n)
		elections := make([]*Election, n)
		var zombies atomic.Int64
		var wg sync.WaitGroup
		for i := range n {
			proxies[i] = newFaultProxy(t, tg.Addr)
			sessions[i] = dial(t, proxies[i].Addr(), Options{SessionTimeout: faultTimeout})
			elections[i] = NewElection(sessions[i], p, fmt.Sprint("candidate-", i))
			s, e := sessions[i], elections[i]
			r := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					call := h.now()
					err := e.Campaign(ctx)
					ret := h.now()
					if err != nil {
						if ctx.Err() == nil {
							t.Errorf("candidate %d: campaign: %v", i, err)
						}
						continue
					}
					token, node, lost := e.Token(), e.Node(), e.Lost()
					if token == 0 {
						continue // lost as it won
					}
					h.add(fenceInput{client: i, elect: true, token: token}, fenceOK, call, ret)
					term := belief{client: i, start: time.Duration(ret), end: time.Duration(ret)}
					budget := 20 + r.IntN(30)
				write:
					for w := 0; ctx.Err() == nil; w++ {
						select {
						case <-lost:
							break write
						default:
						}
						if e.IsLeader() {
							term.end = time.Duration(h.now())
						}
						c := h.now()
						out := fencedWrite(ctx, s, node, resource, token)
						h.add(fenceInput{client: i, token: token}, out, c, h.now())
						if w >= budget && e.IsLeader() {
							break // hand over
						}
						time.Sleep(time.Duration(2+r.IntN(8)) * time.Millisecond)
					}
					if err := e.Resign(); err != nil {
						t.Errorf("candidate %d: resign: %v", i, err)
					}
					h.mu.Lock()
					h.terms = append(h.terms, term)
					h.mu.Unlock()
					c := h.now()
					out := fencedWrite(ctx, s, node, resource, token)
					h.add(fenceInput{client: i, token: token}, out, c, h.now())
					if out == fenceOK {
						t.Errorf("candidate %d: a write with the token of its ended term %d succeeded", i, token)
					}
					zombies.Add(1)
				}
			}()
		}

		// leader finds the candidate that says it leads.
		leader := func() int {
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
				for i, e := range elections {
					if e.IsLeader() {
						return i
					}
				}
			}
			t.Fatal("no candidate leads")
			return -1
		}
		for _, fault := range []string{"expire", "partition", "depose", "cut", "expire", "partition"} {
			time.Sleep(300 * time.Millisecond)
			v := leader()
			switch fault {
			case "expire":
				expireSession(t, sessions[v], tg.Addr)
			case "depose":
				if node := elections[v].Node(); node != "" {
					if err := admin.Delete(ctx, node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
						t.Fatal(err)
					}
				}
			case "cut":
				proxies[v].Cut()
			case "partition":
				proxies[v].Stall()
				coordtest.WaitFor(t, 5*faultTimeout, "another candidate to lead", func() error {
					if w := leader(); w == v {
						return fmt.Errorf("candidate %d, partitioned, still leads", v)
					}
					return nil
				})
				proxies[v].Release()
			}
		}
		time.Sleep(300 * time.Millisecond)
		cancel()
		wg.Wait()

		elected := h.count(func(in fenceInput, _ fenceOutcome) bool { return in.elect })
		ok := h.count(func(in fenceInput, out fenceOutcome) bool { return !in.elect && out == fenceOK })
		rejected := h.count(func(in fenceInput, out fenceOutcome) bool { return !in.elect && out == fenceRejected })
		overlap := h.maxOverlap()
		t.Logf("%d terms, %d fenced writes ok, %d refused, %d zombie writes; longest overlap of beliefs %v (negative: closest gap)",
			elected, ok, rejected, zombies.Load(), overlap.Round(time.Microsecond))
		if elected < 6 {
			t.Errorf("%d terms, want at least the first and one per fault that deposes a leader (5)", elected)
		}
		if zombies.Load() == 0 || rejected == 0 {
			t.Error("no write of an ended term was made: the fence was not tested")
		}
		if overlap >= faultTimeout {
			t.Errorf("two candidates said they led at once for %v, want less than the session timeout %v", overlap, faultTimeout)
		}
		res, info := porcupine.CheckOperationsVerbose(fenceModel(), h.ops, 30*time.Second)
		if res != porcupine.Ok {
			path := t.TempDir() + "/fencing.html"
			_ = porcupine.VisualizePath(fenceModel(), info, path)
			t.Fatalf("porcupine: %v: a fenced write succeeded outside its term, or a token went backwards; see %s", res, path)
		}
	})
}

// TestElectionLeaderKilled kills the leader — another process — with
// SIGKILL: the waiting candidate must lead once the server expires the
// dead leader's session, within the session timeout (plus the server's
// tick granularity and a notification), with a larger token.
func TestElectionLeaderKilled(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 60*time.Second)
		p := testPath(t)
		cmd, l := startProcess(t, "candidate", tg.Addr, p, "doomed")
		dead, err := strconv.ParseInt(strings.TrimPrefix(l, "leader "), 10, 64)
		if !strings.HasPrefix(l, "leader ") || err != nil {
			t.Fatalf("candidate process said %q, want leader <token>", l)
		}
		s := dial(t, tg.Addr, Options{})
		e := NewElection(s, p, "survivor")
		if id, err := e.Leader(ctx); err != nil || id != "doomed" {
			t.Fatalf("Leader() = %q, %v; want the process's id", id, err)
		}
		done := campaignAsync(ctx, e)
		waitChildren(t, s, p, 2)
		waitParked(t, []*Session{s}, 1)
		notYet(t, done, "Campaign while the leader process lives")
		killed := time.Now()
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, done, "Campaign after the leader was killed"); err != nil {
			t.Fatal(err)
		}
		took := time.Since(killed)
		t.Logf("takeover %v after SIGKILL (session timeout %v)", took.Round(time.Millisecond), faultTimeout)
		if e.Token() <= dead {
			t.Errorf("token %d after the takeover, want more than the dead leader's %d", e.Token(), dead)
		}
		if err := e.Resign(); err != nil {
			t.Fatal(err)
		}
	})
}
