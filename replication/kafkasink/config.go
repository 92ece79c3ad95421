package kafkasink

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/shepherd-dev/shepherd/replication"
)

// Defaults of Config.
const (
	DefaultTopicPrefix        = "shepherd"
	DefaultCheckpointTopic    = "shepherd_checkpoints"
	DefaultFormat             = FormatDebezium
	DefaultTransactionTimeout = time.Minute
	// MaxTransactionTimeout is Kafka's default transaction.max.timeout.ms:
	// a broker refuses a producer asking for more.
	MaxTransactionTimeout = 15 * time.Minute
	// maxTopicLength is Kafka's limit on a topic name.
	maxTopicLength = 249
	// maxBuffered bounds the records produced and not yet acknowledged.
	maxBuffered = 10000
)

// Formats of the events (Config.Format).
const (
	// FormatDebezium is the envelope the NATS sink publishes too:
	// before, after, source, op, ts_ms (package changeevent).
	FormatDebezium = "debezium"
	// FormatCanal is Canal's flat JSON message: data, old, type,
	// database, table, pkNames, isDdl, es, ts, sqlType, mysqlType.
	FormatCanal = "canal"
	// FormatMaxwell is Maxwell's JSON: database, table, type, ts,
	// commit, data, old.
	FormatMaxwell = "maxwell"
)

// Topic modes (Config.TopicMode).
const (
	// TopicPerTable sends a table's rows to <prefix>.<db>.<table>.
	TopicPerTable = "table"
	// TopicSingle sends every row to Config.Topic.
	TopicSingle = "single"
)

// SchemaTopicSuffix ends the default schema-change topic:
// <prefix>._schema. A table's topic has two parts after the prefix, so
// no table's topic can be it.
const SchemaTopicSuffix = "._schema"

// SASL mechanisms (Config.SASLMechanism).
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// Config is a Kafka target.
type Config struct {
	// Brokers are the bootstrap brokers, host:port each.
	Brokers []string
	// TopicMode is TopicPerTable (the default) or TopicSingle.
	TopicMode string
	// TopicPrefix starts every table's topic: <prefix>.<db>.<table>
	// (names escaped by TopicName). Zero: DefaultTopicPrefix.
	TopicPrefix string
	// Topic is the one topic of every row with TopicSingle.
	Topic string
	// SchemaTopic takes the schema changes (DDL). Zero:
	// <TopicPrefix>._schema.
	SchemaTopic string
	// CheckpointTopic holds the tasks' checkpoints, key = task, in its
	// partition 0; created compacted with one partition if missing.
	// Zero: DefaultCheckpointTopic.
	CheckpointTopic string
	// Format is FormatDebezium (the default), FormatCanal or
	// FormatMaxwell.
	Format string
	// Partitions and ReplicationFactor are those of the topics the sink
	// creates; zero leaves them to the broker's defaults.
	Partitions        int32
	ReplicationFactor int16
	// TransactionTimeout bounds a Kafka transaction: a batch, or one
	// source transaction, must be produced and committed within it, or
	// the broker aborts it and the batch is produced again. Zero:
	// DefaultTransactionTimeout.
	TransactionTimeout time.Duration
	// SASLMechanism is "" (no SASL), SASLPlain, SASLScramSHA256 or
	// SASLScramSHA512, with User and Password. The password is never
	// logged.
	SASLMechanism  string
	User, Password string
	// TLS, when not nil, connects with TLS.
	TLS *TLS
}

// TLS is how to connect with TLS: the server's CA (the system's roots
// when empty), a client certificate for mutual TLS, the name the
// server's certificate must have (the broker's host when empty).
type TLS struct {
	CAFile             string `json:"caFile,omitempty" yaml:"caFile"`
	CertFile           string `json:"certFile,omitempty" yaml:"certFile"`
	KeyFile            string `json:"keyFile,omitempty" yaml:"keyFile"`
	ServerName         string `json:"serverName,omitempty" yaml:"serverName"`
	InsecureSkipVerify bool   `json:"insecureSkipVerify,omitempty" yaml:"insecureSkipVerify"`
}

// ErrConfig reports a Config that cannot work; the message names the
// field as the task spec spells it (target.brokers …). It wraps
// replication.ErrConfig.
var ErrConfig = fmt.Errorf("kafkasink: invalid target (%w)", replication.ErrConfig)

// String describes the target without its password.
func (c Config) String() string {
	c, _ = c.withDefaults()
	s := "kafka " + strings.Join(c.Brokers, ",")
	if c.TopicMode == TopicSingle {
		s += " topic " + c.Topic
	} else {
		s += " topics " + c.TopicPrefix + ".<db>.<table>"
	}
	s += " (" + c.Format + ")"
	if c.SchemaTopic != c.TopicPrefix+SchemaTopicSuffix {
		s += ", schema changes to " + c.SchemaTopic
	}
	if c.CheckpointTopic != DefaultCheckpointTopic {
		s += ", checkpoints in " + c.CheckpointTopic
	}
	if c.SASLMechanism != "" {
		s += ", " + c.SASLMechanism + " user " + c.User
	}
	if c.TLS != nil {
		s += ", TLS"
		if c.TLS.InsecureSkipVerify {
			s += " (certificate not verified)"
		}
	}
	return s
}

// withDefaults validates c and fills in its zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.TopicMode == "" {
		c.TopicMode = TopicPerTable
	}
	if c.TopicPrefix == "" {
		c.TopicPrefix = DefaultTopicPrefix
	}
	if c.SchemaTopic == "" {
		c.SchemaTopic = c.TopicPrefix + SchemaTopicSuffix
	}
	if c.CheckpointTopic == "" {
		c.CheckpointTopic = DefaultCheckpointTopic
	}
	if c.Format == "" {
		c.Format = DefaultFormat
	}
	if c.TransactionTimeout == 0 {
		c.TransactionTimeout = DefaultTransactionTimeout
	}
	return c, c.Validate()
}

// Validate checks the fields, naming each as the task spec spells it.
func (c Config) Validate() error {
	p := c.Problems()
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrConfig, strings.Join(p, "; "))
}

// Problems lists what is wrong with the fields, each as "field: what",
// the field named as the task spec spells it (target.brokers …). It
// never shows the password.
func (c Config) Problems() []string {
	var out []string
	bad := func(field, format string, args ...any) {
		out = append(out, field+": "+fmt.Sprintf(format, args...))
	}
	if len(c.Brokers) == 0 {
		bad("target.brokers", "required (host:9092)")
	}
	for _, b := range c.Brokers {
		if err := CheckBroker(b); err != nil {
			bad("target.brokers", "%v", err)
		}
	}
	switch c.TopicMode {
	case "", TopicPerTable:
		if c.Topic != "" {
			bad("target.topic", "only with topicMode %s (topicMode is %s: rows go to <topicPrefix>.<db>.<table>)", TopicSingle, TopicPerTable)
		}
	case TopicSingle:
		if c.Topic == "" {
			bad("target.topic", "required with topicMode %s", TopicSingle)
		}
	default:
		bad("target.topicMode", "%q: want %s or %s", c.TopicMode, TopicPerTable, TopicSingle)
	}
	for _, f := range []struct{ name, v string }{{"target.topic", c.Topic}, {"target.schemaTopic", c.SchemaTopic}, {"target.checkpointTopic", c.CheckpointTopic}} {
		if f.v != "" {
			if err := CheckTopic(f.v); err != nil {
				bad(f.name, "%v", err)
			}
		}
	}
	if c.TopicPrefix != "" {
		if err := CheckTopic(c.TopicPrefix); err != nil {
			bad("target.topicPrefix", "%v", err)
		}
	}
	if c.CheckpointTopic != "" && (c.CheckpointTopic == c.Topic || c.CheckpointTopic == c.SchemaTopic) {
		bad("target.checkpointTopic", "%q also takes events: give the checkpoints a topic of their own", c.CheckpointTopic)
	}
	switch c.Format {
	case "", FormatDebezium, FormatCanal, FormatMaxwell:
	default:
		bad("target.format", "%q: want %s, %s or %s", c.Format, FormatDebezium, FormatCanal, FormatMaxwell)
	}
	if c.Partitions < 0 {
		bad("target.partitions", "%d: want 0 (the broker's default) or more", c.Partitions)
	}
	if c.ReplicationFactor < 0 {
		bad("target.replicationFactor", "%d: want 0 (the broker's default) or more", c.ReplicationFactor)
	}
	if c.TransactionTimeout < 0 || c.TransactionTimeout > MaxTransactionTimeout {
		bad("target.transactionTimeout", "%v: want more than 0 and at most %v (the broker's transaction.max.timeout.ms by default)", c.TransactionTimeout, MaxTransactionTimeout)
	}
	switch c.SASLMechanism {
	case "":
		if c.User != "" || c.Password != "" {
			bad("target.saslMechanism", "required with target.user or a password (%s, %s or %s)", SASLPlain, SASLScramSHA256, SASLScramSHA512)
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if c.User == "" {
			bad("target.user", "required with saslMechanism %s", c.SASLMechanism)
		}
		if c.Password == "" {
			bad("target.password", "required with saslMechanism %s (or target.passwordFile)", c.SASLMechanism)
		}
	default:
		bad("target.saslMechanism", "%q: want %s, %s or %s", c.SASLMechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)
	}
	if c.TLS != nil {
		if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
			bad("target.tls.certFile", "give certFile and keyFile together (a client certificate and its key)")
		}
		if c.TLS.InsecureSkipVerify && c.TLS.CAFile != "" {
			bad("target.tls.insecureSkipVerify", "with caFile: the CA would not be checked; drop one")
		}
	}
	return out
}

// CheckBroker checks a broker address, host:port.
func CheckBroker(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q: want host:port (%v)", s, err)
	}
	if host == "" {
		return fmt.Errorf("%q: no host", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a port number", s, port)
	}
	return nil
}

// CheckTopic checks a topic name as Kafka does: letters, digits, '.',
// '_' and '-', at most 249 characters, not "." or "..".
func CheckTopic(s string) error {
	if s == "" {
		return errors.New("required")
	}
	if len(s) > maxTopicLength {
		return fmt.Errorf("%q: at most %d characters", s, maxTopicLength)
	}
	if s == "." || s == ".." {
		return fmt.Errorf("%q is not a topic name", s)
	}
	for _, r := range s {
		if !topicChar(r) {
			return fmt.Errorf("%q: use letters, digits, '.', '_' and '-'", s)
		}
	}
	return nil
}

func topicChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// TopicName turns a database or table name into one part of a topic
// name: every byte other than an ASCII letter, digit or '_' — '.' and
// '-' included, and every byte of a non-ASCII letter — is written as
// -XX (upper-case hex), so that different names never share a topic
// and a name never adds a '.' of its own.
func TopicName(name string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x80 && c != '.' && c != '-' && topicChar(rune(c)) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('-')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}

// clientOpts are the connection options: brokers, SASL, TLS. Files are
// read here, when a task opens its sink.
func (c Config) clientOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...)}
	if c.SASLMechanism != "" {
		var m sasl.Mechanism
		switch c.SASLMechanism {
		case SASLPlain:
			m = plain.Auth{User: c.User, Pass: c.Password}.AsMechanism()
		case SASLScramSHA256:
			m = scram.Auth{User: c.User, Pass: c.Password}.AsSha256Mechanism()
		case SASLScramSHA512:
			m = scram.Auth{User: c.User, Pass: c.Password}.AsSha512Mechanism()
		}
		opts = append(opts, kgo.SASL(m))
	}
	if c.TLS != nil {
		tc, err := c.TLS.config()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", replication.ErrNonRetryable, err)
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	return opts, nil
}

func (t *TLS) config() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("target.tls.caFile: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("target.tls.caFile: %s holds no PEM certificate", t.CAFile)
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("target.tls.certFile: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
