package server

import (
	"strings"
	"testing"
	"time"
)

// TestLimiterMemoryIsBounded: failures from ever new addresses fill the
// limiter to maxKeys and no further; while every key is live a new one
// is refused (forgetting one would lift a lockout), and once they have
// nothing left to remember they are swept.
func TestLimiterMemoryIsBounded(t *testing.T) {
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l := newLimiter(limits{PerPair: 5, Global: 1 << 30, Window: time.Minute, MaxWait: time.Hour}, func() time.Time { return clock })
	refused := 0
	for i := range maxKeys {
		at, wait := l.reserve("admin", "10."+itoa(i>>16&255)+"."+itoa(i>>8&255)+"."+itoa(i&255))
		if wait > 0 {
			refused++
			continue
		}
		at.failed()
	}
	if len(l.keys) > maxKeys || refused == 0 {
		t.Fatalf("%d keys held, %d attempts refused; want at most %d held and the rest refused", len(l.keys), refused, maxKeys)
	}
	if _, wait := l.reserve("admin", "192.0.2.1"); wait == 0 {
		t.Fatal("a new key was let in while every held key still counted a failure")
	}
	clock = clock.Add(time.Minute)
	at, wait := l.reserve("admin", "192.0.2.1")
	if wait > 0 || len(l.keys) > 3 {
		t.Fatalf("after the window: wait %v, %d keys held; want the idle keys swept", wait, len(l.keys))
	}
	at.succeeded()
	if len(l.keys) != 0 {
		t.Fatalf("a success with nothing to remember left %d keys, want none", len(l.keys))
	}
}

// TestLimiterBackoffAndSuccess: lockouts of a key double up to the
// maximum; a success clears the (user, address) key, but not the
// address's count, so an attacker with an account of its own cannot
// wash its address clean.
func TestLimiterBackoffAndSuccess(t *testing.T) {
	clock := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	l := newLimiter(limits{PerPair: 2, Global: 1000, Window: time.Minute, MaxWait: 3 * time.Minute}, func() time.Time { return clock })
	lockFor := func() time.Duration {
		t.Helper()
		var locked []lockout
		for range 2 {
			at, wait := l.reserve("alice", "192.0.2.1")
			if wait > 0 {
				t.Fatalf("refused before the limit: wait %v", wait)
			}
			locked = at.failed()
		}
		_, wait := l.reserve("alice", "192.0.2.1")
		if len(locked) != 1 || locked[0].For != wait {
			t.Fatalf("lockouts %v, wait %v", locked, wait)
		}
		clock = clock.Add(wait)
		return wait
	}
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, 3 * time.Minute} {
		if got := lockFor(); got != want {
			t.Fatalf("lockout %d lasted %v, want %v", i+1, got, want)
		}
	}
	at, _ := l.reserve("alice", "192.0.2.1")
	at.succeeded()
	if got := lockFor(); got != time.Minute {
		t.Fatalf("the first lockout after a success lasted %v, want a window", got)
	}
	if ks := l.keys["addr:192.0.2.1"]; ks == nil || ks.fails == 0 {
		t.Fatalf("the address's count after a success: %+v, want it kept", ks)
	}
}

// TestNegativeLimitsAreRefused: a negative limit names its flag.
func TestNegativeLimitsAreRefused(t *testing.T) {
	if err := (Config{LoginWindow: -time.Second}).checkLimits(); err == nil || !strings.Contains(err.Error(), "--login-window") {
		t.Fatalf("a negative --login-window: %v", err)
	}
	if err := (Config{}).checkLimits(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
}
