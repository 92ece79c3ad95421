package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
	"github.com/shopspring/decimal"
)

// col is a column named c of the given type.
func col(dataType string, unsigned bool, charset string, labels ...string) *column {
	return &column{name: "c", dataType: dataType, unsigned: unsigned, charset: charset, labels: labels}
}

func TestAppendLiteral(t *testing.T) {
	tests := []struct {
		c     *column
		v     any
		where bool
		want  string
	}{
		{col("int", false, ""), nil, false, "NULL"},
		{col("tinyint", true, ""), int8(-1), false, "255"},
		{col("tinyint", false, ""), int8(-1), false, "-1"},
		{col("smallint", true, ""), int16(-2), false, "65534"},
		{col("mediumint", true, ""), int32(-1), false, "16777215"},
		{col("mediumint", false, ""), int32(-8388608), false, "-8388608"},
		{col("int", true, ""), int32(-1), false, "4294967295"},
		{col("bigint", true, ""), int64(-1), false, "18446744073709551615"},
		{col("bigint", false, ""), int64(math.MinInt64), false, "-9223372036854775808"},
		{col("bigint", true, ""), uint64(math.MaxUint64), false, "18446744073709551615"},
		{col("year", false, ""), 2155, false, "2155"},
		{col("float", false, ""), float32(1.1), false, "1.100000023841858"},
		{col("double", false, ""), 0.1, false, "0.1"},
		{col("double", false, ""), 1e300, false, "1e+300"},
		{col("decimal", false, ""), "-12345678901234567890.0123456789", false, "-12345678901234567890.0123456789"},
		{col("decimal", false, ""), decimal.RequireFromString("1.50"), false, "1.5"},
		{col("datetime", false, ""), "2026-11-22 12:34:56.500000", false, "'2026-11-22 12:34:56.500000'"},
		{col("time", false, ""), "-838:59:59.000", false, "'-838:59:59.000'"},
		{col("bit", false, ""), int64(-1), false, "18446744073709551615"},
		{col("enum", false, "utf8mb4", "a", "b'q"), int64(2), false, `'b\'q'`},
		{col("enum", false, "utf8mb4", "a"), int64(0), false, "''"},
		{col("set", false, "utf8mb4", "x", "y", "z"), int64(5), false, "'x,z'"},
		{col("set", false, "utf8mb4", "x"), int64(0), false, "''"},
		{col("varchar", false, "utf8mb4"), "it's \\ \"x\"\n\r\x00\x1a", false, `_utf8mb4'it\'s \\ \"x\"\n\r\0\Z'`},
		{col("varchar", false, "utf8mb4"), "Ab", true, "_utf8mb4'Ab' COLLATE utf8mb4_bin"},
		{col("varchar", false, "latin1"), []byte{'c', 0xe9}, false, "_latin1'c\xe9'"},
		{col("varchar", false, "gbk"), []byte{0xdf, 0x5c}, false, "_gbk X'df5c'"},
		{col("blob", false, ""), []byte{0, '\'', 0xff}, false, "_binary'\\0\\'\xff'"},
		{col("json", false, "utf8mb4"), `{"a":1}`, false, `_utf8mb4'{\"a\":1}'`},
		{col("json", false, "utf8mb4"), `[1]`, true, `CAST(_utf8mb4'[1]' AS JSON)`},
	}
	for _, tt := range tests {
		got, err := appendLiteral(nil, tt.c, tt.v, tt.where)
		if err != nil || string(got) != tt.want {
			t.Errorf("appendLiteral(%s, %#v, where=%v) = %q, %v; want %q", tt.c.dataType, tt.v, tt.where, got, err, tt.want)
		}
	}

	bad := []struct {
		c *column
		v any
	}{
		{col("double", false, ""), math.NaN()},
		{col("double", false, ""), math.Inf(1)},
		{col("decimal", false, ""), "1; DROP TABLE x"},
		{col("enum", false, "utf8mb4", "a"), int64(2)},
		{col("set", false, "utf8mb4", "a"), int64(2)},
		{col("int", false, ""), struct{}{}},
	}
	for _, tt := range bad {
		if got, err := appendLiteral(nil, tt.c, tt.v, false); err == nil {
			t.Errorf("appendLiteral(%s, %#v) = %q, want an error", tt.c.dataType, tt.v, got)
		}
	}
}

// TestParamOf checks the values sent as parameters of a prepared
// statement: the number or string whose conversion by the server is the
// literal's, and the refusals appendLiteral makes.
func TestParamOf(t *testing.T) {
	tests := []struct {
		c    *column
		v    any
		want any
	}{
		{col("int", false, ""), nil, nil},
		{col("tinyint", true, ""), int8(-1), uint64(255)},
		{col("tinyint", false, ""), int8(-1), int64(-1)},
		{col("mediumint", true, ""), int32(-1), uint64(16777215)},
		{col("int", true, ""), int32(-1), uint64(4294967295)},
		{col("bigint", true, ""), int64(-1), uint64(math.MaxUint64)},
		{col("bigint", false, ""), int64(math.MinInt64), int64(math.MinInt64)},
		{col("float", false, ""), float32(1.1), float64(float32(1.1))},
		{col("decimal", false, ""), decimal.RequireFromString("1.50"), "1.5"},
		{col("decimal", false, ""), "-1.25", "-1.25"},
		{col("datetime", false, ""), "2026-11-22 12:34:56.500000", "2026-11-22 12:34:56.500000"},
		{col("bit", false, ""), int64(-1), uint64(math.MaxUint64)},
		{col("enum", false, "utf8mb4", "a", "b'q"), int64(2), "b'q"},
		{col("set", false, "utf8mb4", "x", "y", "z"), int64(5), "x,z"},
		{col("varchar", false, "utf8mb4"), "it's\n", "it's\n"},
		{col("blob", false, ""), []byte{0, '\'', 0xff}, "\x00'\xff"},
	}
	for _, tt := range tests {
		if !paramOK(tt.c) {
			t.Errorf("paramOK(%s %s) = false, want true", tt.c.dataType, tt.c.charset)
		}
		got, err := paramOf(tt.c, tt.v)
		if err != nil || got != tt.want {
			t.Errorf("paramOf(%s, %#v) = %#v, %v; want %#v", tt.c.dataType, tt.v, got, err, tt.want)
		}
	}
	for _, cs := range []string{"latin1", "gbk", "utf8mb3"} {
		if paramOK(col("varchar", false, cs)) {
			t.Errorf("paramOK(varchar %s) = true: a parameter would be converted from utf8mb4", cs)
		}
	}
	for _, tt := range []struct {
		c *column
		v any
	}{
		{col("double", false, ""), math.NaN()},
		{col("decimal", false, ""), "1; DROP TABLE x"},
		{col("enum", false, "utf8mb4", "a"), int64(2)},
		{col("int", false, ""), struct{}{}},
	} {
		if got, err := paramOf(tt.c, tt.v); err == nil {
			t.Errorf("paramOf(%s, %#v) = %#v, want an error", tt.c.dataType, tt.v, got)
		}
	}
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"enum('a','b')", []string{"a", "b"}},
		{"enum('it''s','c,d','')", []string{"it's", "c,d", ""}},
		{`set('a\\b','x')`, []string{`a\b`, "x"}},
	}
	for _, tt := range tests {
		got, err := parseLabels(tt.in)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) || len(got) != len(tt.want) {
			t.Errorf("parseLabels(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"enum", "enum(a)", "enum('a'", "enum('a' 'b')"} {
		if got, err := parseLabels(bad); err == nil {
			t.Errorf("parseLabels(%q) = %q, want an error", bad, got)
		}
	}
}

func TestIsGeneratedExtra(t *testing.T) {
	for extra, want := range map[string]bool{
		"": false, "auto_increment": false, "DEFAULT_GENERATED": false, "on update current_timestamp()": false,
		"VIRTUAL GENERATED": true, "STORED GENERATED": true, "PERSISTENT": true, "virtual": true,
	} {
		if got := isGeneratedExtra(extra); got != want {
			t.Errorf("isGeneratedExtra(%q) = %v, want %v", extra, got, want)
		}
	}
}

func TestFilter(t *testing.T) {
	f, err := newFilter([]string{"shop.*", "crm.cust*", "logs_*"}, []string{"shop.tmp_*", "*.secret"}, []Route{
		{FromDB: "shop", ToDB: "shop2"},
		{FromDB: "crm", FromTable: "customers", ToTable: "clients"},
		{FromDB: "shop", FromTable: "orders", ToDB: "archive"},
	})
	if err != nil {
		t.Fatal(err)
	}
	included := []struct {
		db, table string
		want      bool
	}{
		{"shop", "orders", true}, {"shop", "tmp_1", false}, {"shop", "secret", false},
		{"crm", "customers", true}, {"crm", "orders", false}, {"logs_2026", "x", true},
		{"other", "x", false}, {"mysql", "user", false}, {"Shop", "orders", false},
	}
	for _, tt := range included {
		if got := f.tableIncluded(tt.db, tt.table); got != tt.want {
			t.Errorf("tableIncluded(%s.%s) = %v, want %v", tt.db, tt.table, got, tt.want)
		}
	}
	routes := []struct{ db, table, wantDB, wantTable string }{
		{"shop", "items", "shop2", "items"},
		{"shop", "orders", "archive", "orders"},
		{"crm", "customers", "crm", "clients"},
		{"other", "t", "other", "t"},
	}
	for _, tt := range routes {
		if db, table := f.route(tt.db, tt.table); db != tt.wantDB || table != tt.wantTable {
			t.Errorf("route(%s.%s) = %s.%s, want %s.%s", tt.db, tt.table, db, table, tt.wantDB, tt.wantTable)
		}
	}
	for db, want := range map[string]bool{"shop": true, "crm": true, "logs_1": true, "other": false, "sys": false} {
		if got := f.dbIncluded(db); got != want {
			t.Errorf("dbIncluded(%s) = %v, want %v", db, got, want)
		}
	}
	for db, want := range map[string]bool{"shop": false, "crm": false, "logs_1": false} {
		// shop has excluded tables, crm only some tables, and *.secret
		// excludes a table in every database.
		if got := f.dbWhollyIncluded(db); got != want {
			t.Errorf("dbWhollyIncluded(%s) = %v, want %v", db, got, want)
		}
	}
	all, _ := newFilter(nil, nil, nil)
	if !all.tableIncluded("any", "table") || all.tableIncluded("performance_schema", "x") || !all.dbWhollyIncluded("any") {
		t.Errorf("an empty filter must include every non-system table and database")
	}

	for _, tt := range []struct {
		include []string
		routes  []Route
	}{
		{[]string{".t"}, nil}, {[]string{"db."}, nil}, {[]string{"a.b.c"}, nil},
		{nil, []Route{{ToDB: "x"}}}, {nil, []Route{{FromDB: "a"}}},
		{nil, []Route{{FromDB: "a", ToTable: "t"}}}, {nil, []Route{{FromDB: "a*", ToDB: "b"}}},
	} {
		if _, err := newFilter(tt.include, nil, tt.routes); !errors.Is(err, ErrConfig) {
			t.Errorf("newFilter(%q, %+v) = %v, want ErrConfig", tt.include, tt.routes, err)
		}
	}
}

func TestGlob(t *testing.T) {
	for _, tt := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"a*", "abc", true}, {"*c", "abc", true}, {"a*c", "abbbc", true},
		{"a*b*c", "axxbyyc", true}, {"a*c", "abcd", false}, {"abc", "abc", true}, {"abc", "abd", false},
	} {
		if got := glob(tt.p, tt.s); got != tt.want {
			t.Errorf("glob(%q, %q) = %v, want %v", tt.p, tt.s, got, tt.want)
		}
	}
}

func TestPositions(t *testing.T) {
	p := func(file string, pos uint32, gtid string) Position { return Position{File: file, Pos: pos, GTID: gtid} }
	tests := []struct {
		a, b   Position
		cmp    int
		ok     bool
		flavor string
	}{
		{p("mysql-bin.000001", 100, ""), p("mysql-bin.000001", 200, ""), -1, true, FlavorMariaDB},
		{p("mysql-bin.000002", 4, ""), p("mysql-bin.000001", 900, ""), 1, true, FlavorMariaDB},
		{p("mysql-bin.000009", 4, ""), p("mysql-bin.000010", 4, ""), -1, true, FlavorMariaDB},
		// By number, never as text: "mysql-bin.1000000" < "mysql-bin.999999".
		{p("mysql-bin.999999", 900, ""), p("mysql-bin.1000000", 4, ""), -1, true, FlavorMariaDB},
		{p("mysql-bin.1000000", 4, ""), p("mysql-bin.999999", 900, ""), 1, true, FlavorMariaDB},
		{p("mysql-bin", 4, ""), p("mysql-bin.000001", 4, ""), 0, false, FlavorMariaDB},
		{p("", 0, ""), p("mysql-bin.000001", 4, ""), 0, false, FlavorMariaDB},
		// Same file names on two servers: only GTID states order them.
		{Position{File: "mysql-bin.000001", Pos: 900, Server: "mariadb:1"}, Position{File: "mysql-bin.000001", Pos: 4, Server: "mariadb:2"}, 0, false, FlavorMariaDB},
		{Position{File: "mysql-bin.000001", Pos: 900, GTID: "0-1-5", Server: "mariadb:1"}, Position{File: "mysql-bin.000001", Pos: 4, GTID: "0-1-7", Server: "mariadb:2"}, -1, true, FlavorMariaDB},
		{Position{File: "mysql-bin.000001", Pos: 900, Server: "mariadb:1"}, Position{File: "mysql-bin.000001", Pos: 4}, 1, true, FlavorMariaDB},
		{p("a.000001", 4, "0-1-5"), p("b.000001", 4, "0-1-7"), -1, true, FlavorMariaDB},
		{p("", 0, "0-1-5,1-2-3"), p("", 0, "0-1-5,1-2-3"), 0, true, FlavorMariaDB},
		{p("", 0, "0-1-5,1-2-3"), p("", 0, "0-1-5"), 1, true, FlavorMariaDB},
		{p("", 0, "0-1-5,1-2-3"), p("", 0, "0-1-6,1-2-2"), 0, false, FlavorMariaDB},
		{p("a.000001", 4, ""), p("b.000001", 4, ""), 0, false, FlavorMariaDB},
		{p("", 0, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-10"), p("", 0, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"), 1, true, FlavorMySQL},
	}
	for _, tt := range tests {
		cmp, ok := ComparePositions(tt.flavor, tt.a, tt.b)
		if cmp != tt.cmp || ok != tt.ok {
			t.Errorf("ComparePositions(%s, %s) = %d, %v; want %d, %v", tt.a, tt.b, cmp, ok, tt.cmp, tt.ok)
		}
	}

	early, late := p("mysql-bin.000001", 100, ""), p("mysql-bin.000001", 500, "")
	for _, tt := range []struct{ from, ckpt, want Position }{
		{early, late, late}, {late, early, late}, {Position{}, late, late}, {early, Position{}, early},
		{p("other.000001", 9, ""), early, early}, // unordered: the target's checkpoint wins
	} {
		if got := resumePoint(FlavorMariaDB, tt.from, tt.ckpt); got != tt.want {
			t.Errorf("resumePoint(%s, %s) = %s, want %s", tt.from, tt.ckpt, got, tt.want)
		}
	}

	for _, tt := range []struct {
		in     string
		want   Position
		isFile bool
		err    bool
	}{
		{"mysql-bin.000003:1234", p("mysql-bin.000003", 1234, ""), true, false},
		{"mysql-bin.000003:3", Position{}, true, true},
		{"mysql-bin.000003:x", Position{}, true, true},
		{"0-1-5", Position{}, false, false},
		{"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", Position{}, false, false},
	} {
		got, isFile, err := ParseFilePos(tt.in)
		if got != tt.want || isFile != tt.isFile || (err != nil) != tt.err {
			t.Errorf("ParseFilePos(%q) = %s, %v, %v", tt.in, got, isFile, err)
		}
	}
	if s := p("mysql-bin.000001", 4, "0-1-2").String(); s != "mysql-bin.000001:4 (gtid 0-1-2)" {
		t.Errorf("String() = %q", s)
	}
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{io.EOF, true},
		{mysql.ErrInvalidConn, true},
		{fmt.Errorf("wrapped: %w", &mysql.MySQLError{Number: 1213, Message: "deadlock"}), true},
		{&mysql.MySQLError{Number: 1205}, true},
		{&mysql.MySQLError{Number: 1927}, true},
		{&mysql.MySQLError{Number: 1146, Message: "no such table"}, false},
		{&mysql.MySQLError{Number: 1062}, false},
		{&mysql.MySQLError{Number: 1045}, false},
		{&gomysql.MyError{Code: 1236, Message: "Could not find first log file name in binary log index file"}, false},
		{&gomysql.MyError{Code: 1236, Message: "A slave with the same server_uuid/server_id as this slave has connected to the master"}, true},
		{&gomysql.MyError{Code: 4052, Message: "A slave with the same server_uuid/server_id as this slave has connected to the master"}, true},
		{ErrFenced, false},
		{fmt.Errorf("x: %w", ErrSourceConfig), false},
		{nonRetryable(io.EOF), false},
		{errors.New("something else"), true},
	}
	for _, tt := range tests {
		if got := retryable(tt.err); got != tt.want {
			t.Errorf("retryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	ae := newApplyError(strings.Repeat("x", 5000), Position{File: "f.000001", Pos: 4}, &mysql.MySQLError{Number: 1062})
	if len(ae.Statement) > maxShownStatement+50 || !strings.Contains(ae.Statement, "5000 bytes") {
		t.Errorf("ApplyError keeps %d bytes of a 5000-byte statement: %q…", len(ae.Statement), ae.Statement[:40])
	}
}

// TestClassify: what Open, ResolveStart and Run return is non-retryable
// exactly when retrying cannot help, and a fence, a configuration error
// or a cancellation keeps its identity.
func TestClassify(t *testing.T) {
	denied := &mysql.MySQLError{Number: 1227, Message: "Access denied; you need (at least one of) the SUPER, BINLOG MONITOR privilege(s) for this operation"}
	tests := []struct {
		err          error
		nonRetryable bool
	}{
		{fmt.Errorf("read the source's binlog position: %w", denied), true},
		{&mysql.MySQLError{Number: 1142}, true},
		{&mysql.MySQLError{Number: 1213}, false},
		{io.EOF, false},
		{ErrFenced, false},
		{fmt.Errorf("%w: bad start", ErrConfig), false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
	}
	for _, tt := range tests {
		got := classify(tt.err)
		if errors.Is(got, ErrNonRetryable) != tt.nonRetryable || !errors.Is(got, tt.err) {
			t.Errorf("classify(%v) = %v: non-retryable %v, want %v (and the original in its chain)", tt.err, got, errors.Is(got, ErrNonRetryable), tt.nonRetryable)
		}
	}
	if classify(nil) != nil {
		t.Error("classify(nil) is not nil")
	}
}

func TestConfigValidation(t *testing.T) {
	good := Config{Task: "t", Source: Endpoint{Host: "s", User: "u"}, Target: Endpoint{Host: "d", User: "u"}}
	c, err := good.withDefaults()
	if err != nil {
		t.Fatalf("withDefaults(%+v): %v", good, err)
	}
	if c.Source.Port != 3306 || c.CheckpointSchema != "shepherd" || c.BatchRows != DefaultBatchRows ||
		c.MaxTxnRows != DefaultMaxTxnRows || c.ServerID < 1<<30 || c.ServerID >= 1<<31 || c.Logger == nil {
		t.Errorf("defaults not filled in: %+v", c)
	}
	if again, _ := good.withDefaults(); again.ServerID != c.ServerID {
		t.Errorf("derived ServerID not stable: %d then %d", c.ServerID, again.ServerID)
	}
	for _, tt := range []struct {
		edit  func(*Config)
		field string
	}{
		{func(c *Config) { c.Task = "" }, "Task"},
		{func(c *Config) { c.Task = strings.Repeat("x", 192) }, "Task"},
		{func(c *Config) { c.Source.Host = "" }, "source.host"},
		{func(c *Config) { c.Target.User = "" }, "target.user"},
		{func(c *Config) { c.Target.Port = 70000 }, "target.port"},
		{func(c *Config) { c.Source.Flavor = "oracle" }, "source.flavor"},
		{func(c *Config) { c.BatchRows = -1 }, "BatchRows"},
		{func(c *Config) { c.HeartbeatPeriod = 10 }, "HeartbeatPeriod"},
		{func(c *Config) { c.CheckpointSchema = "a`b" }, "CheckpointSchema"},
		{func(c *Config) { c.Include = []string{"x.y.z"} }, "pattern"},
		{func(c *Config) { c.Routes = []Route{{FromDB: "a"}} }, "Routes[0]"},
	} {
		c := good
		tt.edit(&c)
		_, err := c.withDefaults()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("withDefaults with a bad %s: %v, want ErrConfig naming it", tt.field, err)
		}
	}
}
