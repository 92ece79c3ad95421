package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	mdns "github.com/miekg/dns"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/sessiontest"
)

// TestResolveRegistered: addresses registered with a session and with a
// TTL are answered to Go's resolver and to dig, over UDP and TCP, A, SRV
// and TXT; a deregistered address leaves the answers; an unknown name is
// NXDOMAIN.
func TestResolveRegistered(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := coordtest.Context(t, waitLong)
		s := dial(t, connect)
		if _, err := s.EnsureSubtree(ctx, Subtrees()[0]); err != nil {
			t.Fatal(err)
		}
		sv := startDNS(t, dial(t, connect), ServerOptions{})
		n := mustName(t, "app1", "api.svc.example")
		r1 := mustAddr(t, "10.0.0.1:8080")
		r1.Weight, r1.Meta = 5, map[string]string{"dc": "east"}
		if _, err := Register(ctx, s, n, r1); err != nil {
			t.Fatal(err)
		}
		r2 := mustAddr(t, "10.0.0.2:9090")
		r2.TTL = time.Hour
		if err := RegisterTTL(ctx, s, n, r2); err != nil {
			t.Fatal(err)
		}
		waitA(t, sv.Addr(), "api.svc.example.", "10.0.0.1", "10.0.0.2")

		_, srvs, err := resolver(sv.Addr()).LookupSRV(ctx, "", "", "api.svc.example.")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range srvs {
			got = append(got, fmt.Sprintf("%d %d %s", r.Weight, r.Port, r.Target))
		}
		slices.Sort(got)
		if want := []string{"1 9090 ip-10-0-0-2.api.svc.example.", "5 8080 ip-10-0-0-1.api.svc.example."}; !slices.Equal(got, want) {
			t.Errorf("SRV by Go's resolver: %q; want %q", got, want)
		}
		if ips, err := lookupA(sv.Addr(), "ip-10-0-0-1.api.svc.example."); err != nil || !slices.Equal(ips, []string{"10.0.0.1"}) {
			t.Errorf("SRV target: %v %v", ips, err)
		}

		for _, tcp := range []bool{false, true} {
			a, status := dig(t, sv.Addr(), "api.svc.example.", "A", tcp)
			if status != "NOERROR" || !slices.Equal(a, []string{"A 10.0.0.1", "A 10.0.0.2"}) {
				t.Errorf("dig A (tcp %v): %s %q", tcp, status, a)
			}
			srv, status := dig(t, sv.Addr(), "api.svc.example.", "SRV", tcp)
			if want := []string{"SRV 0 1 9090 ip-10-0-0-2.api.svc.example.", "SRV 0 5 8080 ip-10-0-0-1.api.svc.example."}; status != "NOERROR" || !slices.Equal(srv, want) {
				t.Errorf("dig SRV (tcp %v): %s %q; want %q", tcp, status, srv, want)
			}
			txt, _ := dig(t, sv.Addr(), "api.svc.example.", "TXT", tcp)
			if want := []string{`TXT "addr=10.0.0.1:8080" "weight=5" "dc=east"`, `TXT "addr=10.0.0.2:9090" "weight=1"`}; !slices.Equal(txt, want) {
				t.Errorf("dig TXT (tcp %v): %q; want %q", tcp, txt, want)
			}
			if _, status := dig(t, sv.Addr(), "nope.svc.example.", "A", tcp); status != "NXDOMAIN" {
				t.Errorf("dig unknown name (tcp %v): %s; want NXDOMAIN", tcp, status)
			}
		}

		if err := Deregister(ctx, s, n, r2.Addr); err != nil {
			t.Fatal(err)
		}
		waitA(t, sv.Addr(), "api.svc.example.", "10.0.0.1")
		if err := Deregister(ctx, s, n, r2.Addr); !errors.Is(err, ErrNotRegistered) {
			t.Errorf("deregister twice: %v; want ErrNotRegistered", err)
		}
	})
}

// TestBlockUnblock: a blocked address leaves the answers and comes back
// when unblocked; Services shows both.
func TestBlockUnblock(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := coordtest.Context(t, waitLong)
		s := dial(t, connect)
		sv := startDNS(t, dial(t, connect), ServerOptions{})
		n := mustName(t, "app1", "web.svc.example")
		for _, a := range []string{"10.0.0.1:80", "10.0.0.2:80"} {
			if _, err := Register(ctx, s, n, mustAddr(t, a)); err != nil {
				t.Fatal(err)
			}
		}
		waitA(t, sv.Addr(), "web.svc.example.", "10.0.0.1", "10.0.0.2")
		adm := NewAdmin(s)
		addr := mustAddr(t, "10.0.0.2:80").Addr
		if _, err := adm.Block(ctx, n, addr, "digest:test", "maintenance"); err != nil {
			t.Fatal(err)
		}
		waitA(t, sv.Addr(), "web.svc.example.", "10.0.0.1")
		st, err := adm.Service(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if st.Served != 1 || st.Addresses[1].Blocked == nil || st.Addresses[1].Blocked.Reason != "maintenance" {
			t.Errorf("status after block: %+v", st)
		}
		if before, err := adm.Unblock(ctx, n, addr); err != nil || before == nil {
			t.Fatalf("unblock: %v %v", before, err)
		}
		waitA(t, sv.Addr(), "web.svc.example.", "10.0.0.1", "10.0.0.2")
		if _, err := adm.Unblock(ctx, n, addr); !errors.Is(err, ErrNotBlocked) {
			t.Errorf("unblock twice: %v; want ErrNotBlocked", err)
		}
	})
}

// TestProviderKilled: a provider process killed with SIGKILL leaves the
// answers: a session-held one once its session expires, a heartbeat one
// once the scanner finds no heartbeat for its TTL. It is marked, not
// deleted.
func TestProviderKilled(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := coordtest.Context(t, waitLong)
		s := dial(t, connect)
		if _, err := s.EnsureSubtree(ctx, Subtrees()[0]); err != nil {
			t.Fatal(err)
		}
		sv := startDNS(t, dial(t, connect), ServerOptions{})
		startScanner(t, dial(t, connect), ScannerOptions{Grace: time.Millisecond})
		eph := startChild(t, childConfig{Connect: connect, App: "app1", Domain: "kill.svc.example", Addr: "10.0.0.1:80"})
		hb := startChild(t, childConfig{Connect: connect, App: "app1", Domain: "kill.svc.example", Addr: "10.0.0.2:80", TTL: 2 * time.Second})
		waitA(t, sv.Addr(), "kill.svc.example.", "10.0.0.1", "10.0.0.2")

		if err := eph.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitA(t, sv.Addr(), "kill.svc.example.", "10.0.0.2")
		if err := hb.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitA(t, sv.Addr(), "kill.svc.example.")
		st, err := NewAdmin(s).Service(ctx, mustName(t, "app1", "kill.svc.example"))
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Addresses) != 1 || st.Addresses[0].Healthy || st.Addresses[0].Unhealthy == nil {
			t.Fatalf("heartbeat provider after its death: %+v; want registered, marked unhealthy", st.Addresses)
		}
		// It comes back with its next heartbeat.
		if err := Heartbeat(ctx, s, st.Name, mustAddr(t, "10.0.0.2:80").Addr); err != nil {
			t.Fatal(err)
		}
		waitA(t, sv.Addr(), "kill.svc.example.", "10.0.0.2")
	})
}

// TestScannerClock: the 5-second rule decided on a clock the test sets,
// not by waiting: 4.9 s after the last heartbeat the address is served,
// 5.1 s after it is not, and a heartbeat brings it back.
func TestScannerClock(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := coordtest.Context(t, waitLong)
		s := dial(t, connect)
		n := mustName(t, "app1", "clock.svc.example")
		r := mustAddr(t, "10.0.0.7:80")
		r.TTL = 5 * time.Second
		if err := RegisterTTL(ctx, s, n, r); err != nil {
			t.Fatal(err)
		}
		_, st, err := s.Get(ctx, n.heartbeat(r.Addr))
		if err != nil {
			t.Fatal(err)
		}
		var now atomic.Int64
		now.Store(time.UnixMilli(st.Mtime).Add(4900 * time.Millisecond).UnixNano())
		sc := startScanner(t, dial(t, connect), ScannerOptions{Grace: time.Millisecond, Now: func() time.Time { return time.Unix(0, now.Load()) }})
		adm := NewAdmin(s)
		served := func(want bool) func() error {
			return func() error {
				st, err := adm.Service(ctx, n)
				if err != nil {
					return err
				}
				if got := st.Served == 1; got != want {
					return fmt.Errorf("served %v: %+v", got, st.Addresses)
				}
				return nil
			}
		}
		rounds := func(k float64) {
			start := testutilCount(sc)
			coordtest.WaitFor(t, waitLong, "scanner rounds", func() error {
				if testutilCount(sc) < start+k {
					return fmt.Errorf("%v rounds", testutilCount(sc)-start)
				}
				return nil
			})
		}
		rounds(2)
		if err := served(true)(); err != nil {
			t.Fatalf("4.9 s after the heartbeat: %v", err)
		}
		now.Store(time.UnixMilli(st.Mtime).Add(5100 * time.Millisecond).UnixNano())
		coordtest.WaitFor(t, waitLong, "unhealthy 5.1 s after the heartbeat", served(false))
		_, st2, _ := s.Get(ctx, n.provider(r.Addr))
		if st2 == nil {
			t.Fatal("the scanner deleted the registration")
		}
		if err := Heartbeat(ctx, s, n, r.Addr); err != nil {
			t.Fatal(err)
		}
		_, hb, err := s.Get(ctx, n.heartbeat(r.Addr))
		if err != nil {
			t.Fatal(err)
		}
		now.Store(time.UnixMilli(hb.Mtime).Add(time.Second).UnixNano())
		coordtest.WaitFor(t, waitLong, "healthy after a heartbeat", served(true))
	})
}

// TestActiveCheck: an address whose TCP check fails twice is not served
// until its check passes again; one whose HTTP check answers 503 is not
// served until it answers 200.
func TestActiveCheck(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := coordtest.Context(t, waitLong)
		s := dial(t, connect)
		sv := startDNS(t, dial(t, connect), ServerOptions{})
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		n := mustName(t, "app1", "checked.svc.example")
		r := mustAddr(t, addr)
		r.Check = &Check{Kind: "tcp"}
		if _, err := Register(ctx, s, n, r); err != nil {
			t.Fatal(err)
		}
		// An HTTP check of /healthz, answered 503 until the test says.
		var healthy atomic.Bool
		web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz" || !healthy.Load() {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
			}
		}))
		t.Cleanup(web.Close)
		hn := mustName(t, "app1", "web.svc.example")
		hr := mustAddr(t, strings.TrimPrefix(web.URL, "http://"))
		hr.Check = &Check{Kind: "http", Path: "/healthz"}
		if _, err := Register(ctx, s, hn, hr); err != nil {
			t.Fatal(err)
		}
		startScanner(t, dial(t, connect), ScannerOptions{CheckTimeout: time.Second})
		waitA(t, sv.Addr(), "checked.svc.example.", "127.0.0.1")
		waitA(t, sv.Addr(), "web.svc.example.")
		healthy.Store(true)
		waitA(t, sv.Addr(), "web.svc.example.", "127.0.0.1")

		l.Close()
		waitA(t, sv.Addr(), "checked.svc.example.")
		l2, err := net.Listen("tcp", addr)
		if err != nil {
			// Only another process taking the port in this instant: rare,
			// and a failure that says so, never a skip counted as a pass.
			t.Fatalf("listen again on %s for the recovered check: %v", addr, err)
		}
		defer l2.Close()
		waitA(t, sv.Addr(), "checked.svc.example.", "127.0.0.1")
	})
}

// TestUntrusted: a session without the credential cannot register, and
// a provider node anyone may rewrite is not served.
func TestUntrusted(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		ctx := coordtest.Context(t, waitLong)
		s := dial(t, connect)
		if _, err := s.EnsureSubtree(ctx, Subtrees()[0]); err != nil {
			t.Fatal(err)
		}
		sv := startDNS(t, dial(t, connect), ServerOptions{})
		n := mustName(t, "app1", "trust.svc.example")
		if _, err := Register(ctx, s, n, mustAddr(t, "10.0.0.1:80")); err != nil {
			t.Fatal(err)
		}
		waitA(t, sv.Addr(), "trust.svc.example.", "10.0.0.1")

		anon := sessiontest.Dial(t, connect, recipe.Options{SessionTimeout: testSessionTimeout})
		_, err := Register(ctx, anon, n, mustAddr(t, "10.6.6.6:80"))
		if !errors.Is(err, zk.ErrNoAuth) || !strings.Contains(err.Error(), "trusted writer") {
			t.Errorf("anonymous registration: %v; want refused (ErrNoAuth) with the fix", err)
		}
		if err := RegisterTTL(ctx, anon, mustName(t, "evil", "x.svc.example"), Registration{Addr: mustAddr(t, "10.6.6.6:80").Addr, TTL: time.Second}); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("anonymous registration of a new application: %v; want ErrNoAuth", err)
		}

		// A trusted writer's node opened to the world afterwards: refused.
		r := mustAddr(t, "10.0.0.9:80")
		r.TTL = time.Hour
		if err := RegisterTTL(ctx, s, n, r); err != nil {
			t.Fatal(err)
		}
		waitA(t, sv.Addr(), "trust.svc.example.", "10.0.0.1", "10.0.0.9")
		if _, err := s.SetACL(ctx, n.provider(r.Addr), zk.WorldACL(zk.PermAll), -1); err != nil {
			t.Fatal(err)
		}
		// An ACL change fires no watch: the next resync (or change) sees it.
		if _, err := anon.Set(ctx, n.provider(r.Addr), []byte(`{"version":1,"addr":"10.0.0.9:80","weight":1}`), -1); err != nil {
			t.Fatal(err)
		}
		waitA(t, sv.Addr(), "trust.svc.example.", "10.0.0.1")
		st, err := NewAdmin(s).Service(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Addresses) != 2 || !strings.Contains(st.Addresses[1].Refused, "untrusted") {
			t.Errorf("status of the opened node: %+v; want refused as untrusted", st.Addresses)
		}
	})
}

// TestCoordRestart: while the coordination server is down the server
// keeps answering from its cache, marked stale; once it is back a change
// is served and the cache is fresh again. A server that never loaded
// answers SERVFAIL.
func TestCoordRestart(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.Name, func(t *testing.T) {
			tg.Require(t)
			srv := coordtest.StartRestartable(t, tg.Name, 500*time.Millisecond)
			ctx := coordtest.Context(t, 4*coordtest.RestartSessionTimeout)
			s := sessiontest.DialAuth(t, srv.Addr, coordtest.RestartSessionTimeout)
			n := mustName(t, "app1", "restart.svc.example")
			r := mustAddr(t, "10.0.0.1:80")
			r.TTL = time.Hour
			if err := RegisterTTL(ctx, s, n, r); err != nil {
				t.Fatal(err)
			}
			ds := sessiontest.DialAuth(t, srv.Addr, coordtest.RestartSessionTimeout)
			sv := startDNS(t, ds, ServerOptions{})
			waitA(t, sv.Addr(), "restart.svc.example.", "10.0.0.1")

			changed := sv.Cache().Changed()
			srv.Restart(t)
			// Answered from the cache whether or not the outage was seen.
			if got, err := lookupA(sv.Addr(), "restart.svc.example."); err != nil || !slices.Equal(got, []string{"10.0.0.1"}) {
				t.Errorf("during or right after the restart: %v %v; want the cached 10.0.0.1", got, err)
			}
			// A JVM restart on a loaded machine takes long: the writer waits for its session.
			coordtest.WaitFor(t, 2*coordtest.RestartSessionTimeout, "writer reconnected", func() error {
				if st := s.State(); !st.Connected() {
					return fmt.Errorf("session %s", st)
				}
				return nil
			})
			r2 := mustAddr(t, "10.0.0.2:80")
			r2.TTL = time.Hour
			if err := RegisterTTL(ctx, s, n, r2); err != nil {
				t.Fatal(err)
			}
			waitA(t, sv.Addr(), "restart.svc.example.", "10.0.0.1", "10.0.0.2")
			<-changed
			coordtest.WaitFor(t, waitLong, "fresh cache", func() error {
				if sv.Cache().Stale() || sv.Cache().Age() != 0 {
					return fmt.Errorf("stale %v age %v", sv.Cache().Stale(), sv.Cache().Age())
				}
				return nil
			})
		})
	}
}

// TestNeverLoadedServfail: a server whose cache has not read the tree
// answers SERVFAIL, not NXDOMAIN.
func TestNeverLoadedServfail(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	sv, err := NewServer(dial(t, tg.Addr+"/"+chrootName(t)), ServerOptions{Listen: "127.0.0.1:0", Zone: testZone, Logger: coordtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := sv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sv.Close() })
	if _, status := dig(t, sv.Addr(), "api.svc.example.", "A", false); status != "SERVFAIL" {
		t.Errorf("from a cache never loaded: %s; want SERVFAIL", status)
	}
	_, err = lookupA(sv.Addr(), "api.svc.example.")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || dnsErr.IsNotFound {
		t.Errorf("Go's resolver from a cache never loaded: %v; want a temporary failure, not not-found", err)
	}
}

// testutilCount is the scanner's completed rounds.
func testutilCount(sc *Scanner) float64 { return counterValue(sc.metrics.rounds) }

var _ = context.Background

// TestAttackTCPConnectionsBounded: a client that opens TCP connections
// and keeps them open holds at most MaxTCPConns of the server's; another
// TCP query waits until one is closed, and UDP is served meanwhile.
func TestAttackTCPConnectionsBounded(t *testing.T) {
	tg := targets[0]
	tg.Require(t)
	sv, err := NewServer(dial(t, tg.Addr+"/"+chrootName(t)), ServerOptions{Listen: "127.0.0.1:0", Zone: testZone, Logger: coordtest.Logger(t), MaxTCPConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	sv.tcpIdle = 10 * time.Minute // the held connections must not time out during the test
	if err := sv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sv.Close() })
	query := func(network string, timeout time.Duration) error {
		c := &mdns.Client{Net: network, Timeout: timeout}
		m := new(mdns.Msg)
		m.SetQuestion("api.svc.example.", mdns.TypeA)
		_, _, err := c.Exchange(m, sv.Addr())
		return err
	}
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", sv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// Both held connections are served: a query on each is answered.
	for i, c := range held {
		m := new(mdns.Msg)
		m.SetQuestion("api.svc.example.", mdns.TypeA)
		dc := &mdns.Conn{Conn: c}
		if err := dc.WriteMsg(m); err != nil {
			t.Fatal(err)
		}
		if _, err := dc.ReadMsg(); err != nil {
			t.Fatalf("held connection %d not served: %v", i, err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- query("tcp", time.Minute) }()
	if err := query("udp", 10*time.Second); err != nil {
		t.Errorf("UDP while TCP is full: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("a third TCP connection was served while two were held (MaxTCPConns 2): %v", err)
	case <-time.After(500 * time.Millisecond):
		// Not served in half a second. A wait cannot fail a correct
		// server (the held connections do not time out), only miss a
		// wrong one that answers later.
	}
	held[0].Close()
	if err := <-done; err != nil {
		t.Errorf("the waiting TCP query after a connection closed: %v", err)
	}
	held[1].Close()
}
