package coord

import (
	"fmt"
	"github.com/shepherd-dev/shepherd/coord/proto"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Version is what `srvr` and mntr report. Clients and tools parse the
// leading ZooKeeper version to decide which features they may use, so it
// names the ZooKeeper release whose protocol we speak.
const Version = "3.8.0-shepherd"

var fourLetterWords = []string{"ruok", "srvr", "stat", "mntr", "conf", "envi", "isro", "cons", "wchs", "dump", "wchc", "wchp", "dirs", "crst", "srst"}

// fourLetterWord recognises a four-letter word in the first four bytes of a
// connection, where a ZooKeeper packet would have its length.
func fourLetterWord(b [4]byte) (string, bool) {
	w := string(b[:])
	for _, k := range fourLetterWords {
		if w == k {
			return w, true
		}
	}
	return "", false
}

func (s *Server) fourLetterAllowed(word string) bool {
	for _, w := range s.cfg.FourLetterWords {
		if w == "*" || w == word {
			return true
		}
	}
	return false
}

// serveFourLetter writes the answer to a four-letter word; the caller closes.
func (s *Server) serveFourLetter(c *conn, word string) {
	var out string
	if !s.fourLetterAllowed(word) {
		out = word + " is not executed because it is not in the whitelist.\n"
	} else {
		out = s.fourLetter(word)
	}
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	c.nc.Write([]byte(out))
}

// FourLetter returns the server's answer to a four-letter word, whitelist
// aside (the admin HTTP endpoint and tests use it).
func (s *Server) FourLetter(word string) string { return s.fourLetter(word) }

func (s *Server) fourLetter(word string) string {
	switch word {
	case "ruok":
		return "imok"
	case "isro":
		return "rw"
	case "srvr":
		return s.srvr(false)
	case "stat":
		return s.srvr(true)
	case "mntr":
		return s.mntr()
	case "conf":
		return s.conf()
	case "envi":
		return s.envi()
	case "cons":
		return s.cons()
	case "wchs":
		return s.wchs()
	case "wchc":
		return s.wchc()
	case "wchp":
		return s.wchp()
	case "dump":
		return s.dump()
	case "dirs":
		return s.dirs()
	case "crst":
		for _, c := range s.snapshotConns() {
			c.resetStats()
		}
		return "Connection stats reset.\n"
	case "srst":
		s.totals.packetsIn.Store(0)
		s.totals.packetsOut.Store(0)
		s.totals.latency.reset()
		return "Server stats reset.\n"
	}
	return ""
}

// serverStats is a consistent read of the pipeline's state.
type serverStats struct {
	zxid       int64
	nodes      int
	ephemerals int
	dataBytes  int64
	watches    int
	watchPaths int
	watchConns int
	sessions   int
}

func (s *Server) stats() serverStats {
	var st serverStats
	s.pipe.query(func() {
		p := s.pipe
		st = serverStats{
			zxid:       p.tree.LastZxid(),
			nodes:      p.tree.NodeCount() + 1, // ZooKeeper counts the root twice; tools compare this figure
			ephemerals: p.tree.EphemeralCount(),
			dataBytes:  p.tree.ApproxDataBytes(),
			watches:    p.watches.Count(),
			watchPaths: p.watches.Paths(),
			watchConns: len(p.watches.BySession()),
			sessions:   len(p.sessions),
		}
	})
	return st
}

func (s *Server) srvr(withClients bool) string {
	st := s.stats()
	recv, sent := s.totals.packetsIn.Load(), s.totals.packetsOut.Load()
	min, avg, max := s.totals.latency.millis()
	var b strings.Builder
	fmt.Fprintf(&b, "Zookeeper version: %s, built on %s\n", Version, runtime.Version())
	if withClients {
		b.WriteString("Clients:\n")
		for _, c := range s.snapshotConns() {
			fmt.Fprintf(&b, " /%s[1](queued=0,recved=%d,sent=%d)\n", c.remote, c.packetsIn.Load(), c.packetsOut.Load())
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Latency min/avg/max: %.0f/%.4f/%.0f\n", min, avg, max)
	fmt.Fprintf(&b, "Received: %d\nSent: %d\nConnections: %d\nOutstanding: %d\n", recv, sent, len(s.snapshotConns()), len(s.pipe.reqs))
	fmt.Fprintf(&b, "Zxid: %#x\nMode: standalone\nNode count: %d\n", st.zxid, st.nodes)
	return b.String()
}

func (s *Server) mntr() string {
	st := s.stats()
	recv, sent := s.totals.packetsIn.Load(), s.totals.packetsOut.Load()
	min, avg, max := s.totals.latency.millis()
	fds, maxFds := openFDs()
	kv := [][2]string{
		{"zk_version", Version + ", built on " + runtime.Version()},
		{"zk_server_state", "standalone"},
		{"zk_avg_latency", fmt.Sprintf("%.4f", avg)},
		{"zk_max_latency", fmt.Sprintf("%.0f", max)},
		{"zk_min_latency", fmt.Sprintf("%.0f", min)},
		{"zk_packets_received", fmt.Sprint(recv)},
		{"zk_packets_sent", fmt.Sprint(sent)},
		{"zk_num_alive_connections", fmt.Sprint(len(s.snapshotConns()))},
		{"zk_outstanding_requests", fmt.Sprint(len(s.pipe.reqs))},
		{"zk_znode_count", fmt.Sprint(st.nodes)},
		{"zk_watch_count", fmt.Sprint(st.watches)},
		{"zk_ephemerals_count", fmt.Sprint(st.ephemerals)},
		{"zk_approximate_data_size", fmt.Sprint(st.dataBytes)},
		{"zk_open_file_descriptor_count", fmt.Sprint(fds)},
		{"zk_max_file_descriptor_count", fmt.Sprint(maxFds)},
		{"zk_global_sessions", fmt.Sprint(st.sessions)},
		{"zk_local_sessions", "0"},
		{"zk_uptime", fmt.Sprint(time.Since(s.start).Milliseconds())},
		{"zk_last_zxid", fmt.Sprintf("%#x", st.zxid)},
	}
	var b strings.Builder
	for _, e := range kv {
		b.WriteString(e[0] + "\t" + e[1] + "\n")
	}
	return b.String()
}

func (s *Server) conf() string {
	_, port, _ := net.SplitHostPort(s.Addr())
	logDir := s.cfg.DataLogDir
	if logDir == "" {
		logDir = s.cfg.DataDir
	}
	var b strings.Builder
	fmt.Fprintf(&b, "clientPort=%s\nsecureClientPort=-1\n", port)
	fmt.Fprintf(&b, "dataDir=%s\ndataDirSize=%d\n", abs(s.cfg.DataDir), dirSize(s.cfg.DataDir))
	fmt.Fprintf(&b, "dataLogDir=%s\ndataLogSize=%d\n", abs(logDir), dirSize(logDir))
	fmt.Fprintf(&b, "tickTime=%d\nmaxClientCnxns=%d\n", s.cfg.TickTime.Milliseconds(), s.cfg.MaxClientConns)
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n", s.cfg.MinSessionTimeout.Milliseconds(), s.cfg.MaxSessionTimeout.Milliseconds())
	fmt.Fprintf(&b, "clientPortListenBacklog=-1\nserverId=0\n")
	return b.String()
}

// envi lists the environment under ZooKeeper's keys, so tools that parse
// them work; the java.* keys describe the Go runtime and binary instead.
func (s *Server) envi() string {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	exe, _ := os.Executable()
	osVersion, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	home, _ := os.UserHomeDir()
	userName := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		userName = u.Username
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mb := func(b uint64) string { return fmt.Sprintf("%dMB", b>>20) }
	kv := [][2]string{
		{"zookeeper.version", Version + ", built on " + runtime.Version()},
		{"host.name", host},
		{"java.version", runtime.Version()},
		{"java.vendor", "Shepherd (Go runtime)"},
		{"java.home", filepath.Dir(exe)},
		{"java.class.path", exe},
		{"java.library.path", ""},
		{"java.io.tmpdir", os.TempDir()},
		{"java.compiler", "<NA>"},
		{"os.name", runtime.GOOS},
		{"os.arch", runtime.GOARCH},
		{"os.version", strings.TrimSpace(string(osVersion))},
		{"user.name", userName},
		{"user.home", home},
		{"user.dir", wd},
		{"os.memory.free", mb(ms.HeapIdle)},
		{"os.memory.max", mb(ms.Sys)},
		{"os.memory.total", mb(ms.HeapSys)},
	}
	var b strings.Builder
	b.WriteString("Environment:\n")
	for _, e := range kv {
		b.WriteString(e[0] + "=" + e[1] + "\n")
	}
	return b.String()
}

func (s *Server) cons() string {
	var b strings.Builder
	for _, c := range s.snapshotConns() {
		sess := c.sess.Load()
		if sess == nil { // a four-letter-word or not yet handshaken connection
			fmt.Fprintf(&b, " /%s[0](queued=0,recved=%d,sent=%d)\n", c.remote, c.packetsIn.Load(), c.packetsOut.Load())
			continue
		}
		min, avg, max := c.latency.millis()
		fmt.Fprintf(&b, " /%s[1](queued=0,recved=%d,sent=%d,sid=%#x,lop=%s,est=%d,to=%d,lcxid=%#x,lzxid=%#x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d)\n",
			c.remote, c.packetsIn.Load(), c.packetsOut.Load(), sess.id, lastOpName(proto.OpCode(c.lastOp.Load())),
			c.created.UnixMilli(), sess.timeout.Milliseconds(), uint64(int64(c.lastCxid.Load())), uint64(c.lastZxid.Load()), c.lastResp.Load(),
			c.lastLatency.Load()/1e6, int64(min), int64(avg), int64(max))
	}
	b.WriteString("\n")
	return b.String()
}

// lastOpName abbreviates an op as ZooKeeper's cons shows it ("lop").
func lastOpName(op proto.OpCode) string {
	switch op {
	case proto.OpPing:
		return "PING"
	case proto.OpCreateSession:
		return "SESS"
	case proto.OpMulti:
		return "MULT"
	case proto.OpMultiRead:
		return "MLTR"
	case proto.OpCreate, proto.OpCreate2, proto.OpCreateContainer, proto.OpCreateTTL:
		return "CREA"
	case proto.OpDelete:
		return "DELE"
	case proto.OpSetData:
		return "SETD"
	case proto.OpExists:
		return "EXIS"
	case proto.OpGetData:
		return "GETD"
	case proto.OpSetACL:
		return "SACL"
	case proto.OpGetACL:
		return "GACL"
	case proto.OpGetChildren, proto.OpGetChildren2:
		return "GETC"
	case proto.OpSync:
		return "SYNC"
	case proto.OpCheck:
		return "CHEC"
	case proto.OpSetWatches, proto.OpSetWatches2:
		return "SETW"
	case proto.OpCloseSession:
		return "CLOS"
	case proto.OpAddWatch:
		return "ADDW"
	case proto.OpRemoveWatches:
		return "REMW"
	case proto.OpCheckWatches:
		return "CHKW"
	case proto.OpGetEphemerals:
		return "GETE"
	case proto.OpGetAllChildrenNumber:
		return "GETACN"
	case proto.OpWhoAmI:
		return "HOMI"
	}
	return "NA"
}

func (s *Server) wchs() string {
	st := s.stats()
	return fmt.Sprintf("%d connections watching %d paths\nTotal watches:%d\n", st.watchConns, st.watchPaths, st.watches)
}

func (s *Server) wchc() string {
	var bySess map[int64][]string
	s.pipe.query(func() { bySess = s.pipe.watches.BySession() })
	ids := make([]int64, 0, len(bySess))
	for id := range bySess {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%#x\n", id)
		paths := bySess[id]
		sort.Strings(paths)
		for _, p := range paths {
			fmt.Fprintf(&b, "\t%s\n", p)
		}
	}
	return b.String()
}

func (s *Server) wchp() string {
	var byPath map[string][]int64
	s.pipe.query(func() { byPath = s.pipe.watches.ByPath() })
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, "%s\n", p)
		for _, id := range byPath[p] {
			fmt.Fprintf(&b, "\t%#x\n", id)
		}
	}
	return b.String()
}

// javaDate formats t as Java's Date.toString, which ZooKeeper's dump uses.
func javaDate(t time.Time) string { return t.Format("Mon Jan 02 15:04:05 MST 2006") }

func (s *Server) dump() string {
	type sessDump struct {
		id         int64
		expires    time.Time
		ephemerals []string
	}
	var sessions []sessDump
	s.pipe.query(func() {
		for id, sess := range s.pipe.sessions {
			exp := time.Unix(0, sess.lastSeen.Load()).Add(sess.timeout).Truncate(s.cfg.TickTime).Add(s.cfg.TickTime)
			sessions = append(sessions, sessDump{id, exp, s.pipe.tree.Ephemerals(id, "/")})
		}
	})
	sort.Slice(sessions, func(i, j int) bool {
		if !sessions[i].expires.Equal(sessions[j].expires) {
			return sessions[i].expires.Before(sessions[j].expires)
		}
		return sessions[i].id < sessions[j].id
	})
	// Sessions are grouped by expiry tick, as ZooKeeper's expiry queue does.
	type set struct {
		at  time.Time
		ids []int64
	}
	var sets []set
	for _, sd := range sessions {
		if len(sets) == 0 || !sets[len(sets)-1].at.Equal(sd.expires) {
			sets = append(sets, set{at: sd.expires})
		}
		sets[len(sets)-1].ids = append(sets[len(sets)-1].ids, sd.id)
	}
	var b strings.Builder
	b.WriteString("SessionTracker dump:\n")
	fmt.Fprintf(&b, "Session Sets (%d)/(%d):\n", len(sets), len(sessions))
	for _, st := range sets {
		fmt.Fprintf(&b, "%d expire at %s:\n", len(st.ids), javaDate(st.at))
		for _, id := range st.ids {
			fmt.Fprintf(&b, "\t%#x\n", id)
		}
	}
	b.WriteString("ephemeral nodes dump:\n")
	withEph := 0
	for _, sd := range sessions {
		if len(sd.ephemerals) > 0 {
			withEph++
		}
	}
	fmt.Fprintf(&b, "Sessions with Ephemerals (%d):\n", withEph)
	for _, sd := range sessions {
		if len(sd.ephemerals) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%#x:\n", sd.id)
		sort.Strings(sd.ephemerals)
		for _, p := range sd.ephemerals {
			fmt.Fprintf(&b, "\t%s\n", p)
		}
	}
	var live []*conn
	for _, c := range s.snapshotConns() {
		if c.sess.Load() != nil {
			live = append(live, c)
		}
	}
	b.WriteString("Connections dump:\n")
	if len(live) > 0 {
		fmt.Fprintf(&b, "Connections Sets (1)/(%d):\n", len(live))
		fmt.Fprintf(&b, "%d expire at %s:\n", len(live), javaDate(time.Now().Truncate(s.cfg.TickTime).Add(s.cfg.TickTime)))
		for _, c := range live {
			fmt.Fprintf(&b, "\tip: /%s sessionId: %#x\n", c.remote, c.sess.Load().id)
		}
	} else {
		b.WriteString("Connections Sets (0)/(0):\n")
	}
	return b.String()
}

func (s *Server) dirs() string {
	logDir := s.cfg.DataLogDir
	if logDir == "" {
		logDir = s.cfg.DataDir
	}
	return fmt.Sprintf("datadir_size: %d\nlogdir_size: %d\n", dirSize(s.cfg.DataDir), dirSize(logDir))
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func dirSize(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}

// openFDs counts this process's open descriptors and its limit (Linux).
func openFDs() (open, limit int) {
	entries, _ := os.ReadDir("/proc/self/fd")
	open = len(entries)
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return open, -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			f := strings.Fields(line)
			if len(f) >= 4 {
				fmt.Sscan(f[3], &limit)
			}
		}
	}
	return open, limit
}
