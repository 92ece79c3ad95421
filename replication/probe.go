package replication

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// SourceHealth is what one look at a source server found: whether it can
// be reached, who it is, whether it takes writes, and whether its binlog
// can serve a task that fails over to it.
type SourceHealth struct {
	// Addr is the server's host:port.
	Addr string
	// Err is why the server could not be read; the fields below are then
	// zero.
	Err error
	// Server is its identity, as Position.Server records it.
	Server string
	// ReadOnly: the server refuses writes (read_only=ON), as replicas do.
	ReadOnly bool
	// LogBin and LogReplicaUpdates: it writes a binlog, including what it
	// replicates (log_slave_updates). A server without both cannot serve
	// a task that was reading its primary.
	LogBin, LogReplicaUpdates bool
	// GTID is its GTID position (MariaDB @@gtid_binlog_pos, MySQL
	// @@gtid_executed): what a checkpoint must be contained in.
	GTID string
	// GTIDState is every transaction its binlog holds (MariaDB
	// @@gtid_binlog_state, MySQL @@gtid_executed): where an errant
	// transaction shows.
	GTIDState string

	id sourceID
}

// Reachable reports whether the probe got an answer.
func (h SourceHealth) Reachable() bool { return h.Err == nil }

// Writable reports whether the server is reachable and takes writes: a
// primary.
func (h SourceHealth) Writable() bool { return h.Err == nil && !h.ReadOnly }

// ProbeTimeout bounds one probe: connecting and three short queries.
const ProbeTimeout = 3 * time.Second

// ProbeSource looks at the server e once, within ProbeTimeout. It is the
// one reading of a source's health: core's automatic failover and the
// monitor's SourceFailoverUnsafe rule both decide from it.
func ProbeSource(ctx context.Context, e Endpoint, log *slog.Logger) SourceHealth {
	h := SourceHealth{Addr: e.Addr()}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	db, err := openDB(e, 1, false, log)
	if err != nil {
		h.Err = err
		return h
	}
	defer db.Close()
	var version string
	var logBin, logUpdates int
	if err := db.QueryRowContext(ctx, "SELECT VERSION(), @@log_bin, @@log_slave_updates").Scan(&version, &logBin, &logUpdates); err != nil {
		h.Err = connectError("source", e, err)
		return h
	}
	flavor := e.Flavor
	if flavor == "" {
		flavor = FlavorMySQL
		if strings.Contains(strings.ToLower(version), "mariadb") {
			flavor = FlavorMariaDB
		}
	}
	id, err := sourceIdentity(ctx, db, e, flavor)
	if err != nil {
		h.Err = err
		return h
	}
	c, err := readCandidate(ctx, db, e, flavor, id)
	if err != nil {
		h.Err = err
		return h
	}
	h.id, h.Server, h.GTID, h.GTIDState = id, id.Name, c.pos, c.state
	h.ReadOnly, h.LogBin, h.LogReplicaUpdates = c.readOnly, logBin != 0, logUpdates != 0
	return h
}

// TakeoverProblem says why the server h found cannot serve a task whose
// target has applied everything up to cp, nil if it can: it must be
// reachable, write a binlog that holds what it replicates
// (log_slave_updates), and, unless it wrote cp itself, pass the resume
// rule Run applies on another server (decideTakeover: cp's GTID state
// contained, no errant transaction). Of a checkpoint of unknown server
// only the containment can be checked. followed is the checkpoint's
// Followed history, "" when unknown (then a former primary's writes can
// look errant). cp alone does not carry the
// history the target followed (the checkpoint row does), so on MariaDB
// the errant check is that of an unknown history: after more than one
// failover it may refuse a server Run would accept, never the reverse.
func (h SourceHealth) TakeoverProblem(flavor string, cp Position, followed string) error {
	switch {
	case !h.Reachable():
		return fmt.Errorf("%s is unreachable: %w", h.Addr, h.Err)
	case !h.LogBin:
		return fmt.Errorf("%s has log_bin off", h.Addr)
	case !h.LogReplicaUpdates:
		return fmt.Errorf("%s has log_slave_updates off: its binlog lacks what it replicates", h.Addr)
	case cp.Server != "" && cp.Server == h.Server:
		return nil
	case cp.Server == "":
		// Of no known writer: containment is all that can be checked.
		if c, ok := ComparePositions(flavor, Position{GTID: h.GTID}, Position{GTID: cp.GTID}); cp.GTID == "" || !ok || c < 0 {
			return fmt.Errorf("%s has GTID state %q, which does not contain the checkpoint's %q", h.Addr, h.GTID, cp.GTID)
		}
		return nil
	}
	c := candidate{id: h.id, addr: h.Addr, pos: h.GTID, state: h.GTIDState, readOnly: h.ReadOnly}
	if c.id.Name == "" {
		c.id.Name = h.Server // a probe made up by a test
	}
	return decideTakeover(flavor, cp, followed, c, "the checkpoint table on the target")
}
