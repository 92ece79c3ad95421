package recipe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/zpath"
)

// protectedName is the shape of a CreateProtected name for "node-".
var protectedName = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-node-(\d{10})?$`)

func TestSequenceOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  int32
		ok   bool
	}{
		{"lock-0000000007", 7, true},
		{"_c_2f1e8a6e-1c1b-4c55-9d0e-0d1c0b9f1a2b-lock-0000000012", 12, true},
		{"0123456789abcdef0123456789abcdef__lock__0000000003", 3, true},
		{"x-72057594037927936-0000000010", 10, true}, // session id in the prefix
		{"_c_uuid-__READ__2147483647", 2147483647, true},
		{"lock--000000001", -1, true}, // past the 32-bit wrap
		{"0000000000", 0, true},
		{"lock000000007", 0, false}, // nine digits: not a sequential name
		{"lock", 0, false},
		{"lock-00000a0007", 0, false},
		{"config", 0, false},
		{"lock-00000000-7", 0, false},
	} {
		seq, ok := sequenceOf(tc.name)
		if ok != tc.ok || (ok && seq != tc.seq) {
			t.Errorf("sequenceOf(%q) = %d, %v; want %d, %v", tc.name, seq, ok, tc.seq, tc.ok)
		}
	}
}

// TestContendersOrderBySequenceOnly is the ZNodeName bug of the ZooKeeper
// lock recipe: ordering by whole name puts the contender with the smaller
// prefix (session id, uuid, host) first, whatever its sequence number.
func TestContendersOrderBySequenceOnly(t *testing.T) {
	names := []string{
		"x-99-0000000001",
		"_c_ffffffff-0000-4000-8000-000000000000-lock-0000000003",
		"x-11-0000000004",
		"config",
		"0000000000000000aaaaaaaaaaaaaaaa__lock__0000000002",
		"_c_00000000-0000-4000-8000-000000000000-lock-0000000005",
		"readme.txt",
	}
	got := contenders(names)
	var order []int32
	for _, c := range got {
		order = append(order, c.seq)
	}
	if want := []int32{1, 2, 3, 4, 5}; !slices.Equal(order, want) {
		t.Fatalf("contender order %v, want %v (non-sequential names left out)", order, want)
	}
	if i := indexOf(got, "x-11-0000000004"); i != 3 {
		t.Errorf("indexOf = %d, want 3", i)
	}
	if i := indexOf(got, "config"); i != -1 {
		t.Errorf("indexOf(non-contender) = %d, want -1", i)
	}
}

func TestParseConnect(t *testing.T) {
	for _, tc := range []struct {
		in      string
		servers []string
		root    string
		bad     bool
	}{
		{in: "127.0.0.1:2181", servers: []string{"127.0.0.1:2181"}},
		{in: "a:1,b:2,c:3/shepherd/prod", servers: []string{"a:1", "b:2", "c:3"}, root: "/shepherd/prod"},
		{in: "a:1/", servers: []string{"a:1"}},
		{in: "[::1]:2181/x", servers: []string{"[::1]:2181"}, root: "/x"},
		{in: "a:1, b:2", servers: []string{"a:1", "b:2"}},
		{in: "", bad: true},
		{in: "a", bad: true},
		{in: ":1", bad: true},
		{in: "a:1/x/", bad: true},
		{in: "a:1/x/../y", bad: true},
		{in: "/x", bad: true},
	} {
		servers, root, err := parseConnect(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrBadConnectString) {
				t.Errorf("parseConnect(%q) = %v, %q, %v; want ErrBadConnectString", tc.in, servers, root, err)
			}
			continue
		}
		if err != nil || !slices.Equal(servers, tc.servers) || root != tc.root {
			t.Errorf("parseConnect(%q) = %v, %q, %v; want %v, %q", tc.in, servers, root, err, tc.servers, tc.root)
		}
	}
}

func TestChrootTranslation(t *testing.T) {
	c := chroot("/app")
	for _, tc := range []struct{ caller, server string }{
		{"/", "/app"},
		{"/a", "/app/a"},
		{"/a/b-0000000001", "/app/a/b-0000000001"},
	} {
		if got := c.toServer(tc.caller); got != tc.server {
			t.Errorf("toServer(%q) = %q, want %q", tc.caller, got, tc.server)
		}
		if got := c.fromServer(tc.server); got != tc.caller {
			t.Errorf("fromServer(%q) = %q, want %q", tc.server, got, tc.caller)
		}
	}
	if got := c.fromServer("/app2/x"); got != "/app2/x" {
		t.Errorf("fromServer of a sibling sharing the prefix = %q, want it unchanged", got)
	}
	if got := chroot("").toServer("/a"); got != "/a" {
		t.Errorf("no chroot: toServer = %q", got)
	}
	for _, tc := range []struct{ path, dir, name string }{
		{"/a", "/", "a"},
		{"/a/b/c", "/a/b", "c"},
	} {
		if d, n := zpath.Split(tc.path); d != tc.dir || n != tc.name {
			t.Errorf("zpath.Split(%q) = %q, %q", tc.path, d, n)
		}
		if j := zpath.Join(tc.dir, tc.name); j != tc.path {
			t.Errorf("zpath.Join(%q, %q) = %q", tc.dir, tc.name, j)
		}
	}
}

func TestIsRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{zk.ErrConnectionClosed, true},
		{zk.ErrNoServer, true},
		{zk.ErrSessionMoved, true},
		{zk.ErrSessionExpired, true},
		{zk.ErrClosing, true},
		{fmt.Errorf("recipe: get /x: %w", zk.ErrConnectionClosed), true},
		{fmt.Errorf("recipe: create /x: %w", &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}), true},
		{zk.ErrNoNode, false},
		{zk.ErrNodeExists, false},
		{zk.ErrBadVersion, false},
		{zk.ErrNotEmpty, false},
		{zk.ErrNoAuth, false},
		{context.Canceled, false},
		{nil, false},
	} {
		if got := IsRetryable(tc.err); got != tc.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestRetryPolicyDelay(t *testing.T) {
	p := RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for n, ceil := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 30: time.Second} {
		for range 50 {
			d := p.delay(n)
			if d < ceil/2 || d > ceil {
				t.Fatalf("delay(%d) = %v, want within [%v, %v]", n, d, ceil/2, ceil)
			}
		}
	}
	if got := (RetryPolicy{}).orDefault(); got != DefaultRetryPolicy {
		t.Errorf("zero policy = %+v, want the default", got)
	}
}

// retrySession is a Session with nothing but what retry needs.
func retrySession() *Session { return &Session{done: make(chan struct{})} }

func TestRetry(t *testing.T) {
	p := RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond, MaxElapsed: 5 * time.Second}
	t.Run("until success", func(t *testing.T) {
		calls := 0
		err := retry(context.Background(), retrySession(), p, func() error {
			calls++
			if calls < 4 {
				return zk.ErrConnectionClosed
			}
			return nil
		})
		if err != nil || calls != 4 {
			t.Errorf("err %v after %d calls, want nil after 4", err, calls)
		}
	})
	t.Run("never an answer about the data", func(t *testing.T) {
		for _, answer := range []error{zk.ErrNoNode, zk.ErrNodeExists, zk.ErrBadVersion} {
			calls := 0
			err := retry(context.Background(), retrySession(), p, func() error { calls++; return answer })
			if !errors.Is(err, answer) || calls != 1 {
				t.Errorf("%v: err %v after %d calls, want it returned after 1", answer, err, calls)
			}
		}
	})
	t.Run("max elapsed", func(t *testing.T) {
		short := RetryPolicy{BaseDelay: 5 * time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxElapsed: 50 * time.Millisecond}
		start := time.Now()
		err := retry(context.Background(), retrySession(), short, func() error { return zk.ErrNoServer })
		if !errors.Is(err, zk.ErrNoServer) || time.Since(start) > time.Second {
			t.Errorf("err %v after %v, want zk.ErrNoServer within ~50ms", err, time.Since(start))
		}
	})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		slow := RetryPolicy{BaseDelay: time.Second, MaxDelay: time.Second}
		err := retry(ctx, retrySession(), slow, func() error { return zk.ErrNoServer })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err %v, want the context's deadline", err)
		}
	})
	t.Run("closed session", func(t *testing.T) {
		s := retrySession()
		close(s.done)
		if err := retry(context.Background(), s, p, func() error { return zk.ErrConnectionClosed }); !errors.Is(err, ErrClosed) {
			t.Errorf("err %v, want ErrClosed", err)
		}
	})
}

func TestNewUUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		u := newUUID()
		if !re.MatchString(u) || seen[u] {
			t.Fatalf("newUUID() = %q: not a fresh version 4 uuid", u)
		}
		seen[u] = true
	}
}

// TestFrameScanner feeds a stream of frames in random pieces and checks
// that every frame's head is reported once, whole, in order.
func TestFrameScanner(t *testing.T) {
	var stream []byte
	var want [][]byte
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		body := make([]byte, r.IntN(100))
		for j := range body {
			body[j] = byte(i + j)
		}
		stream = binary.BigEndian.AppendUint32(stream, uint32(len(body)))
		stream = append(stream, body...)
		want = append(want, body[:min(len(body), frameHead)])
	}
	for trial := range 20 {
		var f frameScanner
		var got [][]byte
		var firsts []bool
		rest := stream
		for len(rest) > 0 {
			k := min(len(rest), 1+r.IntN(40))
			f.scan(rest[:k], nil, func(bool, []byte) (byte, bool) { return 0, false }, func(first bool, head []byte) {
				got = append(got, append([]byte(nil), head...))
				firsts = append(firsts, first)
			})
			rest = rest[k:]
		}
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d heads, want %d", trial, len(got), len(want))
		}
		for i := range want {
			if !slices.Equal(got[i], want[i]) || firsts[i] != (i == 0) {
				t.Fatalf("trial %d frame %d: head %x first=%v, want %x first=%v", trial, i, got[i], firsts[i], want[i], i == 0)
			}
		}
	}
}

// TestEagerHostsPacing: after a session, every server is tried once
// without a pause, then attempts are paced; free passes come at most once
// per freePassEvery.
func TestEagerHostsPacing(t *testing.T) {
	h := newEagerHosts()
	if err := h.Init([]string{"127.0.0.1:1", "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	pauses := func(n int) (got []bool) {
		for range n {
			_, pause := h.Next()
			got = append(got, pause)
		}
		return got
	}
	if got := pauses(2); slices.Contains(got, true) {
		t.Errorf("first pass pauses %v, want none", got)
	}
	if got := pauses(2); !slices.Contains(got, true) {
		t.Errorf("second pass without a session pauses %v, want a pause", got)
	}
	h.Connected()
	if got := pauses(2); slices.Contains(got, true) {
		t.Errorf("pass after a session pauses %v, want none", got)
	}
	h.Connected() // a session dropped at once: no second free pass so soon
	if got := pauses(2); !slices.Contains(got, true) {
		t.Errorf("pass right after a free one pauses %v, want a pause", got)
	}
}
