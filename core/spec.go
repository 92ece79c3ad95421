package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/shepherd-dev/shepherd/internal/boundedfile"
	"github.com/shepherd-dev/shepherd/internal/duration"
	"github.com/shepherd-dev/shepherd/replication"
	"github.com/shepherd-dev/shepherd/replication/kafkasink"
	"github.com/shepherd-dev/shepherd/replication/natssink"
)

// SpecVersion is the schema version of the task specs this package writes.
const SpecVersion = 1

// Standby modes of a task.
const (
	// ModeHot: every core started with --task T registers as an instance
	// of T; the first runs it and the others wait to take over at once.
	ModeHot = "hot"
	// ModeCold: the task belongs to a group; cores started with --group G
	// scan the group and the first to find the task unowned runs it.
	ModeCold = "cold"
)

// Desired states of a task, set by operators.
const (
	DesiredRunning = "running"
	DesiredStopped = "stopped"
)

// Source and target flavors.
const (
	FlavorMySQL   = "mysql"
	FlavorMariaDB = "mariadb"
)

// Start points besides a binlog position or a GTID set.
const (
	StartCurrent  = "current"  // the source's binlog position when the task first runs
	StartEarliest = "earliest" // the oldest binlog the source still has
	// StartSnapshot copies every included table's rows first, then
	// follows the binlog from where the copy left it
	// (docs/replication.md#snapshot).
	StartSnapshot = "snapshot"
)

// Spec is a replication task: what to copy from where to where, and how
// it is run. It is stored as JSON in /mysql_replicator/tasks/<name> and
// written by operators as YAML or JSON with the same field names.
type Spec struct {
	// Version is the schema version, SpecVersion.
	Version int `json:"version" yaml:"version"`
	// Name names the task: the znode tasks/<name>.
	Name string `json:"name" yaml:"name"`
	// Source is the MySQL or MariaDB server whose binlog is read, and
	// the servers that may stand in for it.
	Source SourceEndpoint `json:"source" yaml:"source"`
	// Target is where the changes go: a MySQL or MariaDB server (kind
	// mysql, the default), a NATS JetStream stream (kind nats) or Kafka
	// topics (kind kafka).
	Target TargetEndpoint `json:"target" yaml:"target"`
	// Filter selects the tables replicated.
	Filter Filter `json:"filter" yaml:"filter"`
	// Routes rename databases or tables on the target.
	Routes []Route `json:"routes,omitempty" yaml:"routes"`
	// Start is where a task with no checkpoint begins: "current",
	// "earliest", a binlog position "file:pos", a GTID set, or
	// "snapshot" (a copy of the tables, then the binlog).
	Start string `json:"start" yaml:"start"`
	// Snapshot tunes the copy of start: snapshot.
	Snapshot Snapshot `json:"snapshot,omitzero" yaml:"snapshot"`
	// Verify makes the task's owner verify it periodically (as shepherd
	// ctl task verify does, without repair).
	Verify VerifyPolicy `json:"verify,omitzero" yaml:"verify"`
	// Standby is how instances share the task.
	Standby Standby `json:"standby" yaml:"standby"`
	// State is the desired state, "running" or "stopped".
	State string `json:"state" yaml:"state"`
	// Apply tunes how changes are written to the target.
	Apply Apply `json:"apply" yaml:"apply"`
	// ServerID is the replica server id the task registers with on the
	// source; 0 lets the replicator derive one from the task name.
	ServerID uint32 `json:"serverID,omitempty" yaml:"serverID"`
	// CheckpointSchema is the target database holding the checkpoint
	// table; empty means the replicator's default.
	CheckpointSchema string `json:"checkpointSchema,omitempty" yaml:"checkpointSchema"`
}

// Endpoint is a MySQL or MariaDB server and the account used on it.
type Endpoint struct {
	Host string `json:"host" yaml:"host"`
	Port int    `json:"port" yaml:"port"`
	User string `json:"user" yaml:"user"`
	// Password is the account's password. It is stored in the task node
	// for every reader of it to see: prefer PasswordFile.
	Password string `json:"password,omitempty" yaml:"password"`
	// PasswordFile is a file on every core's machine holding the password
	// (trailing newline ignored), read when the task starts.
	PasswordFile string `json:"passwordFile,omitempty" yaml:"passwordFile"`
	// Flavor is "mysql" (the default) or "mariadb".
	Flavor string `json:"flavor" yaml:"flavor"`
}

// Target kinds.
const (
	TargetMySQL = "mysql" // a MySQL or MariaDB server: Endpoint's fields
	TargetNATS  = "nats"  // a NATS JetStream stream: URL, Stream, …
	TargetKafka = "kafka" // Kafka topics: Brokers, TopicPrefix, Format, …
)

// TargetEndpoint is where a task's changes go. Kind mysql (or empty,
// which every spec written before kinds existed is) uses the Endpoint
// fields; kind nats uses URL, Stream, SubjectPrefix, DuplicateWindow and
// Bucket, with User and Password or PasswordFile as its credentials (a
// password without a user is a token); kind kafka uses Brokers and the
// Kafka fields below, with User and Password or PasswordFile as its SASL
// credentials.
type TargetEndpoint struct {
	Endpoint `yaml:",inline"`
	// Kind is "mysql" (the default), "nats" or "kafka".
	Kind string `json:"kind,omitempty" yaml:"kind"`
	// URL is the NATS server list, nats://host:4222[,nats://…].
	URL string `json:"url,omitempty" yaml:"url"`
	// Stream is the JetStream stream, created if missing.
	Stream string `json:"stream,omitempty" yaml:"stream"`
	// SubjectPrefix starts every subject: <prefix>.<db>.<table>, and
	// <prefix>._schema for DDL. Empty: natssink.DefaultSubjectPrefix.
	SubjectPrefix string `json:"subjectPrefix,omitempty" yaml:"subjectPrefix"`
	// DuplicateWindow is the stream's duplicate window, which must outlast
	// a takeover. Zero: natssink.DefaultDuplicateWindow.
	DuplicateWindow duration.Duration `json:"duplicateWindow,omitempty" yaml:"duplicateWindow"`
	// Bucket is the key-value bucket of checkpoints. Empty:
	// natssink.DefaultBucket.
	Bucket string `json:"bucket,omitempty" yaml:"bucket"`

	// Brokers are the Kafka bootstrap brokers, host:port each.
	Brokers []string `json:"brokers,omitempty" yaml:"brokers"`
	// TopicMode is "table" (the default: <topicPrefix>.<db>.<table>) or
	// "single" (every row to Topic).
	TopicMode string `json:"topicMode,omitempty" yaml:"topicMode"`
	// TopicPrefix starts the tables' topics. Empty:
	// kafkasink.DefaultTopicPrefix.
	TopicPrefix string `json:"topicPrefix,omitempty" yaml:"topicPrefix"`
	// Topic is the one topic of topicMode single.
	Topic string `json:"topic,omitempty" yaml:"topic"`
	// SchemaTopic takes the schema changes. Empty: <topicPrefix>._schema.
	SchemaTopic string `json:"schemaTopic,omitempty" yaml:"schemaTopic"`
	// CheckpointTopic holds the checkpoints. Empty:
	// kafkasink.DefaultCheckpointTopic.
	CheckpointTopic string `json:"checkpointTopic,omitempty" yaml:"checkpointTopic"`
	// Format is debezium (the default), canal or maxwell.
	Format string `json:"format,omitempty" yaml:"format"`
	// Partitions and ReplicationFactor are those of the topics the task
	// creates; zero: the broker's defaults.
	Partitions        int32 `json:"partitions,omitempty" yaml:"partitions"`
	ReplicationFactor int16 `json:"replicationFactor,omitempty" yaml:"replicationFactor"`
	// TransactionTimeout bounds one Kafka transaction. Zero:
	// kafkasink.DefaultTransactionTimeout.
	TransactionTimeout duration.Duration `json:"transactionTimeout,omitempty" yaml:"transactionTimeout"`
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, with User
	// and Password or PasswordFile; empty: no SASL.
	SASLMechanism string `json:"saslMechanism,omitempty" yaml:"saslMechanism"`
	// TLS, when given, connects to the brokers with TLS.
	TLS *kafkasink.TLS `json:"tls,omitempty" yaml:"tls"`
}

// TargetServer is one server a target connects to, with the spec field
// that names it.
type TargetServer struct {
	Field string // "target.host", "target.url", "target.brokers[1]"
	Host  string // the host as written, without the port
	Addr  string // host:port as written (the URL's for nats)
}

// Servers are the servers the target connects to: what a console's host
// allow-list checks, and what an edit must leave unchanged for a stored
// password to stay. Entries that do not parse are left out: validation
// refuses them.
func (t *TargetEndpoint) Servers() []TargetServer {
	switch t.Kind {
	case TargetNATS:
		var out []TargetServer
		for _, part := range strings.Split(t.URL, ",") {
			if u, err := url.Parse(strings.TrimSpace(part)); err == nil && u.Hostname() != "" {
				out = append(out, TargetServer{"target.url", u.Hostname(), u.Host})
			}
		}
		return out
	case TargetKafka:
		var out []TargetServer
		for i, b := range t.Brokers {
			if h, _, err := net.SplitHostPort(b); err == nil && h != "" {
				out = append(out, TargetServer{fmt.Sprintf("target.brokers[%d]", i), h, b})
			}
		}
		return out
	}
	return []TargetServer{{"target.host", t.Host, t.Addr()}}
}

// IsMySQL reports whether the target is a MySQL or MariaDB server.
func (t *TargetEndpoint) IsMySQL() bool { return t.Kind == "" || t.Kind == TargetMySQL }

// IsKafka reports whether the target is Kafka.
func (t *TargetEndpoint) IsKafka() bool { return t.Kind == TargetKafka }

// kafkaConfig is the target in kafkasink's terms, with password.
func (t *TargetEndpoint) kafkaConfig(password string) kafkasink.Config {
	return kafkasink.Config{Brokers: t.Brokers, TopicMode: t.TopicMode, TopicPrefix: t.TopicPrefix, Topic: t.Topic,
		SchemaTopic: t.SchemaTopic, CheckpointTopic: t.CheckpointTopic, Format: t.Format,
		Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor, TransactionTimeout: t.TransactionTimeout.D(),
		SASLMechanism: t.SASLMechanism, User: t.User, Password: password, TLS: t.TLS}
}

// KafkaText describes a kafka target as its sink names itself in logs
// (brokers, topics, format, SASL user, TLS), and where its password is
// read from; never the password.
func (t *TargetEndpoint) KafkaText() string {
	s := t.kafkaConfig("").String()
	if t.PasswordFile != "" {
		s += ", password from " + t.PasswordFile
	}
	return s
}

// fieldsOf names the target's fields set that only kind has.
func (t *TargetEndpoint) fieldsOf(kind string) []string {
	var set []string
	add := func(name string, on bool) {
		if on {
			set = append(set, name)
		}
	}
	switch kind {
	case TargetNATS:
		add("url", t.URL != "")
		add("stream", t.Stream != "")
		add("subjectPrefix", t.SubjectPrefix != "")
		add("duplicateWindow", t.DuplicateWindow != 0)
		add("bucket", t.Bucket != "")
	case TargetKafka:
		add("brokers", len(t.Brokers) > 0)
		add("topicMode", t.TopicMode != "")
		add("topicPrefix", t.TopicPrefix != "")
		add("topic", t.Topic != "")
		add("schemaTopic", t.SchemaTopic != "")
		add("checkpointTopic", t.CheckpointTopic != "")
		add("format", t.Format != "")
		add("partitions", t.Partitions != 0)
		add("replicationFactor", t.ReplicationFactor != 0)
		add("transactionTimeout", t.TransactionTimeout != 0)
		add("saslMechanism", t.SASLMechanism != "")
		add("tls", t.TLS != nil)
	}
	return set
}

// IsNATS reports whether the target is a NATS JetStream stream.
func (t *TargetEndpoint) IsNATS() bool { return t.Kind == TargetNATS }

// natsConfig is the target in natssink's terms, with password.
func (t *TargetEndpoint) natsConfig(password string) natssink.Config {
	return natssink.Config{URL: t.URL, Stream: t.Stream, SubjectPrefix: t.SubjectPrefix, User: t.User, Password: password,
		DuplicateWindow: t.DuplicateWindow.D(), Bucket: t.Bucket}
}

// validate checks a target of any kind.
func (t *TargetEndpoint) validate(bad func(field, format string, args ...any)) {
	only := func(kinds ...string) {
		for _, k := range []string{TargetNATS, TargetKafka} {
			if slices.Contains(kinds, k) {
				continue
			}
			for _, f := range t.fieldsOf(k) {
				bad("target."+f, "only with kind %s", k)
			}
		}
	}
	problems := func(ps []string) {
		for _, p := range ps {
			field, what, _ := strings.Cut(p, ": ")
			bad(field, "%s", what)
		}
	}
	switch t.Kind {
	case "", TargetMySQL:
		t.Endpoint.validate("target", bad)
		only()
	case TargetNATS, TargetKafka:
		if t.Host != "" || t.Flavor != "" {
			by := "target.url"
			if t.Kind == TargetKafka {
				by = "target.brokers"
			}
			bad("target.host", "a %s target is given by %s (and has no host, port or flavor)", t.Kind, by)
		}
		if t.Password != "" && t.PasswordFile != "" {
			bad("target.passwordFile", "give password or passwordFile, not both")
		}
		only(t.Kind)
		if t.Kind == TargetNATS {
			problems(t.natsConfig("").Problems())
			break
		}
		pw := ""
		if t.Password != "" || t.PasswordFile != "" {
			pw = "set" // read when the task starts; here only whether there is one
		}
		problems(t.kafkaConfig(pw).Problems())
	default:
		bad("target.kind", "%q: want mysql, nats or kafka", t.Kind)
	}
}

// SourceEndpoint is the source server (Host and Port: the primary) and
// the candidates that can take its place (Hosts: its replicas), read with
// the same account. A RUNNING task reads from one of them at a time (see
// ActiveSource) and switches, by GTID, to another when the one it reads
// is unreachable for FailoverAfter, or is read-only while another is
// writable (docs/replication.md#source-failover).
type SourceEndpoint struct {
	Endpoint `yaml:",inline"`
	// Hosts are the other candidates, host:port each, in the order they
	// are preferred.
	Hosts []string `json:"hosts,omitempty" yaml:"hosts"`
	// FailoverAfter is how long the source must stay unreachable before
	// the task switches to a candidate. Zero: DefaultFailoverAfter.
	FailoverAfter duration.Duration `json:"failoverAfter,omitempty" yaml:"failoverAfter"`
}

// DefaultFailoverAfter is SourceEndpoint.FailoverAfter's default: long
// enough for a server restart or a VIP move to pass unnoticed.
const DefaultFailoverAfter = 30 * time.Second

// minFailoverAfter bounds FailoverAfter from below: a probe must be able
// to fail a few times before a task leaves its source.
const minFailoverAfter = time.Second

// Addr is the endpoint's host:port.
func (e Endpoint) Addr() string { return net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) }

// Candidates returns the servers the task may read from, the primary
// first, each with the source's account and flavor.
func (s *SourceEndpoint) Candidates() []Endpoint {
	out := []Endpoint{s.Endpoint}
	for _, h := range s.Hosts {
		host, port, err := splitHostPort(h)
		if err != nil {
			continue // Validate refuses it
		}
		e := s.Endpoint
		e.Host, e.Port = host, port
		out = append(out, e)
	}
	return out
}

// Candidate returns the candidate whose host:port is addr.
func (s *SourceEndpoint) Candidate(addr string) (Endpoint, bool) {
	for _, e := range s.Candidates() {
		if e.Addr() == addr {
			return e, true
		}
	}
	return Endpoint{}, false
}

// ActiveSource is the server a task reads from: the candidate its
// lastCommit records it switched to (lc.Source), or the primary when it
// never switched or that server is no longer a candidate. Core, ctl, the
// console and the monitor all ask this function.
func (sp *Spec) ActiveSource(lc LastCommit) Endpoint {
	if e, ok := sp.Source.Candidate(lc.Source); ok && lc.Source != "" {
		return e
	}
	return sp.Source.Endpoint
}

// failoverAfter is FailoverAfter with its default.
func (s *SourceEndpoint) failoverAfter() time.Duration {
	if s.FailoverAfter <= 0 {
		return DefaultFailoverAfter
	}
	return s.FailoverAfter.D()
}

// splitHostPort parses a candidate's host:port.
func splitHostPort(hp string) (string, int, error) {
	host, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, fmt.Errorf("%q: want host:port", hp)
	}
	port, err := strconv.Atoi(p)
	switch {
	case err != nil || port < 1 || port > 65535:
		return "", 0, fmt.Errorf("%q: port %q: want 1-65535", hp, p)
	case host == "" || strings.ContainsAny(host, " /\t\n"):
		return "", 0, fmt.Errorf("%q: %q is not a host name or address", hp, host)
	}
	return host, port, nil
}

// Filter selects tables by db.table patterns, where * matches any run of
// characters.
// A table is replicated if it matches some Include pattern (or Include
// is empty) and no Exclude pattern.
type Filter struct {
	Include []string `json:"include,omitempty" yaml:"include"`
	Exclude []string `json:"exclude,omitempty" yaml:"exclude"`
}

// Route renames on the target: a database ("src" to "dst") or a table
// ("src.t" to "dst.t2").
type Route struct {
	From string `json:"from" yaml:"from"`
	To   string `json:"to" yaml:"to"`
}

// Standby says how the instances of a task share it.
type Standby struct {
	// Mode is "hot" (the default) or "cold".
	Mode string `json:"mode" yaml:"mode"`
	// Group is the cold-standby group, required with mode cold.
	Group string `json:"group,omitempty" yaml:"group"`
	// PreferredCores pins a cold task to some cores of its group (by
	// --host): one of them takes it whenever one is live, and they never
	// hand it over for balance. Other cores run it only while none is.
	PreferredCores []string `json:"preferredCores,omitempty" yaml:"preferredCores"`
}

// Apply tunes the writes to the target. Zero values mean the
// replicator's defaults.
type Apply struct {
	// BatchRows is how many rows go into one multi-row statement.
	BatchRows int `json:"batchRows,omitempty" yaml:"batchRows"`
	// MaxTxnRows splits larger source transactions into target
	// transactions of at most this many rows.
	MaxTxnRows int `json:"maxTxnRows,omitempty" yaml:"maxTxnRows"`
}

// Snapshot tunes the table copy of a task with start: snapshot. Zero
// values mean the replicator's defaults.
type Snapshot struct {
	// Threads is the copy's readers; the copy reads one consistent
	// snapshot through one connection, so only 1 is accepted.
	Threads int `json:"threads,omitempty" yaml:"threads"`
	// ChunkRows is the rows of a keyed table copied per target
	// transaction (each with its cursor).
	ChunkRows int `json:"chunkRows,omitempty" yaml:"chunkRows"`
	// MaxRowsPerSecond throttles the copy; 0 is unlimited.
	MaxRowsPerSecond int `json:"maxRowsPerSecond,omitempty" yaml:"maxRowsPerSecond"`
}

// VerifyPolicy is Spec.Verify: the owner's periodic verify of its task
// (docs/replication.md#verify), whose report it keeps in the task's
// verify node, where task show and the monitor's TaskDataMismatch read
// it.
type VerifyPolicy struct {
	// Every is the time from one verify's start to the next, while the
	// owner runs the task; 0 never verifies.
	Every duration.Duration `json:"every,omitempty" yaml:"every"`
	// ChunkRows is the rows of a keyed table per chunk; 0 is the
	// default (1000).
	ChunkRows int `json:"chunkRows,omitempty" yaml:"chunkRows"`
}

// Limits of a spec's values.
const (
	maxNameLen   = 128
	maxBatchRows = 100_000
	maxChunkRows = 1_000_000
	maxTxnRows   = 10_000_000
)

// ParseSpec reads a spec in YAML or JSON, fills in defaults and validates
// it. Unknown fields are errors, so that a misspelt field is not silently
// ignored. Errors wrap ErrInvalidSpec and name the fields at fault.
func ParseSpec(data []byte) (*Spec, error) { return parseSpec(data, 0) }

// yamlLine is how the YAML decoder's errors name a line.
var yamlLine = regexp.MustCompile(`\bline (\d+)\b`)

// parseSpec is ParseSpec of a document that starts after the first
// lineOffset lines of its file: the decoder's line numbers are the file's.
func parseSpec(data []byte, lineOffset int) (*Spec, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: empty document", ErrInvalidSpec)
	}
	var sp Spec
	// YAML is a superset of JSON, so one decoder reads both; KnownFields
	// rejects fields the struct lacks.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&sp); err != nil {
		msg := err.Error()
		if lineOffset > 0 {
			msg = yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
				n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
				return "line " + strconv.Itoa(n+lineOffset)
			})
		}
		return nil, fmt.Errorf("%w: %s", ErrInvalidSpec, msg)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: more than one document", ErrInvalidSpec)
	}
	if err := sp.Complete(); err != nil {
		return nil, err
	}
	return &sp, nil
}

// SpecDocument is one document of a stream of specs (ParseSpecs).
type SpecDocument struct {
	// Index is the document's number in the stream, from 1, not counting
	// empty ones; Line is the line it starts on, from 1.
	Index, Line int
	// Spec is the document's spec when Err is nil.
	Spec *Spec
	// Err says why the document is not a valid spec: it wraps
	// ErrInvalidSpec and names the fields at fault, as ParseSpec's do.
	Err error
}

// ParseSpecs reads a stream of specs: YAML documents separated by lines
// of ---, or one JSON document, each read as ParseSpec reads one (with
// line numbers in its errors counted from the start of data). A document
// with nothing but comments, directives and blank lines, such as the one
// before a leading ---, is skipped; a stream without any spec is an
// error wrapping ErrInvalidSpec.
func ParseSpecs(data []byte) ([]SpecDocument, error) {
	var docs []SpecDocument
	index, start := 0, 1
	var cur []byte
	flush := func() {
		if !blankYAML(cur) {
			index++
			sp, err := parseSpec(cur, start-1)
			docs = append(docs, SpecDocument{Index: index, Line: start, Spec: sp, Err: err})
		}
		cur = nil
	}
	for n, line := range bytes.SplitAfter(data, []byte("\n")) {
		body := bytes.TrimRight(line, "\r\n")
		switch {
		case bytes.Equal(body, []byte("---")) || bytes.HasPrefix(body, []byte("--- ")) || bytes.HasPrefix(body, []byte("---\t")):
			// A document start marker; content may follow it on its line.
			flush()
			start = n + 1
			cur = append(cur, bytes.TrimLeft(body[3:], " \t")...)
			cur = append(cur, '\n')
		case bytes.Equal(body, []byte("...")):
			// A document end marker: what follows, up to the next ---, is
			// comments or directives.
			flush()
			start = n + 2
		default:
			cur = append(cur, line...)
		}
	}
	flush()
	if len(docs) == 0 {
		return nil, fmt.Errorf("%w: no spec: the input has no document, or only empty ones", ErrInvalidSpec)
	}
	return docs, nil
}

// blankYAML reports whether a YAML document has nothing but blank lines,
// comments and directives (%YAML 1.2).
func blankYAML(doc []byte) bool {
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && line[0] != '%' {
			return false
		}
	}
	return true
}

// Complete fills in the defaults of a decoded spec and validates it: what
// ParseSpec does after decoding, for a caller that decodes the spec
// itself (the console decodes its JSON strictly, as it does every body).
func (sp *Spec) Complete() error {
	sp.setDefaults()
	return sp.Validate()
}

// decodeStoredSpec reads a spec as stored in a task node (JSON).
func decodeStoredSpec(name string, data []byte) (*Spec, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: task %q has no spec: add one with shepherd ctl task add -f task.yaml", ErrNoSpec, name)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var sp Spec
	if err := dec.Decode(&sp); err != nil {
		return nil, fmt.Errorf("%w: task %q: %v", ErrInvalidSpec, name, err)
	}
	if err := sp.Complete(); err != nil {
		return nil, fmt.Errorf("task %q: %w", name, err)
	}
	if sp.Name != name {
		return nil, fmt.Errorf("%w: task node %q holds the spec of %q", ErrInvalidSpec, name, sp.Name)
	}
	return &sp, nil
}

// Marshal encodes the spec as stored in its task node.
func (sp *Spec) Marshal() []byte {
	data, err := json.MarshalIndent(sp, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("core: marshal spec: %v", err)) // plain structs always encode
	}
	return data
}

func (sp *Spec) setDefaults() {
	if sp.Version == 0 {
		sp.Version = SpecVersion
	}
	if sp.Start == "" {
		sp.Start = StartCurrent
	}
	if sp.State == "" {
		sp.State = DesiredRunning
	}
	if sp.Standby.Mode == "" {
		sp.Standby.Mode = ModeHot
	}
	defaults := []*Endpoint{&sp.Source.Endpoint}
	if sp.Target.IsMySQL() {
		defaults = append(defaults, &sp.Target.Endpoint)
	}
	for _, e := range defaults {
		if e.Flavor == "" {
			e.Flavor = FlavorMySQL
		}
		if e.Port == 0 {
			e.Port = 3306
		}
	}
}

// Validate checks a spec (after defaults) and returns every problem
// found, each naming its field, joined and wrapping ErrInvalidSpec.
func (sp *Spec) Validate() error {
	var errs []string
	bad := func(field, format string, args ...any) {
		errs = append(errs, field+": "+fmt.Sprintf(format, args...))
	}
	if sp.Version != SpecVersion {
		bad("version", "%d is not supported (want %d)", sp.Version, SpecVersion)
	}
	if err := checkName(sp.Name); err != nil {
		bad("name", "%v", err)
	}
	sp.Source.validate("source", bad)
	sp.Target.validate(bad)
	target := sp.Target.Endpoint
	if !sp.Target.IsMySQL() {
		target = Endpoint{} // no server that could be the source
	}
	sp.Source.validateCandidates(target, bad)
	for i, p := range sp.Filter.Include {
		if err := checkTablePattern(p); err != nil {
			bad(fmt.Sprintf("filter.include[%d]", i), "%v", err)
		}
	}
	for i, p := range sp.Filter.Exclude {
		if err := checkTablePattern(p); err != nil {
			bad(fmt.Sprintf("filter.exclude[%d]", i), "%v", err)
		}
	}
	for i, r := range sp.Routes {
		if err := checkRoute(r); err != nil {
			bad(fmt.Sprintf("routes[%d]", i), "%v", err)
		}
	}
	if err := checkStart(sp.Start, sp.Source.Flavor); err != nil {
		bad("start", "%v", err)
	}
	sp.validateSnapshot(bad)
	if v := sp.Verify; v != (VerifyPolicy{}) {
		switch {
		case !sp.Target.IsMySQL():
			bad("verify", "a %s target cannot be verified; only a MySQL or MariaDB one", sp.Target.Kind)
		case v.Every.D() < time.Second:
			bad("verify.every", "%s: want 1s or more (hours, for a large database)", v.Every.D())
		}
		if v.ChunkRows < 0 || v.ChunkRows > maxChunkRows {
			bad("verify.chunkRows", "%d: want 0 (default) to %d", v.ChunkRows, maxChunkRows)
		}
	}
	switch sp.Standby.Mode {
	case ModeHot:
		if sp.Standby.Group != "" {
			bad("standby.group", "only cold standby has a group (mode is hot)")
		}
		if len(sp.Standby.PreferredCores) > 0 {
			bad("standby.preferredCores", "only cold standby has preferred cores (mode is hot)")
		}
	case ModeCold:
		if sp.Standby.Group == "" {
			bad("standby.group", "required with mode cold")
		} else if err := checkName(sp.Standby.Group); err != nil {
			bad("standby.group", "%v", err)
		}
	default:
		bad("standby.mode", "%q: want hot or cold", sp.Standby.Mode)
	}
	for i, h := range sp.Standby.PreferredCores {
		if err := checkName(h); err != nil {
			bad(fmt.Sprintf("standby.preferredCores[%d]", i), "%v", err)
		} else if slices.Index(sp.Standby.PreferredCores, h) != i {
			bad(fmt.Sprintf("standby.preferredCores[%d]", i), "%q given twice", h)
		}
	}
	if sp.State != DesiredRunning && sp.State != DesiredStopped {
		bad("state", "%q: want running or stopped", sp.State)
	}
	if sp.Apply.BatchRows < 0 || sp.Apply.BatchRows > maxBatchRows {
		bad("apply.batchRows", "%d: want 0 (default) to %d", sp.Apply.BatchRows, maxBatchRows)
	}
	if sp.Apply.MaxTxnRows < 0 || sp.Apply.MaxTxnRows > maxTxnRows {
		bad("apply.maxTxnRows", "%d: want 0 (default) to %d", sp.Apply.MaxTxnRows, maxTxnRows)
	}
	if sp.CheckpointSchema != "" && !identRe.MatchString(sp.CheckpointSchema) {
		bad("checkpointSchema", "%q: want a database name of letters, digits, _ and $", sp.CheckpointSchema)
	}
	if len(errs) == 0 {
		return nil
	}
	// One line, so that it reads whole in a log line or a terminal.
	return fmt.Errorf("%w: %s", ErrInvalidSpec, strings.Join(errs, "; "))
}

// validateSnapshot checks start: snapshot against the target and the
// snapshot section.
func (sp *Spec) validateSnapshot(bad func(field, format string, args ...any)) {
	if sp.Start == StartSnapshot && !sp.Target.IsMySQL() {
		bad("start", "snapshot: a %s target cannot take a table copy yet; start from current, earliest or a position", sp.Target.Kind)
	}
	sn := sp.Snapshot
	if sn != (Snapshot{}) && sp.Start != StartSnapshot {
		bad("snapshot", "only with start: snapshot (start is %s)", sp.Start)
	}
	if sn.Threads < 0 || sn.Threads > 1 {
		bad("snapshot.threads", "%d: the copy reads one consistent snapshot through one connection; want 0 (default) or 1", sn.Threads)
	}
	if sn.ChunkRows < 0 || sn.ChunkRows > maxChunkRows {
		bad("snapshot.chunkRows", "%d: want 0 (default) to %d", sn.ChunkRows, maxChunkRows)
	}
	if sn.MaxRowsPerSecond < 0 {
		bad("snapshot.maxRowsPerSecond", "%d: want 0 (unlimited) or more", sn.MaxRowsPerSecond)
	}
}

// validateCandidates checks Hosts and FailoverAfter: every candidate a
// host:port given once, none of them the target.
func (s *SourceEndpoint) validateCandidates(target Endpoint, bad func(field, format string, args ...any)) {
	seen := map[string]bool{}
	for i, e := range append([]Endpoint{s.Endpoint}, s.Candidates()[1:]...) {
		field := "source"
		if i > 0 {
			field = fmt.Sprintf("source.hosts[%d]", i-1)
		}
		if e.Host == "" {
			continue // reported as source.host
		}
		if seen[e.Addr()] {
			bad(field, "%s is given twice", e.Addr())
		}
		seen[e.Addr()] = true
		switch {
		case e.Host != target.Host || e.Port != target.Port:
		case i == 0:
			bad("target", "is the source (%s): replicating a server into itself would apply every change twice", e.Addr())
		default:
			bad(field, "%s is the target: replicating a server into itself would apply every change twice", e.Addr())
		}
	}
	for i, h := range s.Hosts {
		if _, _, err := splitHostPort(h); err != nil {
			bad(fmt.Sprintf("source.hosts[%d]", i), "%v", err)
		}
	}
	switch {
	case s.FailoverAfter != 0 && len(s.Hosts) == 0:
		bad("source.failoverAfter", "needs source.hosts, the candidates to fail over to")
	case s.FailoverAfter != 0 && s.FailoverAfter.D() < minFailoverAfter:
		bad("source.failoverAfter", "%v: at least %v", s.FailoverAfter.D(), minFailoverAfter)
	}
}

func (e *Endpoint) validate(field string, bad func(field, format string, args ...any)) {
	if e.Host == "" {
		bad(field+".host", "required")
	} else if strings.ContainsAny(e.Host, " /\t\n") {
		bad(field+".host", "%q is not a host name or address", e.Host)
	}
	if e.Port < 1 || e.Port > 65535 {
		bad(field+".port", "%d: want 1-65535", e.Port)
	}
	if e.User == "" {
		bad(field+".user", "required")
	}
	if e.Password != "" && e.PasswordFile != "" {
		bad(field+".passwordFile", "give password or passwordFile, not both")
	}
	if e.Flavor != FlavorMySQL && e.Flavor != FlavorMariaDB {
		bad(field+".flavor", "%q: want mysql or mariadb", e.Flavor)
	}
}

// HasInlinePassword reports whether the spec holds a password itself
// (not a passwordFile): its node is then readable by the writer alone.
func (sp *Spec) HasInlinePassword() bool {
	return sp.Source.Password != "" || sp.Target.Password != ""
}

// RedactedPassword replaces passwords in what is shown of a spec: anyone
// who may read the task node may see them, but terminals, pasted output,
// the console and alerts need not.
const RedactedPassword = "***"

// Redacted returns a copy of the spec with its inline passwords replaced
// by RedactedPassword. Routes and filters are shared with sp: they hold
// no secret.
func (sp *Spec) Redacted() *Spec {
	out := *sp
	for _, e := range []*Endpoint{&out.Source.Endpoint, &out.Target.Endpoint} {
		if e.Password != "" {
			e.Password = RedactedPassword
		}
	}
	return &out
}

// ResolvePassword returns the endpoint's password, reading PasswordFile
// (at most boundedfile.MaxSecret bytes, until ctx ends) if one is given.
func (e *Endpoint) ResolvePassword(ctx context.Context) (string, error) {
	if e.PasswordFile == "" {
		return e.Password, nil
	}
	data, err := boundedfile.Read(ctx, e.PasswordFile, boundedfile.MaxSecret)
	if err != nil {
		return "", fmt.Errorf("passwordFile: %w", err)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}

// nameRe is what task and group names may be: one znode name that reads
// well in paths and logs.
var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// checkName checks a task, group or host name.
func checkName(n string) error {
	switch {
	case n == "":
		return errors.New("required")
	case len(n) > maxNameLen:
		return fmt.Errorf("%d bytes: at most %d", len(n), maxNameLen)
	case !nameRe.MatchString(n):
		return fmt.Errorf("%q: use letters, digits, '.', '_' and '-', starting with a letter or digit", n)
	}
	return nil
}

// identRe is a MySQL identifier as the patterns allow it (no quoting).
var identRe = regexp.MustCompile(`^[A-Za-z0-9_$]+$`)

// checkTablePattern checks a filter pattern: db.table, where * matches
// any run of characters.
func checkTablePattern(p string) error {
	db, table, ok := strings.Cut(p, ".")
	if !ok || db == "" || table == "" || strings.Contains(table, ".") {
		return fmt.Errorf("%q: want db.table, with * as a wildcard (shop.*, *.orders, logs_*.*)", p)
	}
	for _, part := range []string{db, table} {
		if rest := strings.ReplaceAll(part, "*", ""); rest != "" && !identRe.MatchString(rest) {
			return fmt.Errorf("%q: names hold letters, digits, _, $ and the wildcard *", p)
		}
	}
	return nil
}

// checkRoute checks a rename: db to db, or db.table to db.table.
func checkRoute(r Route) error {
	fromParts, toParts := strings.Split(r.From, "."), strings.Split(r.To, ".")
	if r.From == "" || r.To == "" {
		return fmt.Errorf("from and to are both required")
	}
	if len(fromParts) > 2 || len(fromParts) != len(toParts) {
		return fmt.Errorf("%q to %q: rename a database (db to db2) or a table (db.t to db2.t2)", r.From, r.To)
	}
	for _, p := range append(fromParts, toParts...) {
		if !identRe.MatchString(p) {
			return fmt.Errorf("%q to %q: names hold letters, digits, _ and $, no wildcards", r.From, r.To)
		}
	}
	return nil
}

var (
	// mysqlGTIDRe is a MySQL GTID set: uuid:interval[:interval…][,…].
	mysqlGTIDRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(:[0-9]+(-[0-9]+)?)+(,\s*[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(:[0-9]+(-[0-9]+)?)+)*$`)
	// mariaGTIDRe is a MariaDB GTID position: domain-server-seq[,…].
	mariaGTIDRe = regexp.MustCompile(`^[0-9]+-[0-9]+-[0-9]+(,\s*[0-9]+-[0-9]+-[0-9]+)*$`)
)

// checkStart checks a start point against the source's flavor.
func checkStart(s, flavor string) error {
	if _, isFile, err := replication.ParseFilePos(s); isFile {
		return err
	}
	switch {
	case s == StartCurrent, s == StartEarliest, s == StartSnapshot:
		return nil
	case mysqlGTIDRe.MatchString(s):
		if flavor != FlavorMySQL {
			return fmt.Errorf("%q is a MySQL GTID set, but source.flavor is %s (MariaDB GTIDs look like 0-1-100)", s, flavor)
		}
		return nil
	case mariaGTIDRe.MatchString(s):
		if flavor != FlavorMariaDB {
			return fmt.Errorf("%q is a MariaDB GTID position, but source.flavor is %s", s, flavor)
		}
		return nil
	}
	return fmt.Errorf("%q: want current, earliest, snapshot, a binlog position file:pos (mysql-bin.000003:4) or a GTID set", s)
}
