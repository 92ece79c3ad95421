package monitor

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/mysqldial"
	"github.com/shepherd-dev/shepherd/replication"
)

// BinlogFile is one binary log a source still has.
type BinlogFile struct {
	Name string `json:"name"`
	Size uint64 `json:"size"`
}

// SourceReading is what the monitor read from a task's source itself:
// the binary logs it still has and how long it keeps them.
type SourceReading struct {
	Addr string    `json:"addr"`
	At   time.Time `json:"at"`
	// Server is who answered at Addr, as Position.Server names it
	// (replication.ServerIdentity): a VIP or DNS name may have moved to
	// another server, whose file names mean nothing for a checkpoint.
	Server string `json:"server,omitempty"`
	// Err is why the source could not be read; the other fields are then
	// empty.
	Err string `json:"err,omitempty"`
	// Logs are SHOW BINARY LOGS, oldest first; the last is being written.
	Logs []BinlogFile `json:"logs,omitempty"`
	// ExpireSeconds is how long the source keeps a binary log after its
	// last write (binlog_expire_logs_seconds, else expire_logs_days); 0
	// is never.
	ExpireSeconds int64 `json:"expireSeconds"`
}

// Current is the source's position: the end of its newest binary log.
func (r SourceReading) Current() core.Position {
	if len(r.Logs) == 0 {
		return core.Position{}
	}
	last := r.Logs[len(r.Logs)-1]
	return core.Position{File: last.Name, Pos: uint32(min(last.Size, uint64(^uint32(0)))), Server: r.Server}
}

// Has reports whether the source still has the binary log file.
func (r SourceReading) Has(file string) bool {
	return slices.ContainsFunc(r.Logs, func(b BinlogFile) bool { return b.Name == file })
}

// ReadSource connects to a task's source as the task does (its user and
// password) and reads its binary logs and their expiry. A failure is in
// the reading's Err.
func ReadSource(ctx context.Context, ep core.Endpoint, password string, now time.Time) SourceReading {
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	r := SourceReading{Addr: addr, At: now}
	if err := readSource(ctx, addr, ep.User, password, ep.Flavor, &r); err != nil {
		r.Err = fmt.Sprintf("read binary logs of %s as %s: %v", addr, ep.User, err)
		r.Logs, r.ExpireSeconds, r.Server = nil, 0, ""
	}
	return r
}

func readSource(ctx context.Context, addr, user, password, flavor string, r *SourceReading) error {
	// (The monitor bounds its readings itself; a caller of ReadSource
	// alone gets sourceTimeout too: a source that hangs must not hang it.)
	ctx, cancel := context.WithTimeout(ctx, sourceTimeout)
	defer cancel()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = user, password, "tcp", addr
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = sourceTimeout, sourceTimeout, sourceTimeout
	db, err := mysqldial.OpenDB(cfg, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if r.Server, err = replication.ServerIdentity(ctx, db, flavor); err != nil {
		return fmt.Errorf("server identity: %w", err)
	}
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return fmt.Errorf("SHOW BINARY LOGS: %w (the task's user needs REPLICATION CLIENT or BINLOG MONITOR)", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		// Log_name, File_size, and on MySQL 8 Encrypted.
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if len(vals) < 2 {
			return fmt.Errorf("SHOW BINARY LOGS: %d columns, want at least 2", len(vals))
		}
		size, err := strconv.ParseUint(string(vals[1]), 10, 64)
		if err != nil {
			return fmt.Errorf("SHOW BINARY LOGS: size %q of %s: %w", vals[1], vals[0], err)
		}
		r.Logs = append(r.Logs, BinlogFile{Name: string(vals[0]), Size: size})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	// binlog_expire_logs_seconds exists on MySQL 8 and MariaDB 10.6+; on
	// both a non-zero value wins over expire_logs_days.
	var secs sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT @@binlog_expire_logs_seconds").Scan(&secs); err == nil && secs.Int64 > 0 {
		r.ExpireSeconds = secs.Int64
		return nil
	}
	var days sql.NullFloat64
	if err := db.QueryRowContext(ctx, "SELECT @@expire_logs_days").Scan(&days); err != nil {
		return fmt.Errorf("read expire_logs_days: %w", err)
	}
	r.ExpireSeconds = int64(days.Float64 * 86400)
	return nil
}
