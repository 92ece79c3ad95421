package replication

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// followedState is the MariaDB history a target has followed, in the
// shape of @@gtid_binlog_state: for every (domain, server_id) that wrote
// a transaction the target has (as far as it is known), the highest
// sequence number among them. The checkpoint row keeps it (gtid_state),
// committed with the data, so that a takeover can tell a transaction of
// another server the target already has from an errant one (see
// mariadbErrant): a GTID position keeps one server per domain and loses
// every earlier writer after a failover.
//
// The entries are kept sorted by domain and server_id; there are a few,
// one per server that was ever primary in a domain, so a slice searched
// linearly beats a map and serialises without sorting.
type followedState []gomysql.MariadbGTID

// parseFollowedState parses a binlog state "d-s-n,d-s-n", as
// @@gtid_binlog_state and the gtid_state column hold it; "" is empty.
func parseFollowedState(s string) (followedState, error) {
	var f followedState
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		g, err := gomysql.ParseMariadbGTID(part)
		if err != nil {
			return nil, fmt.Errorf("GTID state %q: %w", s, err)
		}
		f.add(g)
	}
	return f, nil
}

// add records that the target has g: the entry of g's domain and server
// rises to g's sequence number.
func (f *followedState) add(g *gomysql.MariadbGTID) {
	s := *f
	i := 0
	for ; i < len(s); i++ {
		e := &s[i]
		if e.DomainID == g.DomainID && e.ServerID == g.ServerID {
			e.SequenceNumber = max(e.SequenceNumber, g.SequenceNumber)
			return
		}
		if e.DomainID > g.DomainID || e.DomainID == g.DomainID && e.ServerID > g.ServerID {
			break
		}
	}
	*f = slices.Insert(s, i, *g)
}

// covers reports whether the history holds a transaction of server in
// domain at sequence number seq or later: then the one numbered seq of
// that server, which precedes it in any binlog, is in the history too.
func (f followedState) covers(domain, server uint32, seq uint64) bool {
	for _, e := range f {
		if e.DomainID == domain && e.ServerID == server {
			return e.SequenceNumber >= seq
		}
	}
	return false
}

// appendTo writes the state as "d-s-n,d-s-n".
func (f followedState) appendTo(b []byte) []byte {
	for i, e := range f {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(e.DomainID), 10)
		b = append(b, '-')
		b = strconv.AppendUint(b, uint64(e.ServerID), 10)
		b = append(b, '-')
		b = strconv.AppendUint(b, e.SequenceNumber, 10)
	}
	return b
}

func (f followedState) String() string { return string(f.appendTo(nil)) }
