package replication

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/shepherd-dev/shepherd/internal/mysqldial"
)

// openDB opens a database/sql pool to e. Sessions run in UTC, with
// foreign key checks off (row events already carry the effects of the
// source's checks, and rows arrive in an order the checks need not like),
// and with a sql_mode chosen to store exactly what the source stored:
// strict, so that a value the target cannot hold is an error rather than
// a silent truncation; ALLOW_INVALID_DATES, because a source may hold
// them; NO_AUTO_VALUE_ON_ZERO, so an explicit 0 in an AUTO_INCREMENT
// column stays 0; and without NO_BACKSLASH_ESCAPES, since literals are
// escaped with backslashes. Rows-affected counts matched rows, which the
// checkpoint fence needs. multi allows multi-statement packets (the
// target; see targetSession).
func openDB(e Endpoint, maxConns int, multi bool, log *slog.Logger) (*sql.DB, error) {
	return openDBConfig(e, maxConns, dbConfig(e, multi, log), log)
}

// dbConfig is the driver configuration of every connection the
// replicator makes (see openDB).
func dbConfig(e Endpoint, multi bool, log *slog.Logger) *mysql.Config {
	c := mysql.NewConfig()
	c.Logger = driverLogger{log.With("component", "go-sql-driver", "server", e.Addr())}
	c.User, c.Passwd = e.User, e.Password
	c.Net, c.Addr = "tcp", e.Addr()
	c.Loc = time.UTC
	c.ParseTime = true
	c.InterpolateParams = true
	c.ClientFoundRows = true
	c.MultiStatements = multi
	c.Timeout = 10 * time.Second
	c.Collation = "utf8mb4_general_ci"
	c.Params = map[string]string{
		"time_zone":          "'+00:00'",
		"sql_mode":           "'STRICT_ALL_TABLES,ALLOW_INVALID_DATES,NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION'",
		"foreign_key_checks": "0",
	}
	return c
}

// openSnapshotDB opens the pool the snapshot copy reads rows with: as
// openDB's, but values come as the binary protocol carries them (every
// query has a parameter, so it is prepared) — FLOAT as float32, which
// MariaDB's text protocol would round to six digits — temporal values
// as text (no parseTime: a zero date stays '0000-00-00'), and strings
// in their column's own character set (character_set_results=binary),
// the bytes the binlog would carry.
func openSnapshotDB(e Endpoint, log *slog.Logger) (*sql.DB, error) {
	c := dbConfig(e, false, log)
	c.InterpolateParams = false
	c.ParseTime = false
	c.Params["character_set_results"] = "binary"
	return openDBConfig(e, 2, c, log)
}

func openDBConfig(e Endpoint, maxConns int, c *mysql.Config, log *slog.Logger) (*sql.DB, error) {
	db, err := mysqldial.OpenDB(c, log)
	if err != nil {
		return nil, fmt.Errorf("%w: endpoint %s: %w", ErrConfig, e, err)
	}
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

// driverLogger passes go-sql-driver's notices (a pooled connection found
// dead, a reset) to slog at debug level: the errors that matter reach the
// caller as errors.
type driverLogger struct{ log *slog.Logger }

func (l driverLogger) Print(v ...any) { l.log.Debug(strings.TrimSpace(fmt.Sprint(v...))) }

// connectError explains a failure to reach an endpoint. Denied access is
// non-retryable and says which fields to check, named as the task spec
// spells them (role is "source" or "target"): operators read this in
// ctl task show, the console and notifications, and write specs, not Go.
func connectError(role string, e Endpoint, err error) error {
	if accessDenied(err) {
		return nonRetryable(fmt.Errorf("connect to %s %s: %w (check the task's %s.user and %s.password or %s.passwordFile, and the account's grants)", role, e, err, role, role, role))
	}
	return fmt.Errorf("connect to %s %s: %w", role, e, err)
}

// sourceInfo is what Open learns about the source.
type sourceInfo struct {
	flavor  string
	version string
}

// checkSource verifies that the source writes a binary log Run can read:
// enabled, in ROW format, with full row images. Each failure names the
// variable and the fix, and wraps ErrSourceConfig.
func checkSource(ctx context.Context, db *sql.DB, e Endpoint, serverID uint32) (sourceInfo, error) {
	var info sourceInfo
	var logBin, format, image string
	var sid uint32
	err := db.QueryRowContext(ctx, "SELECT @@version, @@log_bin, @@binlog_format, @@binlog_row_image, @@server_id").
		Scan(&info.version, &logBin, &format, &image, &sid)
	if err != nil {
		return info, connectError("source", e, err)
	}
	info.flavor = e.Flavor
	isMariaDB := strings.Contains(strings.ToLower(info.version), "mariadb")
	switch {
	case info.flavor == "" && isMariaDB:
		info.flavor = FlavorMariaDB
	case info.flavor == "":
		info.flavor = FlavorMySQL
	case info.flavor == FlavorMySQL && isMariaDB, info.flavor == FlavorMariaDB && !isMariaDB:
		return info, fmt.Errorf("%w: source.flavor is %q but %s runs %s; set the task's source.flavor to %q or leave it out",
			ErrConfig, e.Flavor, e, info.version, map[bool]string{true: FlavorMariaDB, false: FlavorMySQL}[isMariaDB])
	}
	fix := "mariadbd/mysqld option file"
	switch {
	case logBin != "1" && !strings.EqualFold(logBin, "ON"):
		return info, fmt.Errorf("%w: source %s has log_bin=OFF: start the server with --log-bin (and --server-id) in its %s", ErrSourceConfig, e, fix)
	case !strings.EqualFold(format, "ROW"):
		return info, fmt.Errorf("%w: source %s has binlog_format=%s, need ROW: run SET GLOBAL binlog_format='ROW' (sessions already open keep the old format until they reconnect) and put binlog_format=ROW in its %s",
			ErrSourceConfig, e, format, fix)
	case !strings.EqualFold(image, "FULL"):
		return info, fmt.Errorf("%w: source %s has binlog_row_image=%s, need FULL (every column in every row event): run SET GLOBAL binlog_row_image='FULL' and put binlog_row_image=FULL in its %s",
			ErrSourceConfig, e, image, fix)
	case sid == serverID:
		return info, fmt.Errorf("%w: ServerID %d is the source's own server_id; choose another (or 0 to derive one from Task)", ErrConfig, serverID)
	}
	if info.flavor == FlavorMySQL {
		var opts sql.NullString
		if err := db.QueryRowContext(ctx, "SELECT @@binlog_row_value_options").Scan(&opts); err == nil &&
			strings.Contains(strings.ToUpper(opts.String), "PARTIAL_JSON") {
			return info, fmt.Errorf("%w: source %s has binlog_row_value_options=%s, which logs JSON updates as diffs: run SET GLOBAL binlog_row_value_options=''",
				ErrSourceConfig, e, opts.String)
		}
	}
	return info, nil
}

// resolveStart turns a start spec into a position on the source:
// "current" (the end of the binlog now), "earliest" (the oldest binlog
// file kept), "file:pos", or a GTID set in the source's flavor.
func resolveStart(ctx context.Context, db *sql.DB, e Endpoint, flavor, spec string) (Position, error) {
	spec = strings.TrimSpace(spec)
	switch strings.ToLower(spec) {
	case "":
		return Position{}, fmt.Errorf("%w: empty start: use current, earliest, file:pos or a GTID set", ErrConfig)
	case "current", "snapshot":
		// A snapshot's binlog starts where the source is now; the copy's
		// own positions follow (see snapshot.go).
		file, pos, gtid, err := masterStatus(ctx, db, e)
		if err != nil {
			return Position{}, err
		}
		p := Position{File: file, Pos: pos, GTID: gtid}
		if flavor == FlavorMariaDB {
			if p.GTID, err = binlogGTIDPos(ctx, db, file, pos); err != nil {
				return Position{}, err
			}
		}
		return p, nil
	case "earliest":
		file, err := firstBinlog(ctx, db, e)
		if err != nil {
			return Position{}, err
		}
		p := Position{File: file, Pos: 4}
		if flavor == FlavorMariaDB {
			if p.GTID, err = binlogGTIDPos(ctx, db, file, 4); err != nil {
				return Position{}, err
			}
		} else if err := db.QueryRowContext(ctx, "SELECT @@gtid_purged").Scan(&p.GTID); err != nil {
			p.GTID = "" // GTIDs off: file:pos alone
		}
		return p, nil
	}
	if p, isFile, err := ParseFilePos(spec); isFile {
		if err != nil {
			return Position{}, fmt.Errorf("%w: start %q: %v", ErrConfig, spec, err)
		}
		if flavor == FlavorMariaDB {
			if p.GTID, err = binlogGTIDPos(ctx, db, p.File, p.Pos); err != nil {
				return Position{}, err
			}
		}
		return p, nil
	}
	g, err := gomysql.ParseGTIDSet(flavor, spec)
	if err != nil {
		return Position{}, fmt.Errorf("%w: start %q is not current, earliest, file:pos or a %s GTID set: %v", ErrConfig, spec, flavor, err)
	}
	return Position{GTID: g.String()}, nil
}

// A sourceID is who the source server is: Name, recorded with every
// position, is "mysql:" and its server_uuid, or "mariadb:" and its
// server_id (MariaDB has no uuid, and a replication topology needs
// distinct ids); ServerID is what the binlog dump's first event carries.
type sourceID struct {
	Name     string
	ServerID uint32
}

// sourceIdentity asks the source who it is, one statement per flavor.
func sourceIdentity(ctx context.Context, db *sql.DB, e Endpoint, flavor string) (sourceID, error) {
	id, err := serverIdentity(ctx, db, flavor)
	if err != nil {
		return id, connectError("source", e, err)
	}
	return id, nil
}

// ServerIdentity asks the server behind db who it is, named as
// Position.Server names it: "mysql:<server_uuid>", or
// "mariadb:<server_id>" (MariaDB has no uuid). Whoever compares positions
// with the replicator's — the monitor's readings of a source — names the
// server with this.
func ServerIdentity(ctx context.Context, db *sql.DB, flavor string) (string, error) {
	id, err := serverIdentity(ctx, db, flavor)
	return id.Name, err
}

func serverIdentity(ctx context.Context, db *sql.DB, flavor string) (sourceID, error) {
	var id sourceID
	if flavor == FlavorMySQL {
		var u string
		if err := db.QueryRowContext(ctx, "SELECT @@server_id, @@server_uuid").Scan(&id.ServerID, &u); err != nil {
			return id, err
		}
		id.Name = serverMySQL + u
		return id, nil
	}
	if err := db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id.ServerID); err != nil {
		return id, err
	}
	id.Name = serverMariaDB + strconv.FormatUint(uint64(id.ServerID), 10)
	return id, nil
}

// needsBinlogMonitor wraps the failure of what, a statement that needs
// the privilege to read the source's binlog position and files; when the
// server denied it, the error names the grant. MariaDB 10.5 renamed
// REPLICATION CLIENT to BINLOG MONITOR and kept the old name as an alias,
// so one GRANT fits both flavors.
func needsBinlogMonitor(what string, e Endpoint, err error) error {
	if accessDenied(err) {
		return fmt.Errorf("%s: %w: the source account needs the BINLOG MONITOR privilege (REPLICATION CLIENT on MySQL): GRANT REPLICATION CLIENT ON *.* TO %s", what, err, e.User)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// masterStatus reads the source's current binlog file and offset (and, on
// MySQL, the executed GTID set, in the same snapshot).
func masterStatus(ctx context.Context, db queryer, e Endpoint) (string, uint32, string, error) {
	rows, err := db.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		// MySQL 8.4 renamed it.
		var err2 error
		if rows, err2 = db.QueryContext(ctx, "SHOW BINARY LOG STATUS"); err2 != nil {
			return "", 0, "", needsBinlogMonitor("read the source's binlog position (SHOW MASTER STATUS)", e, err)
		}
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", 0, "", err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return "", 0, "", err
		}
		return "", 0, "", fmt.Errorf("%w: the source reports no binary log (SHOW MASTER STATUS is empty): enable --log-bin", ErrSourceConfig)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return "", 0, "", err
	}
	var file, gtid string
	var pos uint64
	for i, c := range cols {
		switch strings.ToLower(c) {
		case "file":
			file = vals[i].String
		case "position":
			fmt.Sscan(vals[i].String, &pos)
		case "executed_gtid_set":
			gtid = strings.ReplaceAll(vals[i].String, "\n", "")
		}
	}
	return file, uint32(pos), gtid, rows.Err()
}

func firstBinlog(ctx context.Context, db *sql.DB, e Endpoint) (string, error) {
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return "", needsBinlogMonitor("list the source's binary logs (SHOW BINARY LOGS)", e, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return "", fmt.Errorf("%w: the source has no binary log files", ErrSourceConfig)
	}
	vals := make([]any, len(cols))
	var name string
	vals[0] = &name
	for i := 1; i < len(vals); i++ {
		vals[i] = new(sql.RawBytes)
	}
	if err := rows.Scan(vals...); err != nil {
		return "", err
	}
	return name, nil
}

// binlogGTIDPos asks MariaDB for its GTID position at file:pos.
func binlogGTIDPos(ctx context.Context, db *sql.DB, file string, pos uint32) (string, error) {
	var g sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", file, pos).Scan(&g); err != nil {
		return "", fmt.Errorf("GTID position of %s:%d: %w", file, pos, err)
	}
	if !g.Valid {
		return "", fmt.Errorf("%w: the source has no binlog position %s:%d (purged, or not a file it wrote)", ErrNotOnSource, file, pos)
	}
	return g.String, nil
}

// isPurged reports a binlog dump refused because the position is gone.
func isPurged(err error) bool {
	code, _, ok := serverErrorCode(err)
	return ok && code == erMasterFatalReading && !retryable(err)
}

var errNoStart = errors.New("no start position: pass one from ResolveStart, or start from a target that has a checkpoint")
