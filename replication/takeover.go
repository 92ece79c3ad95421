package replication

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/google/uuid"
)

// A candidate is a source server about to serve a task whose checkpoint
// may have been written on another server: who it is, and its GTID state
// as readCandidate found it.
type candidate struct {
	id   sourceID
	addr string // where it was reached, for messages
	// pos is the GTID state the checkpoint must be contained in: MariaDB
	// @@gtid_binlog_pos (the last GTID of every domain), MySQL
	// @@gtid_executed.
	pos string
	// state is every transaction its binlog holds: MariaDB
	// @@gtid_binlog_state (the last GTID of every domain and server_id,
	// where a transaction of another server hides), MySQL @@gtid_executed.
	state    string
	readOnly bool
}

// readCandidate asks the server id behind db for its GTID state, in one
// statement so that pos and state are of one moment.
func readCandidate(ctx context.Context, db *sql.DB, e Endpoint, flavor string, id sourceID) (candidate, error) {
	c := candidate{id: id, addr: e.String()}
	var err error
	if flavor == FlavorMySQL {
		const q = "SELECT @@gtid_executed, @@read_only"
		err = db.QueryRowContext(ctx, q).Scan(&c.pos, &c.readOnly)
		c.state = c.pos
	} else {
		const q = "SELECT @@gtid_binlog_pos, @@gtid_binlog_state, @@read_only"
		err = db.QueryRowContext(ctx, q).Scan(&c.pos, &c.state, &c.readOnly)
	}
	if err != nil {
		return c, connectError("source", e, fmt.Errorf("read the source's GTID state: %w", err))
	}
	c.pos = strings.ReplaceAll(c.pos, "\n", "")
	c.state = strings.ReplaceAll(c.state, "\n", "")
	return c, nil
}

// CheckTakeover reports whether the source server behind db, reached at
// source, can serve a task whose checkpoint is checkpoint: nil when it
// wrote the checkpoint (or the checkpoint names no server), or when it
// can resume it by GTID; an error wrapping ErrOtherSource that says why
// not and what resolves it otherwise. It is the check Run makes before
// reading a source, so a caller choosing a server to move a task to gets
// the answer Run would give.
//
// It knows the checkpoint's position only, not the history the target
// followed that the checkpoint row also keeps (see followedState), so on
// MariaDB it may refuse a server, after more than one failover, that Run
// accepts; never the reverse.
func CheckTakeover(ctx context.Context, db *sql.DB, source Endpoint, flavor string, checkpoint Position) error {
	id, err := sourceIdentity(ctx, db, source, flavor)
	if err != nil {
		return err
	}
	return checkTakeover(ctx, db, source, flavor, checkpoint, "", id, "the checkpoint table on the target")
}

// checkTakeover is CheckTakeover for a server whose identity is known,
// with the history followed up to cp ("" when unknown); table names the
// checkpoint table in the way out of a refusal.
func checkTakeover(ctx context.Context, db *sql.DB, e Endpoint, flavor string, cp Position, followed string, id sourceID, table string) error {
	if cp.Server == "" || cp.Server == id.Name {
		return nil
	}
	c, err := readCandidate(ctx, db, e, flavor, id)
	if err != nil {
		return err
	}
	return decideTakeover(flavor, cp, followed, c, table)
}

// decideTakeover decides whether candidate c, another server than the
// one that wrote cp, can resume cp by GTID: cp must have a GTID state,
// c's state must contain it (so that nothing is skipped), and c must have
// no errant transaction (see errantGTIDs). followed is the MariaDB history
// the target followed up to cp, as the checkpoint row keeps it (see
// followedState); "" when unknown. A refusal wraps ErrOtherSource and
// names both servers, both GTID states and the way out; table names the
// checkpoint table.
func decideTakeover(flavor string, cp Position, followed string, c candidate, table string) error {
	if cp.Server == "" || cp.Server == c.id.Name {
		return nil
	}
	fix := fmt.Sprintf("point the task back at %s, or make the target equal to %s at a position of its own and restart the task from there (delete its row in %s, then set its start)",
		cp.Server, c.id.Name, table)
	if cp.GTID == "" {
		return fmt.Errorf("%w: %s at %s: the target's checkpoint %s was read from server %s and has no GTID state, so it cannot be resumed on %s: %s",
			ErrOtherSource, c.id.Name, c.addr, cp, cp.Server, c.id.Name, fix)
	}
	if cmp, ok := ComparePositions(flavor, Position{GTID: c.pos}, Position{GTID: cp.GTID}); !ok || cmp < 0 {
		return fmt.Errorf("%w: %s at %s has GTID state %q, which does not contain %q, the checkpoint read from server %s: resuming would skip or repeat transactions; %s",
			ErrOtherSource, c.id.Name, c.addr, c.pos, cp.GTID, cp.Server, fix)
	}
	if missing, err := mariadbMissing(flavor, cp, c); err != nil || missing != "" {
		if err == nil {
			err = fmt.Errorf("its binlog (@@gtid_binlog_state %q) lacks %s, which the checkpoint holds", c.state, missing)
		}
		return fmt.Errorf("%w: %s at %s does not hold every transaction of the checkpoint %q read from server %s: %v; resuming would skip them; %s",
			ErrOtherSource, c.id.Name, c.addr, cp.GTID, cp.Server, err, fix)
	}
	errant, err := errantGTIDs(flavor, cp, followed, c)
	if err != nil {
		return fmt.Errorf("%w: %s at %s: cannot tell whether it has transactions that %s, which wrote the checkpoint %q, never had: %v; %s",
			ErrOtherSource, c.id.Name, c.addr, cp.Server, cp.GTID, err, fix)
	}
	if errant == "" {
		return nil
	}
	state := "@@gtid_binlog_state"
	if flavor == FlavorMySQL {
		state = "@@gtid_executed"
	}
	history := ""
	if followed != "" {
		history = fmt.Sprintf(" (the history the target followed: %q)", followed)
	}
	return fmt.Errorf("%w: %s at %s has errant transactions %s: its binlog (%s %q) holds them but server %s, which wrote the checkpoint %q, never had them%s, so the target never will and would differ from %s; "+
		"remove them from %s (or rebuild the target from %s and restart the task from a position of its own: delete its row in %s, then set its start), or point the task back at %s",
		ErrOtherSource, c.id.Name, c.addr, errant, state, c.state, cp.Server, cp.GTID, history, c.id.Name,
		c.id.Name, c.id.Name, table, cp.Server)
}

// mariadbMissing returns the GTIDs of cp's MariaDB GTID position that
// candidate c's binlog does not hold, "" when it holds them all. A GTID
// position keeps one GTID per domain and orders a domain by sequence
// number alone, so a promoted replica that never received cp's last
// transaction (0-1-35), then wrote its own (0-2-36), "contains" cp by
// position; its binlog state, with the last GTID of every server_id,
// shows the gap: 0-1-34. Without a binlog state (a MySQL server, or a
// probe that had none) there is nothing more to check.
func mariadbMissing(flavor string, cp Position, c candidate) (string, error) {
	if flavor == FlavorMySQL || strings.TrimSpace(c.state) == "" {
		return "", nil
	}
	have, err := parseFollowedState(c.state) // the last seq_no of each domain and server_id
	if err != nil {
		return "", fmt.Errorf("%s's @@gtid_binlog_state: %w", c.id.Name, err)
	}
	want, err := parseFollowedState(cp.GTID)
	if err != nil {
		return "", fmt.Errorf("the checkpoint's: %w", err)
	}
	var missing []string
	for _, g := range want {
		if !have.covers(g.DomainID, g.ServerID, g.SequenceNumber) {
			missing = append(missing, g.String())
		}
	}
	return strings.Join(missing, ","), nil
}

// errantGTIDs returns the transactions of candidate c that the server
// which wrote cp never had and that are not simply later than cp: the
// target, which follows cp, would never get them. "" when there are none.
//
// MariaDB: an entry of c's @@gtid_binlog_state in a domain of cp whose
// sequence number is at most cp's there, and that is not in the history
// the target followed: followed has no entry of its domain and server_id
// at that sequence number or above. It was written on another server
// within the stretch of history the target already followed. The
// server_id of the checkpoint server and that of cp's own GTID in the
// domain (the server it was replicating, when the checkpoint was read
// from a replica) count as followed whatever followed says: that is all
// that is known of an unknown history (a checkpoint of an older table),
// and a history learnt from a GTID position, not a binlog state, lacks
// the servers that wrote before it. And an entry in a domain cp lacks of
// another server than c itself, written somewhere the target never read.
// Writes of c after cp are its own as a promoted primary.
//
// MySQL: c's @@gtid_executed minus cp, leaving out the checkpoint
// server's uuid, the transactions of a uuid of cp numbered above the
// highest cp has of it (later ones), and c's own uuid unless c is
// read-only (a read-only replica writes nothing).
func errantGTIDs(flavor string, cp Position, followed string, c candidate) (string, error) {
	if flavor == FlavorMySQL {
		return mysqlErrant(cp, c)
	}
	return mariadbErrant(cp, followed, c)
}

func mariadbErrant(cp Position, followed string, c candidate) (string, error) {
	old, err := strconv.ParseUint(strings.TrimPrefix(cp.Server, "mariadb:"), 10, 32)
	if err != nil || !strings.HasPrefix(cp.Server, "mariadb:") {
		return "", fmt.Errorf("checkpoint server %q is not mariadb:<server_id>", cp.Server)
	}
	set, err := gomysql.ParseMariadbGTIDSet(cp.GTID)
	if err != nil {
		return "", fmt.Errorf("checkpoint GTID state %q: %w", cp.GTID, err)
	}
	at := set.(*gomysql.MariadbGTIDSet).Sets
	history, err := parseFollowedState(followed)
	if err != nil {
		return "", fmt.Errorf("the history the target followed: %w", err)
	}
	// A MariadbGTIDSet keeps one GTID per domain: a binlog state has one
	// per domain and server_id.
	state, err := parseFollowedState(c.state)
	if err != nil {
		return "", fmt.Errorf("%s's @@gtid_binlog_state: %w", c.id.Name, err)
	}
	var errant []string
	for _, g := range state {
		last, inDomain := at[g.DomainID]
		switch {
		case !inDomain:
			if g.ServerID != c.id.ServerID {
				errant = append(errant, g.String())
			}
		case g.SequenceNumber > last.SequenceNumber,
			g.ServerID == uint32(old), g.ServerID == last.ServerID,
			history.covers(g.DomainID, g.ServerID, g.SequenceNumber):
		default:
			errant = append(errant, g.String())
		}
	}
	slices.Sort(errant)
	return strings.Join(errant, ","), nil
}

func mysqlErrant(cp Position, c candidate) (string, error) {
	old, err := uuid.Parse(strings.TrimPrefix(cp.Server, "mysql:"))
	if err != nil || !strings.HasPrefix(cp.Server, "mysql:") {
		return "", fmt.Errorf("checkpoint server %q is not mysql:<server_uuid>", cp.Server)
	}
	own, err := uuid.Parse(strings.TrimPrefix(c.id.Name, "mysql:"))
	if err != nil {
		return "", fmt.Errorf("source server %q is not mysql:<server_uuid>", c.id.Name)
	}
	parsed, err := gomysql.ParseMysqlGTIDSet(cp.GTID)
	if err != nil {
		return "", fmt.Errorf("checkpoint GTID set %q: %w", cp.GTID, err)
	}
	followed := *parsed.(*gomysql.MysqlGTIDSet)
	parsed, err = gomysql.ParseMysqlGTIDSet(c.state)
	if err != nil {
		return "", fmt.Errorf("%s's @@gtid_executed %q: %w", c.id.Name, c.state, err)
	}
	errant := gomysql.NewMysqlGTIDSet()
	for u, tags := range *parsed.(*gomysql.MysqlGTIDSet) {
		if u == old || u == own && !c.readOnly {
			continue
		}
		for tag, have := range tags {
			seen := followed[u][tag]
			missing := minusIntervals(have, seen)
			if u != own && len(seen) > 0 {
				// Numbers above what cp has of u are later transactions.
				missing = minusIntervals(missing, gomysql.IntervalSlice{{Start: seen[len(seen)-1].Stop, Stop: 1<<63 - 1}})
			}
			if len(missing) > 0 {
				if errant[u] == nil {
					errant[u] = map[gomysql.Tag]gomysql.IntervalSlice{}
				}
				errant[u][tag] = missing
			}
		}
	}
	return errant.String(), nil
}

// minusIntervals is a without the numbers in b; both are normalized
// (sorted, disjoint, as ParseMysqlGTIDSet leaves them), and so is the
// result.
func minusIntervals(a, b gomysql.IntervalSlice) gomysql.IntervalSlice {
	var out gomysql.IntervalSlice
	for _, iv := range a {
		start := iv.Start
		for _, cut := range b {
			if cut.Stop <= start || cut.Start >= iv.Stop {
				continue
			}
			if cut.Start > start {
				out = append(out, gomysql.Interval{Start: start, Stop: cut.Start})
			}
			start = max(start, cut.Stop)
		}
		if start < iv.Stop {
			out = append(out, gomysql.Interval{Start: start, Stop: iv.Stop})
		}
	}
	return out
}
