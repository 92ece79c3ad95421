package kafkasink

import (
	"strings"
	"testing"
)

func TestConfigValidation(t *testing.T) {
	ok := Config{Brokers: []string{"127.0.0.1:9092"}}
	if _, err := ok.withDefaults(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	sasl := Config{Brokers: []string{"k:9092"}, SASLMechanism: SASLScramSHA512, User: "u", Password: "secret", TLS: &TLS{CAFile: "/ca.pem"}}
	if _, err := sasl.withDefaults(); err != nil {
		t.Fatalf("valid SASL and TLS config refused: %v", err)
	}
	if s := sasl.String(); strings.Contains(s, "secret") || !strings.Contains(s, "SCRAM-SHA-512 user u") || !strings.Contains(s, "TLS") {
		t.Errorf("String() = %q: want the mechanism, the user and TLS, never the password", s)
	}
	b := []string{"k:9092"}
	for _, tt := range []struct {
		c     Config
		field string
	}{
		{Config{}, "target.brokers"},
		{Config{Brokers: []string{"k"}}, "target.brokers"},
		{Config{Brokers: []string{"k:0"}}, "target.brokers"},
		{Config{Brokers: b, TopicMode: "db"}, "target.topicMode"},
		{Config{Brokers: b, TopicMode: TopicSingle}, "target.topic"},
		{Config{Brokers: b, Topic: "all"}, "target.topic"},
		{Config{Brokers: b, TopicPrefix: "a b"}, "target.topicPrefix"},
		{Config{Brokers: b, SchemaTopic: "x/y"}, "target.schemaTopic"},
		{Config{Brokers: b, CheckpointTopic: strings.Repeat("c", 250)}, "target.checkpointTopic"},
		{Config{Brokers: b, TopicMode: TopicSingle, Topic: "all", CheckpointTopic: "all"}, "target.checkpointTopic"},
		{Config{Brokers: b, Format: "avro"}, "target.format"},
		{Config{Brokers: b, Partitions: -1}, "target.partitions"},
		{Config{Brokers: b, ReplicationFactor: -2}, "target.replicationFactor"},
		{Config{Brokers: b, TransactionTimeout: MaxTransactionTimeout + 1}, "target.transactionTimeout"},
		{Config{Brokers: b, SASLMechanism: "GSSAPI", User: "u", Password: "secret"}, "target.saslMechanism"},
		{Config{Brokers: b, User: "u", Password: "secret"}, "target.saslMechanism"},
		{Config{Brokers: b, SASLMechanism: SASLPlain, Password: "secret"}, "target.user"},
		{Config{Brokers: b, SASLMechanism: SASLPlain, User: "u"}, "target.password"},
		{Config{Brokers: b, TLS: &TLS{CertFile: "c.pem"}}, "target.tls.certFile"},
		{Config{Brokers: b, TLS: &TLS{CAFile: "ca.pem", InsecureSkipVerify: true}}, "target.tls.insecureSkipVerify"},
	} {
		_, err := tt.c.withDefaults()
		if err == nil || !strings.Contains(err.Error(), tt.field+":") {
			t.Errorf("%+v: error %v, want one naming %s", tt.c, err, tt.field)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

func TestTopicName(t *testing.T) {
	for in, want := range map[string]string{
		"orders": "orders", "my.table": "my-2Etable", "a-b": "a-2Db", "snake_case": "snake_case",
		"two words": "two-20words", "ü": "-C3-BC", "-2E": "-2D2E",
	} {
		got := TopicName(in)
		if got != want {
			t.Errorf("TopicName(%q) = %q, want %q", in, got, want)
		}
		if err := CheckTopic("p." + got); err != nil {
			t.Errorf("TopicName(%q) = %q is not a valid topic part: %v", in, got, err)
		}
	}
}

func TestCanalDDLType(t *testing.T) {
	for q, want := range map[string]string{
		"CREATE TABLE t (id INT)": "CREATE", "create unique index i on t (a)": "CINDEX", "CREATE INDEX i ON t (a)": "CINDEX",
		"ALTER TABLE t ADD c INT": "ALTER", "DROP TABLE t": "ERASE", "DROP INDEX i ON t": "DINDEX",
		"RENAME TABLE a TO b": "RENAME", "TRUNCATE t": "TRUNCATE", "GRANT ALL ON *.* TO u": "QUERY", "": "QUERY",
	} {
		if got := canalDDLType(q); got != want {
			t.Errorf("canalDDLType(%q) = %s, want %s", q, got, want)
		}
	}
}
