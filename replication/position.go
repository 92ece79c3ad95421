package replication

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// Position is a place in the source's binary log between two
// transactions: a binlog file and the offset of the next event in it, and
// the source's GTID state at that point (a MariaDB GTID position such as
// "0-1-57,1-2-9", or a MySQL executed GTID set "uuid:1-57"). Either part
// may be empty: a position resolved from a GTID set alone has no file
// until the first event arrives, and on MySQL a file:pos start has no
// GTID set.
//
// Server is the identity of the source server whose binlog File and Pos
// point into (see sourceIdentity); empty when unknown — a position typed
// by a user, or a checkpoint written before identities were recorded. A
// file position means nothing on another server, even one whose binlog
// files have the same names.
//
// This is Shepherd's one position type: core, the monitor, ctl and the
// console use it, and order positions only with ComparePositions and
// CompareFilePositions.
type Position struct {
	File   string `json:"file"`
	Pos    uint32 `json:"pos"`
	GTID   string `json:"gtid,omitempty"`
	Server string `json:"server,omitempty"`
}

// IsZero reports whether p names no position at all.
func (p Position) IsZero() bool { return p.File == "" && p.Pos == 0 && p.GTID == "" }

// sameServer reports whether p and q can be of one server's binlog: both
// identities known and equal, or either unknown.
func (p Position) sameServer(q Position) bool {
	return p.Server == "" || q.Server == "" || p.Server == q.Server
}

// String renders p as file:pos, with the GTID state when known.
func (p Position) String() string {
	switch {
	case p.IsZero():
		return "(none)"
	case p.File == "":
		return "gtid " + p.GTID
	case p.GTID == "":
		return p.File + ":" + strconv.FormatUint(uint64(p.Pos), 10)
	}
	return p.File + ":" + strconv.FormatUint(uint64(p.Pos), 10) + " (gtid " + p.GTID + ")"
}

// BinlogFile splits a binlog file name into its base and sequence number:
// "mysql-bin.000012" is ("mysql-bin", 12). ok is false for a name without
// a base or a numeric suffix. Files of one server are ordered by the
// number, never by the name: mysql-bin.1000000 follows mysql-bin.999999.
func BinlogFile(name string) (base string, seq uint64, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(name[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return name[:i], n, true
}

// CompareFilePositions orders the file positions of a and b: -1 if a is
// earlier, 0 if the same, 1 if later. ok is false when they cannot be
// ordered: a file missing or without a sequence number, different base
// names or different server identities — another server, whose offsets
// mean nothing here.
func CompareFilePositions(a, b Position) (cmp int, ok bool) {
	if !a.sameServer(b) {
		return 0, false
	}
	ab, an, aok := BinlogFile(a.File)
	bb, bn, bok := BinlogFile(b.File)
	if !aok || !bok || ab != bb {
		return 0, false
	}
	if an != bn {
		return cmpUint(an, bn), true
	}
	return cmpUint(uint64(a.Pos), uint64(b.Pos)), true
}

// ComparePositions orders a and b like CompareFilePositions when both
// have comparable files, since file positions are exact for one server,
// and by their GTID states of flavor otherwise. ok is false when neither
// decides: GTID states missing, or neither containing the other.
func ComparePositions(flavor string, a, b Position) (cmp int, ok bool) {
	if c, ok := CompareFilePositions(a, b); ok {
		return c, true
	}
	if a.GTID == "" || b.GTID == "" {
		return 0, false
	}
	ga, err := gomysql.ParseGTIDSet(flavor, a.GTID)
	if err != nil {
		return 0, false
	}
	gb, err := gomysql.ParseGTIDSet(flavor, b.GTID)
	if err != nil {
		return 0, false
	}
	switch {
	case ga.Equal(gb):
		return 0, true
	case ga.Contain(gb):
		return 1, true
	case gb.Contain(ga):
		return -1, true
	}
	return 0, false
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// resumePoint picks where Run starts: the later of the caller's position
// and the target's checkpoint. The checkpoint is exactly what the target
// has applied (it commits with the data), so starting before it would
// replay transactions and starting after it would skip some. When the two
// cannot be ordered the checkpoint wins, for the same reason.
func resumePoint(flavor string, from, checkpoint Position) Position {
	switch {
	case checkpoint.IsZero():
		return from
	case from.IsZero():
		return checkpoint
	}
	if c, ok := ComparePositions(flavor, from, checkpoint); ok && c > 0 {
		return from
	}
	return checkpoint
}

// ErrFilePos is the class of a malformed binlog position "file:pos".
var ErrFilePos = errors.New("replication: invalid binlog position")

// ParseFilePos parses a binlog position "file:pos", e.g.
// "mysql-bin.000003:1234". isFile is false when s does not have that
// shape at all (it may be a GTID set); err says what is wrong with one
// that has it.
func ParseFilePos(s string) (p Position, isFile bool, err error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return Position{}, false, nil
	}
	file, num := s[:i], s[i+1:]
	if _, _, ok := BinlogFile(file); !ok {
		return Position{}, false, nil
	}
	pos, err := strconv.ParseUint(num, 10, 32)
	if err != nil {
		return Position{}, true, fmt.Errorf("%w: offset %q in %q is not a number", ErrFilePos, num, s)
	}
	if pos < 4 {
		return Position{}, true, fmt.Errorf("%w: offset %d in %q is inside the file header (events start at 4)", ErrFilePos, pos, s)
	}
	return Position{File: file, Pos: uint32(pos)}, true, nil
}
