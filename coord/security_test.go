package coord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// attack measures the server while a client that does not read is served:
// what the server retains for it must be bounded by Config.MaxQueuedBytes,
// not by what the client asks for.
type attack struct {
	srv  *Server
	base uint64 // heap in use before the attack, after a collection
	peak atomic.Uint64
	done chan struct{}
	stop sync.Once
	wg   sync.WaitGroup
}

// startAttack samples the heap in use until the test ends or
// closedWithBoundedHeap is called.
func startAttack(t *testing.T, srv *Server) *attack {
	a := &attack{srv: srv, base: heapInuse(), done: make(chan struct{})}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > a.peak.Load() {
				a.peak.Store(ms.HeapInuse)
			}
			select {
			case <-a.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(a.stopSampling)
	return a
}

func (a *attack) stopSampling() {
	a.stop.Do(func() { close(a.done) })
	a.wg.Wait()
}

// closedWithBoundedHeap waits until the server has closed one connection
// for not reading, then fails the test if the heap grew by more than
// attackHeapBound meanwhile.
func (a *attack) closedWithBoundedHeap(t *testing.T) {
	t.Helper()
	// A liveness bound only: under -race on a loaded machine the server
	// may take minutes to build the replies that reach the bound.
	checkFor(t, 5*time.Minute, 20*time.Millisecond, func() error {
		if n := counterValue(a.srv.metrics.slowClientsClosed); n != 1 {
			return fmt.Errorf("%v connections closed for not reading, want 1", n)
		}
		return nil
	})
	a.stopSampling()
	peak := a.peak.Load()
	t.Logf("heap before %d MiB, peak %d MiB", a.base>>20, peak>>20)
	if peak > a.base+attackHeapBound {
		t.Errorf("heap grew from %d MiB to %d MiB while a client did not read; want under %d MiB more", a.base>>20, peak>>20, attackHeapBound>>20)
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// liveHeap follows the heap in use, after a collection, at the steps of an
// attack: points where the server has queued, or refused, everything the
// attack caused so far. Garbage is left out, so the growth it reports is
// what the server holds, and the largest value is the most it held, to
// within one step.
type liveHeap struct{ base, peak uint64 }

func newLiveHeap() *liveHeap {
	h := heapInuse()
	return &liveHeap{base: h, peak: h}
}

func (h *liveHeap) measure() { h.peak = max(h.peak, heapInuse()) }

// grewUnder fails the test if the heap in use grew by bound or more.
func (h *liveHeap) grewUnder(t *testing.T, bound int64, what string) {
	t.Helper()
	growth := int64(h.peak) - int64(h.base)
	t.Logf("heap in use %d MiB at the start, at most %d MiB until the connection was closed", h.base>>20, h.peak>>20)
	if growth >= bound {
		t.Errorf("the heap in use grew by %d MiB; want under %d MiB (%s)", growth>>20, bound>>20, what)
	}
}

// attackHeapBound is how much the heap may grow while a client does not
// read: the 64 MiB the server may owe it, the garbage of encoding it, and
// room for a loaded machine's late collections. Without the bound the
// attacks below retain well over a gigabyte.
const attackHeapBound = 384 << 20

// flood writes n copies of a request packet to nc without reading, until
// the server closes the connection.
func flood(nc net.Conn, op proto.OpCode, body proto.Record, n int) {
	for i := range n {
		e := proto.NewEncoder(nil)
		e.Int(0)
		(&proto.RequestHeader{Xid: int32(i + 1), Type: op}).Encode(e)
		body.Encode(e)
		b := e.Bytes()
		b[0], b[1], b[2], b[3] = byte((len(b)-4)>>24), byte((len(b)-4)>>16), byte((len(b)-4)>>8), byte(len(b)-4)
		nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := nc.Write(b); err != nil {
			return // closed by the server, as it should be
		}
	}
}

// TestNonReadingClientIsClosed: a client that asks for a 10,000-child list
// thousands of times and never reads its replies (issue 9: 76 MB grew to
// 1.97 GB) is disconnected once it is owed 64 MiB, and the heap stays
// bounded meanwhile.
func TestNonReadingClientIsClosed(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.NoSync = true
	cfg.MaxSessionTimeout = 10 * time.Minute // the reader stops touching the session while the pipeline is busy
	srv := startServer(t, cfg)
	c := connect(t, srv.Addr(), 10*time.Second)
	if _, err := c.Create("/big", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10000; i += 1000 {
		ops := make([]any, 0, 1000)
		for j := i; j < i+1000; j++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("/big/child-%05d", j), Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := c.Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}

	attack := startAttack(t, srv)
	rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 600000, Passwd: make([]byte, 16)})
	// 6,000 replies of ~150 KB each: 900 MB if nothing bounded them.
	flood(rc.nc, proto.OpGetChildren, &proto.GetChildrenRequest{Path: "/big"}, 6000)
	attack.closedWithBoundedHeap(t)
	// Other clients are served as before. Their requests queued behind the
	// flood, so a client may have had to reconnect meanwhile.
	checkFor(t, time.Minute, 50*time.Millisecond, func() error {
		_, _, err := c.Children("/big")
		return err
	})
}

// TestNonReadingRecursiveWatcherIsClosed: a persistent recursive watch on
// the root whose client never reads, while 200,000 events are generated
// (issue 9: 33 MB grew to 1.56 GB), is disconnected once it is owed
// MaxQueuedEventBytes. The bound is lowered to 8 MiB so that 200,000 small
// events (20 MB) exceed it without the test writing gigabytes to the log.
func TestNonReadingRecursiveWatcherIsClosed(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.NoSync = true
	cfg.MaxQueuedEventBytes = 8 << 20
	cfg.MaxSessionTimeout = 10 * time.Minute // the watcher sends no pings
	srv := startServer(t, cfg)
	c := connect(t, srv.Addr(), 10*time.Second)
	dir := "/" + strings.Repeat("d", 60) // ~100-byte events
	if _, err := c.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	const nodes = 10
	for i := range nodes {
		if _, err := c.Create(fmt.Sprintf("%s/n%d", dir, i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}

	attack := startAttack(t, srv)
	rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 600000, Passwd: make([]byte, 16)})
	if h, _ := rc.call(proto.OpAddWatch, &proto.AddWatchRequest{Path: "/", Mode: proto.AddWatchPersistentRecursive}); h.Err != proto.ErrOK {
		t.Fatalf("addWatch: %v", h.Err)
	}
	// From here on the watcher never reads. Each multi returns after its
	// events are queued or the watcher is cut off.
	held := newLiveHeap()
	const events, perMulti = 200000, 1000
	for i := 0; i < events; i += perMulti {
		ops := make([]any, 0, perMulti)
		for j := range perMulti {
			ops = append(ops, &zk.SetDataRequest{Path: fmt.Sprintf("%s/n%d", dir, j%nodes), Data: []byte("x"), Version: -1})
		}
		if _, err := c.Multi(ops...); err != nil {
			t.Fatalf("multi %d: %v", i/perMulti, err)
		}
		if counterValue(srv.metrics.slowClientsClosed) == 0 {
			held.measure()
		}
	}
	attack.closedWithBoundedHeap(t)
	// The events are ~100 bytes, so what the server holds per event besides
	// its bytes (frameOverhead) is counted against the bound, or the heap
	// grows by a multiple of it.
	held.grewUnder(t, cfg.MaxQueuedEventBytes+2<<20, "max-queued-event-bytes + 2 MiB")
	rc.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, rc.nc); err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("reading the closed watcher's connection: %v", err)
	}
}

func isReset(err error) bool { return strings.Contains(err.Error(), "connection reset") }

// watchedTree is n nodes below a directory with a long name (the events
// of their watches are that long), created through writer, for the tests
// of a watcher that stops reading.
type watchedTree struct {
	t           testing.TB
	writer      *zk.Conn
	dir         string
	n, perMulti int
}

// newWatchedTree creates the directory, dirLen bytes long, and its n
// nodes, perMulti to a request.
func newWatchedTree(t testing.TB, writer *zk.Conn, dirLen, n, perMulti int) *watchedTree {
	t.Helper()
	w := &watchedTree{t: t, writer: writer, dir: "/" + strings.Repeat("w", dirLen), n: n, perMulti: perMulti}
	if _, err := writer.Create(w.dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	w.each(func(path string) any { return &zk.CreateRequest{Path: path, Acl: zk.WorldACL(zk.PermAll)} }, func() {})
	return w
}

func (w *watchedTree) node(i int) string { return fmt.Sprintf("%s/n%05d", w.dir, i) }

// each sends op for every node, perMulti to a multi, calling between
// after each multi returns.
func (w *watchedTree) each(op func(path string) any, between func()) {
	w.t.Helper()
	for i := 0; i < w.n; i += w.perMulti {
		ops := make([]any, 0, w.perMulti)
		for j := i; j < i+w.perMulti; j++ {
			ops = append(ops, op(w.node(j)))
		}
		if _, err := w.writer.Multi(ops...); err != nil {
			w.t.Fatalf("multi at node %d: %v", i, err)
		}
		between()
	}
}

// watch sets a data watch on every node through rc, reading the replies.
func (w *watchedTree) watch(rc *rawClient) {
	w.t.Helper()
	for i := range w.n {
		if h, _ := rc.call(proto.OpGetData, &proto.GetDataRequest{Path: w.node(i), Watch: true}); h.Err != proto.ErrOK {
			w.t.Fatalf("getData %d with a watch: %v", i, h.Err)
		}
	}
}

// fire sets every node's data, which fires its watch; between runs after
// each multi, once the server has queued that multi's events.
func (w *watchedTree) fire(between func()) {
	w.each(func(path string) any { return &zk.SetDataRequest{Path: path, Version: -1} }, between)
}

// TestNonReadingDataWatcherIsClosed: issue 22's probe. A client sets
// 10,000 data watches, then stops reading while another session's setData
// fires them all: 30 MB of events (3 KB paths). The server closes its
// connection once it owes max-queued-event-bytes of events (the default,
// 16 MiB), drops its session's watches and keeps the session. Before
// the events had a bound of their own they counted against the 64 MiB of
// replies, which they never reached: the connection was kept, holding
// them all. What the server's memory does is TestNonReadingWatcherProcessRSS's:
// here each fired watch frees as much path as its event costs, so the
// heap in use stays level with or without a bound.
func TestNonReadingDataWatcherIsClosed(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.NoSync = true
	cfg.MaxSessionTimeout = 10 * time.Minute // the watcher sends no pings
	srv := startServer(t, cfg)
	const watches = 10000
	tree := newWatchedTree(t, connect(t, srv.Addr(), 10*time.Second), 3000, watches, 200) // 200 setData of 3 KB paths fit one request
	rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 600000, Passwd: make([]byte, 16)})
	tree.watch(rc)
	// A watch that no write fires: it is still registered when the
	// connection is closed, unless the close drops it.
	if h, _ := rc.call(proto.OpExists, &proto.ExistsRequest{Path: "/never-written", Watch: true}); h.Err != proto.ErrNoNode {
		t.Fatalf("exists /never-written with a watch: %v", h.Err)
	}
	// From here on the watcher never reads.
	closed := func() bool { return counterValue(srv.metrics.slowClientsClosed) == 1 }
	tree.fire(func() {})
	if !closed() {
		t.Fatalf("after %d events the watcher's connection was not closed for not reading (%v closed)",
			watches, counterValue(srv.metrics.slowClientsClosed))
	}
	rc.nc.SetReadDeadline(time.Now().Add(30 * time.Second)) // a liveness bound: the server has closed it
	if _, err := io.Copy(io.Discard, rc.nc); err != nil && !isReset(err) {
		t.Fatalf("draining the watcher's connection: %v; want it closed by the server", err)
	}

	var left []string
	srv.pipe.query(func() { left = srv.pipe.watches.BySession()[rc.resp.SessionID] })
	if len(left) != 0 {
		t.Errorf("the closed connection's session still holds watches %q; want them dropped", left)
	}
	// The session itself lives on, as in ZooKeeper: its client may
	// reconnect (and would re-send its watches).
	again := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 600000, SessionID: rc.resp.SessionID, Passwd: rc.resp.Passwd})
	if again.resp.SessionID != rc.resp.SessionID || again.resp.TimeOut <= 0 {
		t.Fatalf("reconnecting to session %#x: got session %#x, timeout %d; want the session kept",
			rc.resp.SessionID, again.resp.SessionID, again.resp.TimeOut)
	}
	if h, _ := again.call(proto.OpExists, &proto.ExistsRequest{Path: tree.dir}); h.Err != proto.ErrOK {
		t.Fatalf("exists on the reconnected session: %v", h.Err)
	}
}

// TestIdlePreHandshakeSocketsAreClosed: sockets that never send a connect
// request are closed after the handshake timeout (issue 9: 3,000 were held
// for 30 s), and a slow partial handshake too; connected clients are not
// affected by it.
func TestIdlePreHandshakeSocketsAreClosed(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.NoSync = true
	cfg.MaxClientConns = 0
	cfg.HandshakeTimeout = 300 * time.Millisecond
	srv := startServer(t, cfg)
	c := connect(t, srv.Addr(), 10*time.Second)

	const idle = 300
	socks := make([]net.Conn, 0, idle)
	for range idle {
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		socks = append(socks, nc)
	}
	socks[0].Write([]byte{0, 0}) // half a length prefix, then nothing
	for i, nc := range socks {
		nc.SetReadDeadline(time.Now().Add(60 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err == nil || !(errors.Is(err, io.EOF) || isReset(err)) {
			t.Fatalf("idle socket %d: read %v, want it closed by the server", i, err)
		}
	}
	if n := counterValue(srv.metrics.handshakeTimeouts); n != idle {
		t.Errorf("handshake timeouts counted %v, want %d", n, idle)
	}
	time.Sleep(3 * cfg.HandshakeTimeout) // longer than the timeout, not a timing assertion
	if _, err := c.Create("/still-served", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("a client connected before the timeout: %v", err)
	}
}

// TestRequestLimitAboveLogRecordRefused: a jute.maxbuffer above what one
// log record can hold is refused at start, from every source (issue 9: a
// large setData then stopped the server at every restart).
func TestRequestLimitAboveLogRecordRefused(t *testing.T) {
	over := MaxRequestBytesLimit + 1
	dir := t.TempDir()
	for name, load := range map[string]func(cfg *Config) error{
		"config": func(cfg *Config) error { cfg.MaxRequestBytes = over; return nil },
		"zoo.cfg": func(cfg *Config) error {
			_, err := LoadZooCfg(context.Background(), writeFile(t, "zoo.cfg", fmt.Sprintf("dataDir=%s\njute.maxbuffer=%d\n", dir, over)), cfg)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(dir)
			if err := load(&cfg); err != nil {
				t.Fatal(err)
			}
			srv, err := NewServer(cfg)
			if err == nil {
				srv.Close()
				t.Fatalf("NewServer accepted max-request-bytes %d", over)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "max-request-bytes (jute.maxbuffer)") ||
				!strings.Contains(err.Error(), fmt.Sprint(MaxRequestBytesLimit)) {
				t.Fatalf("error %v; want ErrConfig naming max-request-bytes and its limit", err)
			}
		})
	}
}

// TestQueueBoundsBelowLargestFrameRefused: a bound on queued replies or
// events that the largest reply or event (max-request-bytes) would
// overflow is refused at start, naming the setting.
func TestQueueBoundsBelowLargestFrameRefused(t *testing.T) {
	for name, set := range map[string]func(*Config, int64){
		"max-queued-bytes":       func(cfg *Config, n int64) { cfg.MaxQueuedBytes = n },
		"max-queued-event-bytes": func(cfg *Config, n int64) { cfg.MaxQueuedEventBytes = n },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			set(&cfg, int64(cfg.MaxRequestBytes))
			srv, err := NewServer(cfg)
			if err == nil {
				srv.Close()
				t.Fatalf("NewServer accepted %s = max-request-bytes", name)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), name+" ") {
				t.Fatalf("error %v; want ErrConfig naming %s", err, name)
			}
		})
	}
}

// TestLargestRequestSurvivesRestart: a setData of the largest allowed size
// is logged, served, and recovered after a restart.
func TestLargestRequestSurvivesRestart(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxRequestBytes = MaxRequestBytesLimit
	cfg.MaxSessionTimeout = 10 * time.Minute // the raw client sends no pings
	srv := startServer(t, cfg)
	c := connect(t, srv.Addr(), 10*time.Second)
	if _, err := c.Create("/huge", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	// The packet: xid and op (8), path (4+5), data (4+n), version (4).
	data := bytes.Repeat([]byte("0123456789abcdef"), MaxRequestBytesLimit/16)[:MaxRequestBytesLimit-8-9-4-4]
	rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 600000, Passwd: make([]byte, 16)})
	if h, _ := rc.call(proto.OpSetData, &proto.SetDataRequest{Path: "/huge", Data: data, Version: -1}); h.Err != proto.ErrOK {
		t.Fatalf("setData of %d bytes: %v", len(data), h.Err)
	}
	srv.Close()
	srv = startServer(t, cfg)
	rc = dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 600000, Passwd: make([]byte, 16)})
	h, d := rc.call(proto.OpGetData, &proto.GetDataRequest{Path: "/huge"})
	var got proto.GetDataResponse
	mustDecode(t, d, &got)
	if h.Err != proto.ErrOK || string(got.Data) != string(data) {
		t.Fatalf("after restart: %v, %d bytes; want the %d bytes written", h.Err, len(got.Data), len(data))
	}
}

// TestFourLetterWordsDefaultToSrvr: as in ZooKeeper 3.5 and later, only
// srvr answers unless the operator enables more.
func TestFourLetterWordsDefaultToSrvr(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FourLetterWords = DefaultConfig().FourLetterWords
	srv := startServer(t, cfg)
	if got := fourLetter(t, srv.Addr(), "srvr"); !strings.Contains(got, "Mode: standalone") {
		t.Errorf("srvr = %q", got)
	}
	for _, w := range []string{"ruok", "mntr", "cons", "dump", "envi", "conf", "wchc", "crst"} {
		if got := fourLetter(t, srv.Addr(), w); got != w+" is not executed because it is not in the whitelist.\n" {
			t.Errorf("%s with the default whitelist = %q", w, got)
		}
	}
}

// TestStatsResetWords: crst and srst reset the statistics as ZooKeeper's do.
func TestStatsResetWords(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	c := connect(t, srv.Addr(), 10*time.Second)
	for range 5 {
		c.Exists("/")
	}
	c.Close()
	checkFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if n := len(srv.snapshotConns()); n != 0 {
			return fmt.Errorf("%d connections still open", n)
		}
		return nil
	})
	if got := fourLetter(t, srv.Addr(), "srvr"); strings.Contains(got, "Received: 0\n") {
		t.Fatalf("srvr before srst already shows no packets: %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "srst"); got != "Server stats reset.\n" {
		t.Fatalf("srst = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "srvr"); !strings.Contains(got, "Received: 0\nSent: 0\n") || !strings.Contains(got, "Latency min/avg/max: 0/0.0000/0\n") {
		t.Errorf("srvr after srst = %q", got)
	}

	rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	rc.call(proto.OpExists, &proto.ExistsRequest{Path: "/"})
	if got := fourLetter(t, srv.Addr(), "cons"); !strings.Contains(got, "recved=2,sent=2") {
		t.Fatalf("cons before crst = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "crst"); got != "Connection stats reset.\n" {
		t.Fatalf("crst = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "cons"); !strings.Contains(got, "recved=0,sent=0,") || !strings.Contains(got, "lop=NA") ||
		!strings.Contains(got, "lcxid=0xffffffffffffffff,lzxid=0xffffffffffffffff") {
		t.Errorf("cons after crst = %q", got)
	}
}

// TestPprofOnlyWithItsFlag: --admin-listen alone serves no profiles.
func TestPprofOnlyWithItsFlag(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := testConfig(t.TempDir())
		cfg.AdminListen = "127.0.0.1:0"
		cfg.AdminPprof = on
		srv := startServer(t, cfg)
		for path, want := range map[string]int{"/debug/pprof/": map[bool]int{false: 404, true: 200}[on], "/health": 200} {
			resp, err := http.Get("http://" + srv.AdminAddr() + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("admin-pprof=%v: GET %s = %d, want %d", on, path, resp.StatusCode, want)
			}
		}
	}
}

// TestZooCfgWithoutDataDirRefused: ZooKeeper refuses a zoo.cfg that does
// not say where its data goes ("dataDir is not set"); so do we.
func TestZooCfgWithoutDataDirRefused(t *testing.T) {
	cfg := DefaultConfig()
	_, err := LoadZooCfg(context.Background(), writeFile(t, "zoo.cfg", "tickTime=2000\nclientPort=2181\n"), &cfg)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "dataDir is not set") {
		t.Fatalf("zoo.cfg without dataDir: %v; want ErrConfig saying dataDir is not set", err)
	}
}

// TestDamagedSessionSecretRefused: a session.secret of the wrong length
// stops the start and is left as it was, not silently replaced (which
// would invalidate every session's password).
func TestDamagedSessionSecretRefused(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, testConfig(dir))
	srv.Close()
	path := filepath.Join(dir, "session.secret")
	for _, damaged := range [][]byte{{}, make([]byte, 16), make([]byte, 33)} {
		if err := os.WriteFile(path, damaged, 0o600); err != nil {
			t.Fatal(err)
		}
		srv, err := NewServer(testConfig(dir))
		if err == nil {
			srv.Close()
			t.Fatalf("started with a %d-byte session.secret", len(damaged))
		}
		if !errors.Is(err, ErrDataDir) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprintf("has %d bytes, want 32", len(damaged))) {
			t.Errorf("%d-byte secret: %v", len(damaged), err)
		}
		if b, _ := os.ReadFile(path); len(b) != len(damaged) {
			t.Errorf("the damaged secret was replaced (%d bytes now)", len(b))
		}
	}
}

// TestAdminCredentialGenerated: the first start writes admin.auth, 0600,
// "shepherd:" and 32 URL-safe characters; later starts keep it; a file
// others may read stops the start; --admin-auth-file moves it.
func TestAdminCredentialGenerated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "admin.auth")
	srv := startServer(t, testConfig(dir))
	srv.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("admin.auth mode %04o, want 0600", fi.Mode().Perm())
	}
	first, _ := os.ReadFile(path)
	if !regexp.MustCompile(`^shepherd:[A-Za-z0-9_-]{32}\n$`).Match(first) {
		t.Fatalf("admin.auth = %q, want shepherd:<32 URL-safe base64 characters>", first)
	}
	srv = startServer(t, testConfig(dir))
	srv.Close()
	if again, _ := os.ReadFile(path); string(again) != string(first) {
		t.Fatalf("admin.auth changed across a restart: %q then %q", first, again)
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if srv, err := NewServer(testConfig(dir)); err == nil {
		srv.Close()
		t.Fatal("started with admin.auth readable by others")
	} else if !errors.Is(err, ErrDataDir) || !strings.Contains(err.Error(), "chmod 600 "+path) {
		t.Fatalf("admin.auth 0644: %v; want ErrDataDir telling to chmod 600", err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(first) {
		t.Fatal("a refused start rewrote admin.auth")
	}

	cfg := testConfig(t.TempDir())
	cfg.AdminAuthFile = filepath.Join(t.TempDir(), "elsewhere.auth")
	srv = startServer(t, cfg)
	srv.Close()
	if _, err := os.Stat(cfg.AdminAuthFile); err != nil {
		t.Errorf("--admin-auth-file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "admin.auth")); !os.IsNotExist(err) {
		t.Errorf("admin.auth written to the data dir although --admin-auth-file was given: %v", err)
	}
}

// An attacker sending every op code it can think of must not grow the
// server's metrics: op codes outside the protocol share one label.
func TestUnknownOpCodesShareOneMetricLabel(t *testing.T) {
	srv := startServer(t, testConfig(t.TempDir()))
	const sent = 50
	for i := range sent {
		rc := dialRaw(t, srv.Addr(), proto.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
		// The server may answer with an error or close the connection:
		// either way the request was counted.
		rc.xid++
		e := proto.NewEncoder(nil)
		(&proto.RequestHeader{Xid: rc.xid, Type: proto.OpCode(10000 + i)}).Encode(e)
		rc.write(e.Bytes())
		rc.read() //nolint:errcheck // only waiting for the server to handle it
	}
	families, err := srv.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "shepherd_coord_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if labels["unknown"] != sent {
		t.Errorf("requests_total{op=unknown} = %v, want %d (labels: %v)", labels["unknown"], sent, labels)
	}
	for l := range labels {
		if strings.HasPrefix(l, "op(") {
			t.Errorf("requests_total has a label per unknown op code: %q", l)
		}
	}
}
