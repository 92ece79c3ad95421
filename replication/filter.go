package replication

import (
	"fmt"
	"strings"
)

// systemSchemas are never replicated: they describe the server itself,
// and writing another server's grants or statistics into the target would
// break it.
var systemSchemas = map[string]bool{
	"mysql": true, "information_schema": true, "performance_schema": true, "sys": true,
}

// pattern is one "db.table" glob of Include or Exclude.
type pattern struct{ db, table string }

func parsePattern(s string) (pattern, error) {
	db, table, found := strings.Cut(s, ".")
	if !found {
		table = "*"
	}
	if db == "" || table == "" || strings.Contains(table, ".") {
		return pattern{}, fmt.Errorf("%w: pattern %q is not db.table (use * as a wildcard)", ErrConfig, s)
	}
	return pattern{db: db, table: table}, nil
}

func (p pattern) matches(db, table string) bool { return glob(p.db, db) && glob(p.table, table) }

// glob matches s against p, where * matches any run of characters and
// everything else matches itself.
func glob(p, s string) bool {
	star := strings.IndexByte(p, '*')
	if star < 0 {
		return p == s
	}
	prefix := p[:star]
	if !strings.HasPrefix(s, prefix) {
		return false
	}
	s, p = s[len(prefix):], p[star+1:]
	for i := 0; i <= len(s); i++ {
		if glob(p, s[i:]) {
			return true
		}
	}
	return false
}

// filter decides what is replicated and where it lands.
type filter struct {
	include, exclude []pattern
	tableRoutes      []Route
	dbRoutes         []Route
}

func newFilter(include, exclude []string, routes []Route) (*filter, error) {
	f := &filter{}
	for _, list := range []struct {
		in  []string
		out *[]pattern
	}{{include, &f.include}, {exclude, &f.exclude}} {
		for _, s := range list.in {
			p, err := parsePattern(s)
			if err != nil {
				return nil, err
			}
			*list.out = append(*list.out, p)
		}
	}
	for i, r := range routes {
		switch {
		case r.FromDB == "":
			return nil, fmt.Errorf("%w: Routes[%d].FromDB is empty", ErrConfig, i)
		case r.FromTable == "" && r.ToTable != "":
			return nil, fmt.Errorf("%w: Routes[%d] renames a table (ToTable %q) but names no FromTable", ErrConfig, i, r.ToTable)
		case r.ToDB == "" && r.ToTable == "":
			return nil, fmt.Errorf("%w: Routes[%d] from %s.%s names neither ToDB nor ToTable", ErrConfig, i, r.FromDB, r.FromTable)
		case strings.ContainsAny(r.FromDB+r.FromTable+r.ToDB+r.ToTable, "*"):
			return nil, fmt.Errorf("%w: Routes[%d] contains a wildcard; routes name exact databases and tables", ErrConfig, i)
		}
		if r.FromTable == "" {
			f.dbRoutes = append(f.dbRoutes, r)
		} else {
			f.tableRoutes = append(f.tableRoutes, r)
		}
	}
	return f, nil
}

// tableIncluded reports whether changes to db.table are replicated.
func (f *filter) tableIncluded(db, table string) bool {
	if systemSchemas[strings.ToLower(db)] {
		return false
	}
	for _, p := range f.exclude {
		if p.matches(db, table) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, p := range f.include {
		if p.matches(db, table) {
			return true
		}
	}
	return false
}

// dbIncluded reports whether some table of db may be replicated, so that
// CREATE DATABASE db and ALTER DATABASE db must reach the target.
func (f *filter) dbIncluded(db string) bool {
	if systemSchemas[strings.ToLower(db)] {
		return false
	}
	for _, p := range f.exclude {
		if p.table == "*" && glob(p.db, db) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, p := range f.include {
		if glob(p.db, db) {
			return true
		}
	}
	return false
}

// dbWhollyIncluded reports whether every table of db is replicated, the
// condition for DROP DATABASE db to be applied: dropping a target
// database that also holds tables this task does not own would destroy
// them.
func (f *filter) dbWhollyIncluded(db string) bool {
	if systemSchemas[strings.ToLower(db)] {
		return false
	}
	for _, p := range f.exclude {
		if glob(p.db, db) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, p := range f.include {
		if p.table == "*" && glob(p.db, db) {
			return true
		}
	}
	return false
}

// route returns where db.table lands on the target.
func (f *filter) route(db, table string) (string, string) {
	for _, r := range f.tableRoutes {
		if r.FromDB == db && r.FromTable == table {
			toDB, toTable := r.ToDB, r.ToTable
			if toDB == "" {
				toDB = f.routeDB(db)
			}
			if toTable == "" {
				toTable = table
			}
			return toDB, toTable
		}
	}
	return f.routeDB(db), table
}

// routeDB returns where database db lands on the target.
func (f *filter) routeDB(db string) string {
	for _, r := range f.dbRoutes {
		if r.FromDB == db {
			return r.ToDB
		}
	}
	return db
}
