package crashtest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// This file is the crash test's model of the tree: what the server must
// hold after a restart, given the writes it acknowledged.

// writeKind is one kind of write the load issues.
type writeKind int

const (
	opCreate writeKind = iota
	opSet
	opSetACL
	opDelete
)

// aclVariants are the ACLs setACL alternates between. Each lets the test's
// clients (on 127.0.0.1) read, write and change the ACL again; the first is
// the one every znode is created with.
var aclVariants = [][]zk.ACL{
	zk.WorldACL(zk.PermAll),
	{{Perms: zk.PermRead | zk.PermWrite | zk.PermAdmin | zk.PermDelete, Scheme: "world", ID: "anyone"},
		{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}},
}

// write is one write a worker issued.
type write struct {
	kind      writeKind
	data      []byte   // create, setData
	acl       []zk.ACL // setACL
	version   int32    // setData, delete: the expected version; setACL: aversion
	ephemeral bool     // create
	cycle     int      // the load cycle it was issued in
	// multi is the multi the write was sent in, or nil: its writes must be
	// applied all together or not at all, with one zxid.
	multi *multi
}

// multi is a group of writes sent as one multi request.
type multi struct {
	paths []string
}

func (m *multi) String() string { return fmt.Sprintf("multi on %v", m.paths) }

func (w *write) String() string {
	if w.multi != nil {
		return fmt.Sprintf("%s in a %v", w.describe(), w.multi)
	}
	return w.describe()
}

func (w *write) describe() string {
	switch w.kind {
	case opCreate:
		mode := "persistent"
		if w.ephemeral {
			mode = "ephemeral"
		}
		return fmt.Sprintf("create %s data %s (cycle %d)", mode, showData(w.data), w.cycle)
	case opSet:
		return fmt.Sprintf("setData version %d data %s (cycle %d)", w.version, showData(w.data), w.cycle)
	case opSetACL:
		return fmt.Sprintf("setACL aversion %d acl %s (cycle %d)", w.version, aclString(w.acl), w.cycle)
	default:
		return fmt.Sprintf("delete version %d (cycle %d)", w.version, w.cycle)
	}
}

// slot is one znode path owned by one worker. Only that worker writes it,
// so the model knows exactly what the server holds there — except while a
// write whose acknowledgement was lost is pending; the next read decides
// whether it was applied.
type slot struct {
	path    string
	present bool
	data    []byte
	acl     []zk.ACL
	// stat is what the server returned for the last acknowledged write, or
	// read back after a restart. A create's reply carries no stat: the
	// tapped reply zxid gives czxid, mzxid and pzxid, but ctime and mtime
	// are learned from the next read or setData.
	stat       zk.Stat
	timesKnown bool
	// lastAck describes the write that produced the expected state, for
	// failure messages.
	lastAck string
	// pending is a write whose outcome is unknown, or nil.
	pending *write
}

// parentDir is a worker's directory: the parent of its slots. Its stat
// counts the children creates and deletes that were applied.
type parentDir struct {
	path       string
	cversion   int32
	pzxid      int64
	pzxidKnown bool // false after a delete whose zxid was never seen
}

func (d *parentDir) childChanged(zxid int64, known bool) {
	d.cversion++
	d.pzxid, d.pzxidKnown = zxid, known
}

// expectedCreateStat is the stat a znode created at zxid must have.
func expectedCreateStat(zxid int64, data []byte, owner int64) zk.Stat {
	return zk.Stat{Czxid: zxid, Mzxid: zxid, Pzxid: zxid, EphemeralOwner: owner, DataLength: int32(len(data))}
}

// observation is what a read returned for one path.
type observation struct {
	present bool
	data    []byte
	acl     []zk.ACL
	stat    zk.Stat
}

func (o observation) String() string {
	if !o.present {
		return "no znode"
	}
	return fmt.Sprintf("data %s acl %s stat {%s}", showData(o.data), aclString(o.acl), statString(o.stat))
}

// decision is how a pending write was decided.
type decision struct {
	applied bool
	zxid    int64 // when applied; 0 for a delete, whose zxid is visible nowhere
}

// check compares what the server holds at s.path with the model, after
// deciding a pending write from it, and returns that decision.
func (s *slot) check(obs observation, owner int64, dir *parentDir) (decision, error) {
	if w := s.pending; w != nil {
		s.pending = nil
		if s.matches(obs) == nil {
			return decision{}, nil // lost with the crash: allowed, its ack was too
		}
		zxid, err := s.appliedAs(w, obs, owner)
		if err != nil {
			return decision{}, fmt.Errorf("%s: the server holds %v, which is neither the state before the unacknowledged %v (%s) nor the state after it: %v",
				s.path, obs, w, s.describe(), err)
		}
		switch w.kind {
		case opCreate:
			dir.childChanged(zxid, true)
		case opDelete:
			dir.childChanged(0, false)
		}
		return decision{applied: true, zxid: zxid}, nil
	}
	if err := s.matches(obs); err != nil {
		return decision{}, fmt.Errorf("%s: after %s the server holds %v: %v", s.path, s.describe(), obs, err)
	}
	return decision{}, nil
}

// describe says what the model expects at the slot and why.
func (s *slot) describe() string {
	if !s.present {
		if s.lastAck == "" {
			return "nothing was ever acknowledged there (want no znode)"
		}
		return fmt.Sprintf("acknowledged %s (want no znode)", s.lastAck)
	}
	times := ""
	if !s.timesKnown {
		times = ", ctime/mtime not yet known"
	}
	return fmt.Sprintf("acknowledged %s (want data %s acl %s stat {%s}%s)", s.lastAck, showData(s.data), aclString(s.acl), statString(s.stat), times)
}

// matches reports how obs differs from the model's state, or nil. It learns
// ctime and mtime when they were unknown.
func (s *slot) matches(obs observation) error {
	if obs.present != s.present {
		if s.present {
			return fmt.Errorf("the znode is missing")
		}
		return fmt.Errorf("the znode exists")
	}
	if !s.present {
		return nil
	}
	if !bytes.Equal(obs.data, s.data) {
		return fmt.Errorf("data %s, want %s", showData(obs.data), showData(s.data))
	}
	if !slices.Equal(obs.acl, s.acl) {
		return fmt.Errorf("acl %s, want %s", aclString(obs.acl), aclString(s.acl))
	}
	want := s.stat
	if !s.timesKnown {
		if obs.stat.Ctime != obs.stat.Mtime {
			return fmt.Errorf("ctime %d != mtime %d on a znode never written since its create", obs.stat.Ctime, obs.stat.Mtime)
		}
		want.Ctime, want.Mtime = obs.stat.Ctime, obs.stat.Mtime
	}
	if d := statDiff(obs.stat, want); d != "" {
		return fmt.Errorf("stat differs: %s", d)
	}
	s.stat, s.timesKnown = want, true
	return nil
}

// appliedAs checks that obs is the state w produces on the model's state,
// with a zxid the model cannot know, and moves the model there. It returns
// that zxid (0 for a delete).
func (s *slot) appliedAs(w *write, obs observation, owner int64) (int64, error) {
	switch w.kind {
	case opCreate:
		if !obs.present || !bytes.Equal(obs.data, w.data) || !slices.Equal(obs.acl, aclVariants[0]) {
			return 0, fmt.Errorf("not the created data and acl")
		}
		zxid := obs.stat.Czxid
		want := expectedCreateStat(zxid, w.data, owner)
		want.Ctime, want.Mtime = obs.stat.Ctime, obs.stat.Mtime
		if d := statDiff(obs.stat, want); d != "" {
			return 0, fmt.Errorf("a create's stat must differ only in czxid: %s", d)
		}
		s.present, s.data, s.acl, s.stat, s.timesKnown = true, w.data, obs.acl, obs.stat, true
		s.lastAck = fmt.Sprintf("%v, unacknowledged but found applied at zxid %#x", w, zxid)
		return zxid, nil
	case opSet:
		if !obs.present || !bytes.Equal(obs.data, w.data) || !slices.Equal(obs.acl, s.acl) {
			return 0, fmt.Errorf("not the data set")
		}
		zxid := obs.stat.Mzxid
		want := s.stat
		want.Mzxid, want.Mtime, want.Version, want.DataLength = zxid, obs.stat.Mtime, s.stat.Version+1, int32(len(w.data))
		if !s.timesKnown {
			want.Ctime = obs.stat.Ctime
		}
		if zxid <= s.stat.Mzxid {
			return 0, fmt.Errorf("mzxid %#x does not exceed the previous mzxid %#x", zxid, s.stat.Mzxid)
		}
		if d := statDiff(obs.stat, want); d != "" {
			return 0, fmt.Errorf("a setData's stat must differ only in mzxid, mtime and version+1: %s", d)
		}
		s.data, s.stat, s.timesKnown = w.data, obs.stat, true
		s.lastAck = fmt.Sprintf("%v, unacknowledged but found applied at zxid %#x", w, zxid)
		return zxid, nil
	case opSetACL:
		if !obs.present || !bytes.Equal(obs.data, s.data) || !slices.Equal(obs.acl, w.acl) {
			return 0, fmt.Errorf("not the acl set")
		}
		want := s.stat
		want.Aversion = s.stat.Aversion + 1
		if !s.timesKnown {
			want.Ctime, want.Mtime = obs.stat.Ctime, obs.stat.Mtime
		}
		if d := statDiff(obs.stat, want); d != "" {
			return 0, fmt.Errorf("a setACL's stat must differ only in aversion+1: %s", d)
		}
		s.acl, s.stat, s.timesKnown = w.acl, obs.stat, true
		s.lastAck = fmt.Sprintf("%v, unacknowledged but found applied", w)
		return 0, nil // a setACL's zxid is visible nowhere
	default:
		if obs.present {
			return 0, fmt.Errorf("the znode still exists")
		}
		s.present, s.data = false, nil
		s.lastAck = fmt.Sprintf("%v, unacknowledged but found applied", w)
		return 0, nil
	}
}

// showData quotes written data, which is a unique label followed by up to
// maxPadding bytes of padding, without the padding.
func showData(b []byte) string {
	const keep = 24
	if len(b) <= keep {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%q…(%d bytes)", b[:keep], len(b))
}

// aclString formats an ACL list compactly: scheme:id:perms, ...
func aclString(acl []zk.ACL) string {
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = fmt.Sprintf("%s:%s:%#x", a.Scheme, a.ID, a.Perms)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// statString formats a stat with zxids and session ids in hex.
func statString(st zk.Stat) string {
	return fmt.Sprintf("czxid=%#x mzxid=%#x pzxid=%#x ctime=%d mtime=%d version=%d cversion=%d aversion=%d ephemeralOwner=%#x dataLength=%d numChildren=%d",
		st.Czxid, st.Mzxid, st.Pzxid, st.Ctime, st.Mtime, st.Version, st.Cversion, st.Aversion, st.EphemeralOwner, st.DataLength, st.NumChildren)
}

// statDiff lists the fields in which got differs from want, or "".
func statDiff(got, want zk.Stat) string {
	var d []string
	field := func(name string, g, w any, hex bool) {
		if g == w {
			return
		}
		if hex {
			d = append(d, fmt.Sprintf("%s %#x, want %#x", name, g, w))
		} else {
			d = append(d, fmt.Sprintf("%s %d, want %d", name, g, w))
		}
	}
	field("czxid", got.Czxid, want.Czxid, true)
	field("mzxid", got.Mzxid, want.Mzxid, true)
	field("pzxid", got.Pzxid, want.Pzxid, true)
	field("ctime", got.Ctime, want.Ctime, false)
	field("mtime", got.Mtime, want.Mtime, false)
	field("version", got.Version, want.Version, false)
	field("cversion", got.Cversion, want.Cversion, false)
	field("aversion", got.Aversion, want.Aversion, false)
	field("ephemeralOwner", got.EphemeralOwner, want.EphemeralOwner, true)
	field("dataLength", got.DataLength, want.DataLength, false)
	field("numChildren", got.NumChildren, want.NumChildren, false)
	return strings.Join(d, ", ")
}

// ledger holds the zxid of every write known to be applied, across all
// workers, to check that zxids are unique and that no write after a
// restart reuses or goes below a zxid from before it.
type ledger struct {
	mu    sync.Mutex
	zxids map[int64]string
	max   int64 // highest zxid recorded
	floor int64 // every write recorded from now on must exceed this
}

func newLedger() *ledger { return &ledger{zxids: make(map[int64]string)} }

// record adds an applied write's zxid.
func (l *ledger) record(zxid int64, what string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.zxids[zxid]; ok {
		return fmt.Errorf("zxid %#x was given to two writes: %s and %s", zxid, prev, what)
	}
	if zxid <= l.floor {
		return fmt.Errorf("%s got zxid %#x, not above %#x, the highest zxid applied before the last restart: the server reused zxids", what, zxid, l.floor)
	}
	l.zxids[zxid] = what
	l.max = max(l.max, zxid)
	return nil
}

// seal is called after a restart once every pending write is decided: what
// comes next must be numbered above everything recorded so far.
func (l *ledger) seal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.floor = l.max
}

// has reports whether zxid is recorded as applied.
func (l *ledger) has(zxid int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.zxids[zxid]
	return ok
}

// count returns how many applied writes the ledger holds.
func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.zxids)
}
