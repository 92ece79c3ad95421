package compat

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// A transcript is what one scenario observed on one server, one line per
// operation or notification:
//
//	S1 create /t-x/a "v" persistent -> ok | /t-x/a
//	S1 exists /t-x/a -> ok | {czxid=Z3 mzxid=Z3 pzxid=Z3 ctime=T mtime=T ver=0 cver=0 aver=0 owner=0 len=1 kids=0}
//	S2 event NodeDataChanged /t-x/a
//
// Values that legitimately differ between two correct servers are written
// as markers while recording and normalised when the transcript is
// rendered:
//
//   - zxids become Z1, Z2, … by rank among the distinct zxids of the
//     transcript, so equality and order are compared while the gaps are
//     not. ZooKeeper spends zxids on things no client can see (failed
//     writes get an error transaction, session creation and closing are
//     transactions, and other scenarios write concurrently), so gaps are an
//     implementation detail; which of two znodes changed last is not. Zxid
//     0 (the built-in /zookeeper nodes) stays 0.
//   - session ids become S1, S2, … in order of first appearance; 0 stays 0.
//   - ctime and mtime become T, or 0 where the server reports 0.
//   - children lists are sorted (ZooKeeper returns hash order).
type transcript struct {
	lines []string
}

// Markers are NUL-delimited: data is always written with %q, which escapes
// NUL, so no znode content can forge one.
var markerRE = regexp.MustCompile("\x00([zs])(-?[0-9]+)\x00")

func zx(v int64) string   { return fmt.Sprintf("\x00z%d\x00", v) }
func sess(v int64) string { return fmt.Sprintf("\x00s%d\x00", v) }

func (tr *transcript) add(format string, args ...any) {
	tr.lines = append(tr.lines, fmt.Sprintf(format, args...))
}

// render resolves the markers, returning the normalised lines.
func (tr *transcript) render() []string {
	var zxids []int64
	sessions := map[int64]string{0: "0"}
	for _, l := range tr.lines {
		for _, m := range markerRE.FindAllStringSubmatch(l, -1) {
			v, _ := strconv.ParseInt(m[2], 10, 64)
			switch m[1] {
			case "z":
				zxids = append(zxids, v)
			case "s":
				if _, ok := sessions[v]; !ok {
					sessions[v] = fmt.Sprintf("S%d", len(sessions))
				}
			}
		}
	}
	slices.Sort(zxids)
	zxids = slices.Compact(zxids)
	rank := map[int64]string{0: "0"}
	n := 0
	for _, z := range zxids {
		if z != 0 {
			n++
			rank[z] = fmt.Sprintf("Z%d", n)
		}
	}
	out := make([]string, len(tr.lines))
	for i, l := range tr.lines {
		out[i] = markerRE.ReplaceAllStringFunc(l, func(m string) string {
			sm := markerRE.FindStringSubmatch(m)
			v, _ := strconv.ParseInt(sm[2], 10, 64)
			if sm[1] == "z" {
				return rank[v]
			}
			return sessions[v]
		})
	}
	return out
}

func fmtTime(ms int64) string {
	if ms == 0 {
		return "0"
	}
	return "T"
}

func fmtStat(s proto.Stat) string {
	return fmt.Sprintf("{czxid=%s mzxid=%s pzxid=%s ctime=%s mtime=%s ver=%d cver=%d aver=%d owner=%s len=%d kids=%d}",
		zx(s.Czxid), zx(s.Mzxid), zx(s.Pzxid), fmtTime(s.Ctime), fmtTime(s.Mtime),
		s.Version, s.Cversion, s.Aversion, sess(s.EphemeralOwner), s.DataLength, s.NumChildren)
}

// fmtData tells nil (no data, -1 on the wire) from empty, and shortens
// large data to its head and length.
func fmtData(b []byte) string {
	const show = 32
	switch {
	case b == nil:
		return "nil"
	case len(b) > show:
		return fmt.Sprintf("%q…(%d bytes)", b[:show], len(b))
	}
	return strconv.Quote(string(b))
}

func fmtChildren(c []string) string {
	if c == nil {
		return "nil"
	}
	c = slices.Clone(c)
	sort.Strings(c)
	return "[" + strings.Join(c, " ") + "]"
}

func fmtACLs(acls []proto.ACL) string {
	if acls == nil {
		return "nil"
	}
	parts := make([]string, len(acls))
	for i, a := range acls {
		parts[i] = fmt.Sprintf("%s:%s:%s", a.Id.Scheme, a.Id.ID, fmtPerms(a.Perms))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// fmtPerms writes permissions as zkCli does (cdrwa), with any unknown
// bits in hex so that a server inventing bits shows up.
func fmtPerms(p int32) string {
	var b strings.Builder
	for _, f := range []struct {
		bit  int32
		name byte
	}{{proto.PermCreate, 'c'}, {proto.PermDelete, 'd'}, {proto.PermRead, 'r'}, {proto.PermWrite, 'w'}, {proto.PermAdmin, 'a'}} {
		if p&f.bit != 0 {
			b.WriteByte(f.name)
		}
	}
	if rest := p &^ proto.PermAll; rest != 0 {
		fmt.Fprintf(&b, "+%#x", rest)
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

var modeNames = map[int32]string{
	proto.ModePersistent:                  "persistent",
	proto.ModeEphemeral:                   "ephemeral",
	proto.ModePersistentSequential:        "persistent-seq",
	proto.ModeEphemeralSequential:         "ephemeral-seq",
	proto.ModeContainer:                   "container",
	proto.ModePersistentWithTTL:           "ttl",
	proto.ModePersistentSequentialWithTTL: "ttl-seq",
}

func fmtMode(m int32) string {
	if n, ok := modeNames[m]; ok {
		return n
	}
	return fmt.Sprintf("mode(%d)", m)
}

// Error codes by the names of ZooKeeper's KeeperException.Code, so that a
// transcript line reads like the Java exception a user would see.
var codeNames = map[proto.ErrCode]string{
	proto.ErrOK: "ok", proto.ErrSystemError: "SystemError",
	proto.ErrRuntimeInconsistency: "RuntimeInconsistency", proto.ErrDataInconsistency: "DataInconsistency",
	proto.ErrConnectionLoss: "ConnectionLoss", proto.ErrMarshallingError: "MarshallingError",
	proto.ErrUnimplemented: "Unimplemented", proto.ErrOperationTimeout: "OperationTimeout",
	proto.ErrBadArguments: "BadArguments", proto.ErrNewConfigNoQuorum: "NewConfigNoQuorum",
	proto.ErrReconfigInProgress: "ReconfigInProgress", proto.ErrUnknownSession: "UnknownSession",
	proto.ErrAPIError: "APIError", proto.ErrNoNode: "NoNode", proto.ErrNoAuth: "NoAuth",
	proto.ErrBadVersion: "BadVersion", proto.ErrNoChildrenForEphemerals: "NoChildrenForEphemerals",
	proto.ErrNodeExists: "NodeExists", proto.ErrNotEmpty: "NotEmpty",
	proto.ErrSessionExpired: "SessionExpired", proto.ErrInvalidCallback: "InvalidCallback",
	proto.ErrInvalidACL: "InvalidACL", proto.ErrAuthFailed: "AuthFailed",
	proto.ErrSessionMoved: "SessionMoved", proto.ErrNotReadOnly: "NotReadOnly",
	proto.ErrEphemeralOnLocalSession: "EphemeralOnLocalSession", proto.ErrNoWatcher: "NoWatcher",
	proto.ErrRequestTimeout: "RequestTimeout", proto.ErrReconfigDisabled: "ReconfigDisabled",
	proto.ErrSessionClosedRequireSASL: "SessionClosedRequireSasl", proto.ErrQuotaExceeded: "QuotaExceeded",
	proto.ErrThrottledOp: "Throttled",
}

func fmtCode(c proto.ErrCode) string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("code(%d)", int32(c))
}

var eventNames = map[proto.EventType]string{
	proto.EventNone: "None", proto.EventNodeCreated: "NodeCreated", proto.EventNodeDeleted: "NodeDeleted",
	proto.EventNodeDataChanged: "NodeDataChanged", proto.EventNodeChildrenChanged: "NodeChildrenChanged",
	proto.EventDataWatchRemoved: "DataWatchRemoved", proto.EventChildWatchRemoved: "ChildWatchRemoved",
	proto.EventPersistentWatchRemoved: "PersistentWatchRemoved",
}

var stateNames = map[proto.KeeperState]string{
	proto.StateDisconnected: "Disconnected", proto.StateSyncConnected: "SyncConnected",
	proto.StateAuthFailed: "AuthFailed", proto.StateConnectedReadOnly: "ConnectedReadOnly",
	proto.StateSaslAuthenticated: "SaslAuthenticated", proto.StateExpired: "Expired", proto.StateClosed: "Closed",
}

// fmtEvent writes a notification; the state is shown only when it is not
// the usual SyncConnected.
func fmtEvent(typ proto.EventType, state proto.KeeperState, path string) string {
	t, ok := eventNames[typ]
	if !ok {
		t = fmt.Sprintf("event(%d)", int32(typ))
	}
	s := ""
	if state != proto.StateSyncConnected {
		s, ok = stateNames[state]
		if !ok {
			s = fmt.Sprintf("state(%d)", int32(state))
		}
		s = " " + s
	}
	return fmt.Sprintf("%s %s%s", t, path, s)
}

// diffLines returns a unified-style listing of the differences between
// want and got ("-" only in want, "+" only in got, " " common context
// next to a change), or "" when they are equal.
func diffLines(want, got []string) string {
	// Longest common subsequence; transcripts are a few hundred lines.
	n, m := len(want), len(got)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if want[i] == got[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte
		line string
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && want[i] == got[j]:
			ops = append(ops, op{' ', want[i]})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, op{'+', got[j]})
			j++
		default:
			ops = append(ops, op{'-', want[i]})
			i++
		}
	}
	const context = 2
	var b strings.Builder
	changed := false
	last := -1
	for k, o := range ops {
		if o.kind == ' ' {
			continue
		}
		changed = true
		from := max(k-context, last+1)
		if from > last+1 && last >= 0 {
			b.WriteString("  …\n")
		}
		for c := from; c < k; c++ {
			fmt.Fprintf(&b, "  %s\n", ops[c].line)
		}
		fmt.Fprintf(&b, "%c %s\n", o.kind, o.line)
		last = k
		for c := k + 1; c < len(ops) && c <= k+context && ops[c].kind == ' '; c++ {
			fmt.Fprintf(&b, "  %s\n", ops[c].line)
			last = c
		}
	}
	if !changed {
		return ""
	}
	return b.String()
}
