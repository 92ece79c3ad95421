package server

import (
	"net/netip"
	"sync"
	"time"
)

// limiter bounds password guessing. A login takes a place in it before
// the password is checked (reserve), so concurrent guesses cannot all
// pass a check made before any of them failed: the check and the count
// are one step under one mutex, and a place taken counts against the
// limit until the attempt is resolved.
//
// Three counters are charged for every attempt:
//   - (user, address): LoginFailures; the one that locks a guesser out
//     of an account without locking the account's owner, who logs in
//     from another address;
//   - address: 4 × LoginFailures, for a guesser spraying many user names;
//   - global: LoginGlobalFailures across all keys, so a guess spread over
//     many addresses still reaches bcrypt a bounded number of times.
//
// Reaching a limit locks the key: for the window, then twice as long at
// each lockout that follows without a success, up to maxWait (the global
// key is never escalated: a distributed attacker must not lock everyone
// out for longer than a window). A success clears its (user, address)
// key. Keys that remember nothing are swept; at most maxKeys are held,
// and when that many are all live, a new one is refused rather than a
// live one forgotten (forgetting would lift a lockout).
type limiter struct {
	mu        sync.Mutex
	now       func() time.Time
	window    time.Duration
	maxWait   time.Duration
	perPair   int
	perAddr   int
	global    int
	keys      map[string]*keyState
	lastSweep time.Time
}

// keyState is one key's count.
type keyState struct {
	name     string
	max      int
	escalate bool
	fails    int       // failures in the window starting at start
	pending  int       // places taken by attempts not yet resolved
	start    time.Time // of the window
	until    time.Time // locked until
	strikes  int       // lockouts since the last success or quiet spell
	last     time.Time // last failure, or end of the last lockout
}

// maxKeys bounds the limiter's memory.
const maxKeys = 10000

// limits are the limiter's bounds.
type limits struct {
	PerPair, Global int
	Window, MaxWait time.Duration
}

// loginLimits are the limits of cfg (defaults filled in).
func loginLimits(cfg Config) limits {
	return limits{PerPair: cfg.LoginFailures, Global: cfg.LoginGlobalFailures, Window: cfg.LoginWindow, MaxWait: cfg.LoginMaxBackoff}
}

func newLimiter(lim limits, now func() time.Time) *limiter {
	return &limiter{now: now, window: lim.Window, maxWait: lim.MaxWait,
		perPair: lim.PerPair, perAddr: 4 * lim.PerPair, global: lim.Global, keys: map[string]*keyState{}}
}

// attempt is a login's place in the limiter, to be resolved exactly once.
type attempt struct {
	l    *limiter
	keys []string
}

// lockout says which key an attempt's failure locked, for how long.
type lockout struct {
	Key string
	For time.Duration
}

// limitKeys are the keys of a login of user from addr.
func limitKeys(user, addr string) []string {
	a := addrKey(addr)
	return []string{"user+addr:" + user + "@" + a, "addr:" + a, "global"}
}

// addrKey is the address as the limiter counts it: an IPv6 client
// holds a whole /64, so that is one address.
func addrKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil || !ip.Unmap().Is6() {
		return addr
	}
	p, _ := ip.Prefix(64)
	return p.String()
}

// reserve takes a place for a login of user from addr, or returns how
// long until one may be taken.
func (l *limiter) reserve(user, addr string) (*attempt, time.Duration) {
	keys := limitKeys(user, addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.sweep(now)
	var wait time.Duration
	missing := 0
	for _, k := range keys {
		if ks := l.keys[k]; ks != nil {
			wait = max(wait, l.blockedFor(ks, now))
		} else {
			missing++
		}
	}
	if wait == 0 && len(l.keys)+missing > maxKeys {
		wait = l.window // every key live: refuse rather than forget one
	}
	if wait > 0 {
		return nil, wait
	}
	for i, k := range keys {
		ks := l.keys[k]
		if ks == nil {
			ks = &keyState{name: k, max: []int{l.perPair, l.perAddr, l.global}[i], escalate: i < 2, start: now}
			l.keys[k] = ks
		}
		ks.pending++
	}
	return &attempt{l: l, keys: keys}, 0
}

// blockedFor is how long the key refuses a new attempt at now. A new
// window starts when the last is over, and a key quiet for maxWait
// forgets its strikes.
func (l *limiter) blockedFor(ks *keyState, now time.Time) time.Duration {
	if now.Before(ks.until) {
		return ks.until.Sub(now)
	}
	if now.Sub(ks.start) >= l.window {
		ks.fails, ks.start = 0, now
	}
	if ks.strikes > 0 && now.Sub(ks.last) >= l.maxWait {
		ks.strikes = 0
	}
	if ks.fails+ks.pending >= ks.max {
		return ks.start.Add(l.window).Sub(now)
	}
	return 0
}

// failed counts the attempt as a failure and returns the lockouts it
// caused.
func (a *attempt) failed() []lockout {
	l := a.l
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var locked []lockout
	for _, ks := range a.release() {
		ks.fails++
		ks.last = now
		if ks.fails < ks.max {
			continue
		}
		d := l.window
		if ks.escalate {
			ks.strikes++
			d = min(l.window<<min(ks.strikes-1, 30), l.maxWait)
		}
		// The lockout replaces the window: counting starts again after
		// it, and the key is quiet only from its end.
		ks.until, ks.fails, ks.start, ks.last = now.Add(d), 0, now.Add(d), now.Add(d)
		locked = append(locked, lockout{Key: ks.name, For: d})
	}
	return locked
}

// succeeded releases the attempt's place and clears its (user,
// address) key: the owner of the account is back. A key left with
// nothing to remember is dropped, so successful logins do not grow the
// map.
func (a *attempt) succeeded() {
	l := a.l
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for i, ks := range a.release() {
		if i == 0 {
			ks.fails, ks.strikes, ks.until = 0, 0, time.Time{}
		}
		if ks.pending == 0 && ks.fails == 0 && ks.strikes == 0 && !now.Before(ks.until) {
			delete(l.keys, ks.name)
		}
	}
}

// abandoned releases the attempt's place without counting it (the
// password could not be checked).
func (a *attempt) abandoned() {
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	a.release()
}

// release gives back the attempt's places; l.mu is held. A key is
// never dropped while a place in it is taken, so each is there.
func (a *attempt) release() []*keyState {
	out := make([]*keyState, 0, len(a.keys))
	for _, k := range a.keys {
		if ks := a.l.keys[k]; ks != nil {
			ks.pending--
			out = append(out, ks)
		}
	}
	return out
}

// sweep forgets the keys that remember nothing, once a window or when
// the map is full.
func (l *limiter) sweep(now time.Time) {
	if len(l.keys) < maxKeys && now.Sub(l.lastSweep) < l.window {
		return
	}
	l.lastSweep = now
	for k, ks := range l.keys {
		if l.idle(ks, now) {
			delete(l.keys, k)
		}
	}
}

// idle: nothing in flight, not locked, its window over, and its strikes
// either none or as old as the longest lockout.
func (l *limiter) idle(ks *keyState, now time.Time) bool {
	return ks.pending == 0 && !now.Before(ks.until) && now.Sub(ks.start) >= l.window &&
		(ks.strikes == 0 || now.Sub(ks.last) >= l.maxWait)
}
