package dns

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	mdns "github.com/miekg/dns"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// The benchmark's registry: benchNames names of benchPerName addresses,
// 10,000 in all, each answer (strategy all) ten A records.
const (
	benchNames   = 1000
	benchPerName = 10
	benchWorkers = 8
)

// benchEnv is the benchmarks' registry and DNS server, made once per
// test binary: 10,000 addresses take a while to register.
var benchEnv struct {
	once sync.Once
	s    *recipe.Session
	addr string
	err  error
}

// benchServer returns the session and the address of a DNS server whose
// cache holds the 10,000 addresses. They live until the binary exits.
func benchServer(b *testing.B) (*recipe.Session, string) {
	tg := targets[0] // shepherd coord in process
	tg.Require(b)
	benchEnv.once.Do(func() {
		ctx := context.Background()
		connect := tg.Addr + "/" + fmt.Sprintf("bench-dns-%d", time.Now().UnixNano())
		s, err := recipe.Dial(ctx, connect, recipe.Options{SessionTimeout: 10 * time.Second, Auth: coordtest.Auth})
		if err != nil {
			benchEnv.err = err
			return
		}
		if _, err := s.EnsureSubtree(ctx, Subtrees()[0]); err != nil {
			benchEnv.err = err
			return
		}
		if benchEnv.err = registerBulk(s); benchEnv.err != nil {
			return
		}
		sv, err := NewServer(s, ServerOptions{Listen: "127.0.0.1:0", Zone: testZone, Logger: slog.New(slog.DiscardHandler)})
		if err == nil {
			err = sv.Start()
		}
		if err != nil {
			benchEnv.err = err
			return
		}
		go func() { _ = sv.Run(ctx) }()
		began := time.Now()
		for sv.Cache().Table().Addresses < benchNames*benchPerName {
			select {
			case <-sv.Cache().Changed():
			case <-time.After(2 * time.Minute):
				benchEnv.err = fmt.Errorf("cache has %d addresses after 2 min", sv.Cache().Table().Addresses)
				return
			}
		}
		b.Logf("cache loaded 10,000 addresses in %v", time.Since(began).Round(time.Millisecond))
		benchEnv.s, benchEnv.addr = s, sv.Addr()
	})
	if benchEnv.err != nil {
		b.Fatal(benchEnv.err)
	}
	return benchEnv.s, benchEnv.addr
}

// BenchmarkDNS measures `shepherd dns` answering A queries over UDP for
// 10,000 registered addresses (qps and latency percentiles), and the
// same library serving a fixed answer of the same size (static). Not
// part of make bench; run it on its own:
//
//	SHEPHERD_IT=1 go test -run '^$' -bench 'BenchmarkDNS$' -benchtime 20000x ./dns/
func BenchmarkDNS(b *testing.B) {
	_, addr := benchServer(b)
	b.Run("shepherd", func(b *testing.B) { queryLoad(b, addr) })
	b.Run("static", func(b *testing.B) { queryLoad(b, staticServer(b)) })
}

// BenchmarkDNSChange measures, with the 10,000 addresses registered,
// the time from a registration to the first answer that has it: one
// watch round trip, a re-read of that name and a new table.
//
//	SHEPHERD_IT=1 go test -run '^$' -bench BenchmarkDNSChange -benchtime 200x ./dns/
func BenchmarkDNSChange(b *testing.B) {
	s, addr := benchServer(b)
	ctx := context.Background()
	n, _ := NewName("bench", "changed.svc.example")
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 200, byte(i >> 8), byte(i)}), 80)
		start := time.Now()
		if err := RegisterTTL(ctx, s, n, Registration{Addr: a, TTL: time.Hour}); err != nil {
			b.Fatal(err)
		}
		for !answers(addr, "changed.svc.example.", a.Addr().String()) {
			time.Sleep(50 * time.Microsecond)
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		if err := Deregister(ctx, s, n, a); err != nil {
			b.Fatal(err)
		}
		for answers(addr, "changed.svc.example.", a.Addr().String()) {
			time.Sleep(50 * time.Microsecond)
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// registerBulk creates the benchmark's providers with multis of 500
// creates (heartbeat-registered, never judged: no scanner runs).
func registerBulk(s *recipe.Session) error {
	ctx := context.Background()
	var ops []any
	flush := func() error {
		_, err := s.Multi(ctx, ops...)
		ops = ops[:0]
		return err
	}
	for i := range benchNames {
		n, err := NewName("bench", fmt.Sprintf("n%d.svc.example", i))
		if err != nil {
			return err
		}
		if err := s.EnsurePath(ctx, n.dir(dirProviders)); err != nil {
			return err
		}
		for j := range benchPerName {
			a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), byte(j + 1)}), 80)
			p := Provider{Version: schemaVersion, Addr: a.String(), Weight: 1, TTL: time.Hour}
			ops = append(ops, &zk.CreateRequest{Path: n.provider(a), Data: encode(p), Acl: s.NodeACL(), Flags: zk.FlagPersistent})
			if len(ops) == 500 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if len(ops) > 0 {
		return flush()
	}
	return nil
}

// answers reports whether the A answer of name from addr has ip.
func answers(addr, name, ip string) bool {
	m := new(mdns.Msg)
	m.SetQuestion(name, mdns.TypeA)
	r, err := mdns.Exchange(m, addr)
	if err != nil {
		return false
	}
	for _, rr := range r.Answer {
		if a, ok := rr.(*mdns.A); ok && a.A.String() == ip {
			return true
		}
	}
	return false
}

// staticServer serves, with the same library, one fixed answer of ten A
// records to every query: the baseline.
func staticServer(b *testing.B) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var rrs []mdns.RR
	for j := range benchPerName {
		rrs = append(rrs, &mdns.A{Hdr: mdns.RR_Header{Name: "n0.svc.example.", Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 5},
			A: net.IPv4(10, 0, 0, byte(j+1))})
	}
	srv := &mdns.Server{PacketConn: pc, Handler: mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		m.Answer = rrs
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	b.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

// queryLoad sends b.N A queries for random names over UDP from
// benchWorkers clients, and reports qps and latency percentiles.
func queryLoad(b *testing.B, addr string) {
	var next atomic.Int64
	lats := make([][]time.Duration, benchWorkers)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range benchWorkers {
		wg.Go(func() {
			c := &mdns.Client{Net: "udp", Timeout: 5 * time.Second}
			conn, err := c.Dial(addr)
			if err != nil {
				b.Error(err)
				return
			}
			defer conn.Close()
			m := new(mdns.Msg)
			for next.Add(1) <= int64(b.N) {
				m.SetQuestion(fmt.Sprintf("n%d.svc.example.", rand.IntN(benchNames)), mdns.TypeA)
				t0 := time.Now()
				r, _, err := c.ExchangeWithConn(m, conn)
				if err != nil || len(r.Answer) != benchPerName {
					b.Errorf("answer %v: %v", r, err)
					return
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lats...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "qps")
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}
