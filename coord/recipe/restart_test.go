package recipe

import (
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// restartSessionTimeout: see coordtest.RestartSessionTimeout.
const restartSessionTimeout = coordtest.RestartSessionTimeout

// TestMutexSurvivesServerRestart restarts the coordination server under a
// lock holder: with the server back within the session timeout, the
// session and the lock survive, and nobody else gets the lock meanwhile.
func TestMutexSurvivesServerRestart(t *testing.T) {
	t.Parallel()
	for _, tg := range targets {
		t.Run(tg.Name, func(t *testing.T) {
			tg.Require(t)
			srv := coordtest.StartRestartable(t, tg.Name, 500*time.Millisecond)
			ctx := coordtest.Context(t, 2*time.Minute)
			p := testPath(t)
			holder := dial(t, srv.Addr, Options{SessionTimeout: restartSessionTimeout})
			rec := recordStates(holder)
			waiter := dial(t, srv.Addr, Options{SessionTimeout: restartSessionTimeout})
			m, w := NewMutex(holder, p), NewMutex(waiter, p)
			if err := m.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			done := lockAsync(ctx, w)
			waitChildren(t, holder, p, 2)
			id := holder.ID()
			began := time.Now()
			srv.Restart(t)
			rec.expect(t, 2*restartSessionTimeout, StateSuspended)
			// How long the server takes to come back is the machine's (a
			// JVM restart has taken 84 s next to a CPU hog): past the
			// session timeout, the session is lost, and so is the lock.
			if st := rec.next(t, 2*restartSessionTimeout); st != StateReconnected {
				if st != StateLost {
					t.Fatalf("after SUSPENDED: %v, want RECONNECTED or LOST", st)
				}
				t.Logf("the server came back after the session timeout (%v): session %#x lost", restartSessionTimeout, id)
				select {
				case <-m.Lost():
				case <-time.After(restartSessionTimeout):
					t.Fatal("the session was lost but the lock was not")
				}
				// The waiter, on a session as old, either holds the lock now
				// or lost its session too.
				if err := recv(t, done, "the waiter after the holder's session was lost"); err != nil {
					t.Logf("the waiter's Lock: %v", err)
				} else if err := w.Unlock(); err != nil {
					t.Fatal(err)
				}
				return
			}
			t.Logf("server back and session %#x reconnected after %v", id, time.Since(began).Round(time.Millisecond))
			if holder.ID() != id {
				t.Fatalf("session %#x replaced by %#x over the restart", id, holder.ID())
			}
			select {
			case <-m.Lost():
				t.Fatal("the lock was lost over a restart within the session timeout")
			default:
			}
			notYet(t, done, "the waiter while the holder still holds after the restart")
			if err := m.Unlock(); err != nil {
				t.Fatal(err)
			}
			if err := recv(t, done, "the waiter after the holder unlocked"); err != nil {
				t.Fatal(err)
			}
			if err := w.Unlock(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
