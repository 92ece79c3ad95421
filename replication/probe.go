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
	// GTID is its GTID state: everything its binlog holds or it applied.
	GTID string
}

// Reachable reports whether the probe got an answer.
func (h SourceHealth) Reachable() bool { return h.Err == nil }

// Writable reports whether the server is reachable and takes writes: a
// primary.
func (h SourceHealth) Writable() bool { return h.Err == nil && !h.ReadOnly }

// CanServe reports whether a task can read its binlog after a failover:
// reachable, with a binlog that holds what it replicates and GTIDs to
// resume by.
func (h SourceHealth) CanServe() bool {
	return h.Err == nil && h.LogBin && h.LogReplicaUpdates && h.GTID != ""
}

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
	var readOnly, logBin, logUpdates int
	if err := db.QueryRowContext(ctx, "SELECT VERSION(), @@read_only, @@log_bin, @@log_slave_updates").Scan(&version, &readOnly, &logBin, &logUpdates); err != nil {
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
	gtid, err := gtidState(ctx, db, flavor)
	if err != nil {
		h.Err = fmt.Errorf("source %s: %w", e, err)
		return h
	}
	h.Server, h.GTID = id.Name, gtid
	h.ReadOnly, h.LogBin, h.LogReplicaUpdates = readOnly != 0, logBin != 0, logUpdates != 0
	return h
}
