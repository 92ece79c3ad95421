package replication

import (
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"
)

// Flavors of MySQL server an Endpoint can name.
const (
	FlavorMySQL   = "mysql"
	FlavorMariaDB = "mariadb"
)

// Defaults of Config.
const (
	DefaultCheckpointSchema = "shepherd"
	DefaultBatchRows        = 2000
	DefaultMaxTxnRows       = 10000
	DefaultHeartbeat        = time.Second
	DefaultMaxBackoff       = 5 * time.Second
	defaultPort             = 3306
)

// CheckpointTable is the name of the table, in Config.CheckpointSchema on
// the target, that holds one checkpoint row per task.
const CheckpointTable = "shepherd_checkpoint"

// Endpoint is a MySQL or MariaDB server to connect to.
type Endpoint struct {
	Host     string
	Port     int // zero means 3306
	User     string
	Password string
	// Flavor is "mysql" or "mariadb". Empty means: ask the server (its
	// version string says MariaDB or not). It decides the GTID format and
	// the binlog dump protocol.
	Flavor string
}

// Addr is host:port.
func (e Endpoint) Addr() string {
	p := e.Port
	if p == 0 {
		p = defaultPort
	}
	return net.JoinHostPort(e.Host, strconv.Itoa(p))
}

// String names the endpoint for messages, without the password.
func (e Endpoint) String() string { return e.User + "@" + e.Addr() }

// Route renames what is replicated. A route with an empty FromTable moves
// a whole database: every table of FromDB lands in ToDB under its own
// name, and database DDL (CREATE/DROP DATABASE) follows. A route with a
// FromTable renames one table; with an empty ToDB it lands where its
// database goes (that database's route, or the same name), and an empty
// ToTable keeps the table name. Table routes win over database
// routes; among routes of one kind the first match wins. Names are exact
// (no wildcards) and case-sensitive, as table names are on Linux.
type Route struct {
	FromDB, FromTable string
	ToDB, ToTable     string
}

// Config describes one replication task: where from, where to, what, and
// how. Zero values of the tuning fields mean the defaults above.
type Config struct {
	// Task names the task; it is the key of the checkpoint row, so two
	// tasks writing into one target must have different names.
	Task string
	// Source is read as a replica; Target receives the changes, unless
	// Sink says otherwise.
	Source, Target Endpoint
	// Sink is where the changes go; nil is MySQLSink(Target,
	// CheckpointSchema), and Target is then required.
	Sink Sink `json:"-"`
	// ServerID is the replica server id the reader registers with. It must
	// differ from every server's and replica's id in the source's
	// topology. Zero derives one from Task, in [2^30, 2^31).
	ServerID uint32
	// Include and Exclude select tables by "db.table" patterns, where *
	// matches any run of characters ("shop.*", "*.orders", "logs_*.*"). A
	// pattern without a dot names a database ("shop" is "shop.*"). Empty
	// Include means every table. Exclude wins over Include. The system
	// schemas (mysql, information_schema, performance_schema, sys) are
	// never replicated.
	Include, Exclude []string
	// Routes rename databases and tables on the way; see Route.
	Routes []Route
	// CheckpointSchema is the database on the target holding
	// shepherd_checkpoint; it is created if missing.
	CheckpointSchema string
	// BatchRows bounds the rows of one target transaction when small
	// source transactions are grouped into one. A source transaction is
	// never split across target transactions.
	BatchRows int
	// MaxTxnRows bounds the rows of a source transaction held in memory
	// at once: a larger one is streamed to the target in pieces, still
	// inside one target transaction.
	MaxTxnRows int
	// prepChunkRows overrides the rows of a prepared REPLACE
	// (prepChunkRows), for tests that want every path taken often.
	prepChunkRows int
	// goMySQLRows decodes every rows event with go-mysql alone, not the
	// fast path for common column types (rowdecode.go), for tests and
	// benchmarks that compare the two.
	goMySQLRows bool
	// HeartbeatPeriod is how often an idle source sends a heartbeat; a
	// source silent for several periods counts as lost.
	HeartbeatPeriod time.Duration
	// MaxBackoff caps the wait between attempts after a retryable failure.
	MaxBackoff time.Duration
	// Snapshot makes a task without a checkpoint start with a copy of
	// the source's tables (see SnapshotConfig).
	Snapshot SnapshotConfig
	// Logger receives the replicator's logs; nil means slog.Default().
	Logger *slog.Logger
}

// withDefaults validates c and returns it with the zero fields filled in.
// Errors wrap ErrConfig and name the field.
func (c Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.Task == "" {
		return bad("Task is empty")
	}
	if len(c.Task) > 191 {
		return bad("Task %q is longer than 191 bytes", c.Task)
	}
	// The endpoints' fields are named as the task spec spells them
	// (source.host …), which maps onto them one to one: that is where
	// an operator fixes them.
	eps := []struct {
		name string
		e    *Endpoint
	}{{"source", &c.Source}, {"target", &c.Target}}
	if c.Sink != nil {
		eps = eps[:1] // the sink validates its own target
	}
	for _, ep := range eps {
		switch {
		case ep.e.Host == "":
			return bad("%s.host is empty", ep.name)
		case ep.e.Port < 0 || ep.e.Port > 65535:
			return bad("%s.port %d is not a TCP port", ep.name, ep.e.Port)
		case ep.e.User == "":
			return bad("%s.user is empty", ep.name)
		case ep.e.Flavor != "" && ep.e.Flavor != FlavorMySQL && ep.e.Flavor != FlavorMariaDB:
			return bad("%s.flavor %q is neither %q nor %q", ep.name, ep.e.Flavor, FlavorMySQL, FlavorMariaDB)
		}
		if ep.e.Port == 0 {
			ep.e.Port = defaultPort
		}
	}
	if c.ServerID == 0 {
		c.ServerID = derivedServerID(c.Task)
	}
	if c.CheckpointSchema == "" {
		c.CheckpointSchema = DefaultCheckpointSchema
	}
	if strings.ContainsAny(c.CheckpointSchema, "`\x00") || len(c.CheckpointSchema) > 64 {
		return bad("CheckpointSchema %q is not a usable database name", c.CheckpointSchema)
	}
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{{"BatchRows", &c.BatchRows, DefaultBatchRows}, {"MaxTxnRows", &c.MaxTxnRows, DefaultMaxTxnRows}} {
		if *f.v < 0 {
			return bad("%s %d is negative", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.HeartbeatPeriod < 0 || c.MaxBackoff < 0 {
		return bad("HeartbeatPeriod and MaxBackoff must not be negative")
	}
	if c.HeartbeatPeriod == 0 {
		c.HeartbeatPeriod = DefaultHeartbeat
	}
	if c.HeartbeatPeriod < 100*time.Millisecond {
		return bad("HeartbeatPeriod %v is below 100ms", c.HeartbeatPeriod)
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if _, err := newFilter(c.Include, c.Exclude, c.Routes); err != nil {
		return c, err
	}
	var err error
	if c.Snapshot, err = c.Snapshot.withDefaults(); err != nil {
		return c, err
	}
	return c, nil
}

// sink is c.Sink, or the MySQL sink of c.Target.
func (c Config) sink() Sink {
	if c.Sink != nil {
		return c.Sink
	}
	return mysqlSink{target: c.Target, schema: c.CheckpointSchema, prepChunkRows: c.prepChunkRows}
}

// derivedServerID maps a task name into [2^30, 2^31), far from the small
// ids people give servers by hand, so that two tasks rarely collide and a
// task keeps its id across restarts (the source then replaces the old dump
// connection instead of keeping a zombie).
func derivedServerID(task string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(task))
	return 1<<30 | h.Sum32()&(1<<30-1)
}
