package replication

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestDryRunReportsEachCheck: a dry run against the test servers passes
// and lists the tables the filter selects; each way to break it — an
// account without replication grants, a start in a binlog the source
// does not have, a filter selecting nothing, a wrong target password —
// fails its own check, with the fix in the detail.
func TestDryRunReportsEachCheck(t *testing.T) {
	source, target := servers(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := "dryrun_shop"
	source.Exec(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".a (id INT PRIMARY KEY)", "CREATE TABLE "+db+".b (id INT PRIMARY KEY)",
		"CREATE USER IF NOT EXISTS 'dryrun_reader'@'127.0.0.1' IDENTIFIED BY 'pw'", "GRANT SELECT ON *.* TO 'dryrun_reader'@'127.0.0.1'")
	target.Exec(t, "CREATE USER IF NOT EXISTS 'dryrun_writer'@'127.0.0.1' IDENTIFIED BY 'pw'", "GRANT ALL PRIVILEGES ON "+db+".* TO 'dryrun_writer'@'127.0.0.1'")
	t.Cleanup(func() {
		source.Exec(t, "DROP DATABASE "+db, "DROP USER 'dryrun_reader'@'127.0.0.1'")
		target.Exec(t, "DROP USER 'dryrun_writer'@'127.0.0.1'")
	})

	failed := func(rep DryRunReport) []string {
		var out []string
		for _, c := range rep.Checks {
			if !c.OK {
				out = append(out, c.Name+": "+c.Detail)
			}
		}
		return out
	}
	cfg := newConfig(t, source, target, db+".*")
	rep, err := DryRun(ctx, cfg, "current")
	if err != nil || !rep.OK || strings.Join(rep.Tables, ",") != db+".a,"+db+".b" || rep.Start.File == "" {
		t.Fatalf("dry run of a good config: %+v, %v; failed %q", rep, err, failed(rep))
	}

	// A target account with ALL PRIVILEGES on the task's database passes.
	cfg.Target.User, cfg.Target.Password = "dryrun_writer", "pw"
	if rep, err := DryRun(ctx, cfg, "current"); err != nil || !rep.OK {
		t.Fatalf("dry run with a database-level target grant: failed %q, %v", failed(rep), err)
	}

	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		start string
		check string // the first check that fails
		want  string // in its detail
		n     int    // how many fail
	}{
		// Without BINLOG MONITOR the start position cannot be read either.
		{"no replication grants", func(c *Config) { c.Source.User, c.Source.Password = "dryrun_reader", "pw" }, "earliest", "source privileges", "GRANT REPLICATION SLAVE, REPLICATION CLIENT", 2},
		{"purged binlog", nil, "mysql-bin.999999:4", "start position", "no binlog position mysql-bin.999999:4", 1},
		{"filter selects nothing", func(c *Config) { c.Include = []string{"no_such_db.*"} }, "current", "filter", "no table of the source matches", 1},
		{"wrong target password", func(c *Config) { c.Target.Password = "wrong" }, "current", "target connect", "Access denied", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newConfig(t, source, target, db+".*")
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			rep, err := DryRun(ctx, cfg, tc.start)
			f := failed(rep)
			if err != nil || rep.OK || len(f) != tc.n || !strings.HasPrefix(f[0], tc.check+": ") || !strings.Contains(f[0], tc.want) {
				t.Fatalf("failed checks %q (err %v); want %d, the first %s with %q", f, err, tc.n, tc.check, tc.want)
			}
		})
	}
}
