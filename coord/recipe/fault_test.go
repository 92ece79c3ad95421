package recipe

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// held is one acquisition, whatever the recipe.
type held struct {
	shared  bool
	lost    <-chan struct{}
	release func() error
}

// acquirer takes a recipe's lock for one contender.
type acquirer func(ctx context.Context) (held, error)

// Fault-run parameters: four contenders; the plan of faults, run in
// order a little apart; then a last stretch without faults.
const faultContenders = 4

var faultPlan = []string{"cut", "partition", "cut", "cut", "partition", "cut"}

// runLockFaults has contenders take and release a lock in a loop, each
// through its own faultProxy, while the lock's holder is partitioned away
// (its session expires on the server, and it must notice first) and
// contenders' connections are cut (their sessions survive). The history
// of beliefs is checked with porcupine.
func runLockFaults(t *testing.T, tg *coordtest.Target, model porcupine.Model, mk func(s *Session, client int, r *rand.Rand) acquirer) {
	h := newHistory()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// hold[i] is contender i's state: idle, holding, or claimed by the
	// injector as the victim of a partition. The injector claims a holder
	// with a compare-and-swap the holder also races for when it wants to
	// release, so a claimed holder always keeps holding until it learns of
	// its loss (with two separate flags it could release in between).
	const (
		idle int32 = iota
		holding
		claimed
	)
	var hold [faultContenders]atomic.Int32
	var lostHolds atomic.Int64
	proxies := make([]*faultProxy, faultContenders)
	var wg sync.WaitGroup
	for i := range faultContenders {
		proxies[i] = newFaultProxy(t, tg.Addr)
		s := dial(t, proxies[i].Addr(), Options{SessionTimeout: faultTimeout})
		r := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
		acquire := mk(s, i, r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				call := h.now()
				hd, err := acquire(ctx)
				ret := h.now()
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("contender %d: acquire: %v", i, err)
					}
					continue
				}
				h.add(lockInput{client: i, acquire: true, shared: hd.shared}, call, ret)
				hold[i].Store(holding)
				lostAt := int64(-1)
				timer := time.NewTimer(time.Duration(r.IntN(20)) * time.Millisecond)
				select {
				case <-hd.lost:
					lostAt = h.now()
				case <-timer.C:
				}
				timer.Stop()
				if lostAt < 0 && !hold[i].CompareAndSwap(holding, idle) {
					select {
					case <-hd.lost:
						lostAt = h.now()
					case <-time.After(3 * faultTimeout):
						t.Errorf("contender %d: partitioned away for %v and never told its lock was lost", i, 3*faultTimeout)
					}
				}
				if lostAt < 0 {
					select {
					case <-hd.lost:
						lostAt = h.now()
					default:
					}
				}
				hold[i].Store(idle)
				release := lockInput{client: i, shared: hd.shared}
				if lostAt >= 0 {
					// The holder stops at the moment it learns.
					lostHolds.Add(1)
					h.add(release, lostAt, lostAt)
					_ = hd.release()
					continue
				}
				rc := h.now()
				err = hd.release()
				h.add(release, rc, h.now())
				if err != nil && !errors.Is(err, ErrLockLost) {
					t.Errorf("contender %d: release: %v", i, err)
				}
			}
		}()
	}

	partitions := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel() // the contenders stop once the plan has run
		r := rand.New(rand.NewPCG(99, uint64(time.Now().UnixNano())))
		for _, fault := range append(faultPlan, "rest") {
			if !sleepCtx(ctx, 300*time.Millisecond) {
				return
			}
			switch fault {
			case "rest":
				return
			case "cut":
				proxies[r.IntN(faultContenders)].Cut()
				continue
			}
			v := -1
			// After a partition every contender may be waiting out the
			// victim's expiry for a while: look for a holder long enough
			// that a busy machine still finds one.
			for deadline := time.Now().Add(4 * time.Second); v < 0 && time.Now().Before(deadline); {
				for i := range faultContenders {
					if hold[i].CompareAndSwap(holding, claimed) {
						v = i
						break
					}
				}
				time.Sleep(time.Millisecond)
			}
			if v < 0 {
				continue
			}
			// Long enough for the server to expire the session.
			proxies[v].Stall()
			time.Sleep(faultTimeout * 5 / 4)
			proxies[v].Release()
			partitions++
		}
	}()
	wg.Wait()
	t.Logf("%d partitions, %d holds lost; acquisitions per contender: %v", partitions, lostHolds.Load(), h.count())
	if want := strings.Count(strings.Join(faultPlan, " "), "partition"); partitions != want {
		t.Errorf("%d partitions injected, want %d (no holder found to partition?)", partitions, want)
	}
	if lostHolds.Load() == 0 {
		t.Error("no holder was partitioned while holding: the run did not test lock loss")
	}
	for i, n := range h.count() {
		if n == 0 {
			t.Errorf("contender %d never acquired", i)
		}
	}
	h.check(t, model)
}

// sleepCtx sleeps for d and reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

func TestMutexFaultHistory(t *testing.T) {
	t.Parallel()
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		p := testPath(t)
		runLockFaults(t, tg, lockModel(1), func(s *Session, _ int, _ *rand.Rand) acquirer {
			m := NewMutex(s, p)
			return func(ctx context.Context) (held, error) {
				if err := m.Lock(ctx); err != nil {
					return held{}, err
				}
				return held{lost: m.Lost(), release: m.Unlock}, nil
			}
		})
	})
}

func TestRWMutexFaultHistory(t *testing.T) {
	t.Parallel()
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		p := testPath(t)
		runLockFaults(t, tg, lockModel(64), func(s *Session, _ int, r *rand.Rand) acquirer {
			rw := NewRWMutex(s, p)
			return func(ctx context.Context) (held, error) {
				if r.IntN(3) == 0 {
					if err := rw.Lock(ctx); err != nil {
						return held{}, err
					}
					return held{lost: rw.Lost(), release: rw.Unlock}, nil
				}
				if err := rw.RLock(ctx); err != nil {
					return held{}, err
				}
				return held{shared: true, lost: rw.RLost(), release: rw.RUnlock}, nil
			}
		})
	})
}

func TestSemaphoreFaultHistory(t *testing.T) {
	t.Parallel()
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		p := testPath(t)
		runLockFaults(t, tg, lockModel(2), func(s *Session, _ int, _ *rand.Rand) acquirer {
			sem := NewSemaphore(s, p, 2)
			return func(ctx context.Context) (held, error) {
				l, err := sem.Acquire(ctx)
				if err != nil {
					return held{}, err
				}
				return held{shared: true, lost: l.Lost(), release: l.Release}, nil
			}
		})
	})
}

// TestMutexHolderKilled kills a lock holder — another process — with
// SIGKILL: the waiter must get the lock once the server expires the dead
// holder's session, within the session timeout (plus the server's tick
// granularity and a notification).
func TestMutexHolderKilled(t *testing.T) {
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		ctx := coordtest.Context(t, 60*time.Second)
		p := testPath(t)
		cmd, l := startProcess(t, "mutex", tg.Addr, p, "")
		if !strings.HasPrefix(l, "locked "+p+"/") {
			t.Fatalf("holder process said %q, want locked %s/…", l, p)
		}
		s := dial(t, tg.Addr, Options{})
		m := NewMutex(s, p)
		done := lockAsync(ctx, m)
		waitChildren(t, s, p, 2)
		waitParked(t, []*Session{s}, 1)
		notYet(t, done, "Lock while the holder process lives")
		killed := time.Now()
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := recv(t, done, "Lock after the holder was killed"); err != nil {
			t.Fatal(err)
		}
		took := time.Since(killed)
		t.Logf("takeover %v after SIGKILL (session timeout %v)", took.Round(time.Millisecond), faultTimeout)
		if err := m.Unlock(); err != nil {
			t.Fatal(err)
		}
	})
}
