package replication

import (
	"errors"
	"fmt"
	"regexp"
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

// Prefixes of a source server's identity (Position.Server; see
// sourceIdentity): a MySQL server is named by its server_uuid, a MariaDB
// server, which has no uuid, by its server_id.
const (
	serverMySQL   = "mysql:"
	serverMariaDB = "mariadb:"
)

var uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ParseServer parses a source server's identity as the replicator records
// it in Position.Server: "mariadb:<server_id>" or "mysql:<server_uuid>".
// It returns the identity as the replicator writes it (the uuid in lower
// case, the id without leading zeros), so that it compares equal.
func ParseServer(s string) (string, error) {
	switch {
	case strings.HasPrefix(s, serverMariaDB):
		id, err := strconv.ParseUint(s[len(serverMariaDB):], 10, 32)
		if err != nil {
			return "", fmt.Errorf("%w: server %q: want mariadb:<server_id>, a number below 2^32 (SELECT @@server_id on the source)", ErrFilePos, s)
		}
		return serverMariaDB + strconv.FormatUint(id, 10), nil
	case strings.HasPrefix(s, serverMySQL):
		u := s[len(serverMySQL):]
		if !uuidRe.MatchString(u) {
			return "", fmt.Errorf("%w: server %q: want mysql:<server_uuid>, e.g. mysql:3e11fa47-71ca-11e1-9e33-c80aa9429562 (SELECT @@server_uuid on the source)", ErrFilePos, s)
		}
		return serverMySQL + strings.ToLower(u), nil
	}
	return "", fmt.Errorf("%w: server %q: want mariadb:<server_id> or mysql:<server_uuid>", ErrFilePos, s)
}

// ParseServerFilePos parses a binlog position "file:pos" (as ParseFilePos)
// or "file:pos@server", a position in the binlog of the source server
// server (see ParseServer), e.g. "mysql-bin.000003:1234@mariadb:2". isFile
// is false when s has neither shape (it may be a GTID set); err says what
// is wrong with one that has it — an "@" makes s a position, since GTID
// sets name no server.
func ParseServerFilePos(s string) (p Position, isFile bool, err error) {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return ParseFilePos(s)
	}
	p, isFile, err = ParseFilePos(s[:at])
	switch {
	case err != nil:
		return Position{}, true, err
	case !isFile:
		return Position{}, true, fmt.Errorf("%w: %q: want file:pos@server, e.g. mysql-bin.000003:4@mariadb:2 (a GTID set is of no one server: give it without @)", ErrFilePos, s)
	case at == len(s)-1:
		return Position{}, true, fmt.Errorf("%w: %q names no server after @: want mariadb:<server_id> or mysql:<server_uuid>, or no @ for the server behind the source address", ErrFilePos, s)
	}
	if p.Server, err = ParseServer(s[at+1:]); err != nil {
		return Position{}, true, err
	}
	return p, true, nil
}

// ErrGTIDSet is the class of a malformed GTID set.
var ErrGTIDSet = errors.New("replication: invalid GTID set")

// ParseGTIDSet parses a GTID set of either flavor: a MariaDB GTID position
// (domain-server-sequence, one per domain: "0-1-57,1-2-9") or a MySQL GTID
// set (server_uuid:intervals: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-57").
// Spaces and line breaks after commas, as MySQL prints them, are dropped.
// It returns the set in canonical form and the flavor it is of.
func ParseGTIDSet(s string) (set, flavor string, err error) {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if parts[i] = strings.TrimSpace(p); parts[i] == "" {
			return "", "", fmt.Errorf("%w: %q has an empty element: want 0-1-57,1-2-9 (MariaDB) or uuid:1-57 (MySQL)", ErrGTIDSet, s)
		}
	}
	if strings.Contains(s, ":") {
		g, err := gomysql.ParseMysqlGTIDSet(strings.Join(parts, ","))
		if err != nil {
			return "", "", fmt.Errorf("%w: %q is not a MySQL GTID set (server_uuid:interval[:interval…][,…], e.g. 3e11fa47-71ca-11e1-9e33-c80aa9429562:1-57): %v", ErrGTIDSet, s, err)
		}
		return g.String(), FlavorMySQL, nil
	}
	domains := map[uint32]string{}
	for _, p := range parts {
		g, err := gomysql.ParseMariadbGTID(p)
		if err != nil {
			return "", "", fmt.Errorf("%w: %q is not a MariaDB GTID position (domain-server-sequence[,…], e.g. 0-1-57,1-2-9): %q: %v", ErrGTIDSet, s, p, err)
		}
		if g.String() == "" { // go-mysql's zero GTID, which it renders as nothing
			return "", "", fmt.Errorf("%w: %q: %q names no transaction (sequence numbers start at 1)", ErrGTIDSet, s, p)
		}
		if prev, dup := domains[g.DomainID]; dup {
			return "", "", fmt.Errorf("%w: %q has two GTIDs of domain %d (%s and %s): a MariaDB GTID position has one per domain, the last transaction applied in it", ErrGTIDSet, s, g.DomainID, prev, p)
		}
		domains[g.DomainID] = p
	}
	g, err := gomysql.ParseMariadbGTIDSet(strings.Join(parts, ","))
	if err != nil {
		return "", "", fmt.Errorf("%w: %q: %v", ErrGTIDSet, s, err)
	}
	return g.String(), FlavorMariaDB, nil
}
