package replication

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/shepherd-dev/shepherd/internal/mysqldial"
)

// Check is one verdict of a dry run.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// DryRunReport is what DryRun found: every check, the start position as
// resolved on the source, and the source tables the filter selects.
type DryRunReport struct {
	OK     bool     `json:"ok"` // every check passed
	Checks []Check  `json:"checks"`
	Start  Position `json:"start"`
	Tables []string `json:"tables"` // db.table, sorted, at most MaxDryRunTables
	// MoreTables counts the selected tables beyond MaxDryRunTables.
	MoreTables int `json:"moreTables,omitempty"`
}

// MaxDryRunTables bounds the tables a report lists.
const MaxDryRunTables = 500

// DryRun checks, without writing anything anywhere, that a task with cfg
// starting at start could run: it connects to the source and the target, checks the
// source's binary log settings (log_bin, binlog_format=ROW,
// binlog_row_image=FULL) and the grants of both accounts, resolves the
// start position (a file:pos must name a binlog file the source still
// has, within its size), and lists the tables the filter selects. A
// failed check is a verdict in the report; only a configuration that
// cannot be checked at all (a bad filter) is an error.
func DryRun(ctx context.Context, cfg Config, start string) (DryRunReport, error) {
	rep := DryRunReport{Checks: []Check{}, Tables: []string{}}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return rep, err
	}
	f, err := newFilter(cfg.Include, cfg.Exclude, cfg.Routes)
	if err != nil {
		return rep, err
	}
	add := func(name string, err error, ok string) {
		c := Check{Name: name, OK: err == nil, Detail: ok}
		if err != nil {
			c.Detail = err.Error()
		}
		rep.Checks = append(rep.Checks, c)
	}
	if src, err := openDB(cfg.Source, 1, false, cfg.Logger); err != nil {
		add("source connect", err, "")
	} else {
		defer src.Close()
		dryRunSource(ctx, src, cfg, start, f, &rep, add)
	}
	env := SinkEnv{Task: cfg.Task, Log: cfg.Logger.With("task", cfg.Task), BatchRows: cfg.BatchRows, Snapshot: cfg.Snapshot.Enabled, filter: f, rawLog: cfg.Logger}
	rep.Checks = append(rep.Checks, cfg.sink().DryRun(ctx, env)...)
	rep.OK = true
	for _, c := range rep.Checks {
		rep.OK = rep.OK && c.OK
	}
	return rep, nil
}

// dryRunConnectError is the dry run's verdict on a failed connect. Anyone
// who may test a connection chooses the host and port, so the verdict
// must not tell a closed port from an open one that is not MySQL (a port
// scanner): every failure to connect or to complete a handshake reads the
// same. Only a MySQL server's own answer after its handshake was accepted
// (access denied, unknown database, too many connections) is shown as is,
// since that server has said what it is already.
func dryRunConnectError(role string, e Endpoint, err error) error {
	var me *mysql.MySQLError
	if mysqldial.HandshakeAccepted(err) && errors.As(err, &me) {
		return connectError(role, e, err)
	}
	return fmt.Errorf("could not reach a MySQL server at %s: check the host and port, and that the server runs and accepts connections from this host", e.Addr())
}

func dryRunSource(ctx context.Context, db *sql.DB, cfg Config, start string, f *filter, rep *DryRunReport, add func(string, error, string)) {
	err := db.PingContext(ctx)
	if err != nil {
		err = dryRunConnectError("source", cfg.Source, err)
	}
	add("source connect", err, "connected to "+cfg.Source.String())
	if err != nil {
		return
	}
	info, err := checkSource(ctx, db, cfg.Source, cfg.ServerID)
	add("source binary log", err, "log_bin on, binlog_format=ROW, binlog_row_image=FULL")
	add("source privileges", checkGrants(ctx, db, cfg.Source,
		[][]string{{"REPLICATION SLAVE", "REPLICATION REPLICA"}, {"REPLICATION CLIENT", "BINLOG MONITOR"}, {"SELECT"}}),
		"REPLICATION SLAVE, REPLICATION CLIENT (BINLOG MONITOR) and SELECT")
	if err == nil {
		if start == "" {
			start = "current"
		}
		pos, err := resolveStart(ctx, db, cfg.Source, info.flavor, start)
		if err == nil && pos.File != "" {
			err = binlogHas(ctx, db, cfg.Source, pos)
		}
		rep.Start = pos
		add("start position", err, fmt.Sprintf("%s resolves to %s, which the source still has", start, pos))
	}
	tables, err := selectedTables(ctx, db, f)
	if len(tables) > MaxDryRunTables {
		rep.MoreTables = len(tables) - MaxDryRunTables
		tables = tables[:MaxDryRunTables]
	}
	rep.Tables = tables
	detail := fmt.Sprintf("%d tables match the filter", len(tables)+rep.MoreTables)
	if err == nil && len(tables) == 0 {
		err = fmt.Errorf("no table of the source matches the filter (include %v, exclude %v): nothing would be copied", cfg.Include, cfg.Exclude)
	}
	add("filter", err, detail)
}

// binlogHas checks that the source still has pos: its file is listed by
// SHOW BINARY LOGS and pos is within the file's size.
func binlogHas(ctx context.Context, db *sql.DB, e Endpoint, pos Position) error {
	rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return needsBinlogMonitor("list the source's binary logs (SHOW BINARY LOGS)", e, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var files []string
	for rows.Next() {
		var name string
		var size uint64
		vals := []any{&name, &size}
		for len(vals) < len(cols) {
			vals = append(vals, new(sql.RawBytes))
		}
		if err := rows.Scan(vals...); err != nil {
			return err
		}
		if name == pos.File {
			if uint64(pos.Pos) > size {
				return fmt.Errorf("%s is %d bytes long: position %d is past its end", name, size, pos.Pos)
			}
			return nil
		}
		files = append(files, name)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return fmt.Errorf("the source has no binary log %s (it has %s): purged, or from another server", pos.File, strings.Join(files, ", "))
}

// dbLevel are the privileges a database-level grant can hold: ALL
// PRIVILEGES on some database counts for them (the check cannot tell
// which databases the task writes), not for the global ones
// (REPLICATION …), which only ALL PRIVILEGES ON *.* includes.
var dbLevel = map[string]bool{"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true, "CREATE": true}

// checkGrants checks that the account's grants include, for each group,
// one of its privileges (or ALL PRIVILEGES).
func checkGrants(ctx context.Context, db *sql.DB, e Endpoint, need [][]string) error {
	rows, err := db.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return fmt.Errorf("SHOW GRANTS as %s: %w", e, err)
	}
	defer rows.Close()
	var all strings.Builder
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return err
		}
		all.WriteString(strings.ToUpper(g) + "\n")
	}
	if err := rows.Err(); err != nil {
		return err
	}
	grants := all.String()
	if strings.Contains(grants, "ALL PRIVILEGES ON *.*") {
		return nil
	}
	var missing []string
	for _, group := range need {
		has := func(p string) bool {
			return strings.Contains(grants, p) || (dbLevel[p] && strings.Contains(grants, "ALL PRIVILEGES ON"))
		}
		if !slices.ContainsFunc(group, has) {
			missing = append(missing, group[0])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks %s: GRANT %s ON *.* TO %s", e, strings.Join(missing, ", "), strings.Join(missing, ", "), e.User)
	}
	return nil
}

// selectedTables lists the source's base tables the filter includes.
func selectedTables(ctx context.Context, db *sql.DB, f *filter) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' ORDER BY 1, 2")
	if err != nil {
		return nil, fmt.Errorf("list the source's tables: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var schema, table string
		if err := rows.Scan(&schema, &table); err != nil {
			return nil, err
		}
		if f.tableIncluded(schema, table) {
			out = append(out, schema+"."+table)
		}
	}
	return out, rows.Err()
}
