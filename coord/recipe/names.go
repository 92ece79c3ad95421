package recipe

import (
	"slices"
	"strconv"
)

// contender is a sequential child of a lock directory.
type contender struct {
	name string
	seq  int32
}

// seqLen is the length of the sequence number ZooKeeper appends to a
// sequential node's name: "%010d" of a signed 32-bit counter.
const seqLen = 10

// sequenceOf returns the sequence number at the end of a sequential
// node's name. It reads only the last ten characters, whatever comes
// before them: Curator's _c_<uuid>-lock-0000000007, kazoo's
// <hex>__lock__0000000007 and a plain lock-0000000007 all order by 7.
func sequenceOf(name string) (int32, bool) {
	if len(name) < seqLen {
		return 0, false
	}
	tail := name[len(name)-seqLen:]
	for i := 0; i < len(tail); i++ {
		if c := tail[i]; (c < '0' || c > '9') && (i != 0 || c != '-') {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(tail, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// contenders returns the sequential children among names, ordered by
// sequence number — never by whole name: the prefixes (a uuid, a session
// id, a host name) would order contenders by who they are rather than by
// when they came, the bug of the ZooKeeper lock recipe's ZNodeName.
// Names without a sequence number are not contenders and are left out.
func contenders(names []string) []contender {
	cs := make([]contender, 0, len(names))
	for _, n := range names {
		if seq, ok := sequenceOf(n); ok {
			cs = append(cs, contender{name: n, seq: seq})
		}
	}
	slices.SortFunc(cs, func(a, b contender) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return cs
}

// indexOf returns the position of name in cs, or -1.
func indexOf(cs []contender, name string) int {
	for i, c := range cs {
		if c.name == name {
			return i
		}
	}
	return -1
}
