package core

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const goodYAML = `
name: copy_hot_item
source: {host: db1.example, port: 3306, user: repl, password: s3cret, flavor: mariadb}
target: {host: db2.example, user: apply, passwordFile: /etc/shepherd/db2.pw, flavor: mariadb}
filter:
  include: [shop.*, "*.orders"]
  exclude: [shop.tmp_*]
routes:
  - {from: shop, to: shop_copy}
  - {from: shop.items, to: shop_copy.hot_items}
start: mysql-bin.000003:4
standby: {mode: cold, group: g1}
apply: {batchRows: 500, maxTxnRows: 20000}
`

func TestParseSpecDefaultsAndRoundTrip(t *testing.T) {
	sp, err := ParseSpec([]byte(goodYAML))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Version != SpecVersion || sp.State != DesiredRunning || sp.Target.Port != 3306 {
		t.Errorf("defaults: version %d, state %q, target port %d; want %d, running, 3306", sp.Version, sp.State, sp.Target.Port, SpecVersion)
	}
	if sp.Standby.Mode != ModeCold || sp.Standby.Group != "g1" || sp.Standby.PreferredCores != nil || sp.Apply != (Apply{500, 20000}) || len(sp.Routes) != 2 {
		t.Errorf("parsed %+v", sp)
	}
	back, err := decodeStoredSpec("copy_hot_item", sp.Marshal())
	if err != nil {
		t.Fatalf("stored form does not decode: %v\n%s", err, sp.Marshal())
	}
	if string(back.Marshal()) != string(sp.Marshal()) {
		t.Errorf("round trip changed the spec:\n%s\n%s", sp.Marshal(), back.Marshal())
	}
	// The stored JSON is a valid input too.
	if _, err := ParseSpec(sp.Marshal()); err != nil {
		t.Errorf("ParseSpec of the stored JSON: %v", err)
	}
}

func TestParseSpecErrorsNameTheField(t *testing.T) {
	base := "name: t1\nsource: {host: a, user: u}\ntarget: {host: b, user: u}\n"
	for _, tc := range []struct {
		name, doc string
		want      []string // substrings of the error
	}{
		{"empty", "", []string{"empty document"}},
		{"not yaml", "name: [", []string{"invalid task spec"}},
		{"unknown field", base + "sourse: {}\n", []string{"sourse"}},
		{"two documents", base + "---\n" + base, []string{"more than one document"}},
		{"missing name", "source: {host: a, user: u}\ntarget: {host: b, user: u}\n", []string{"name: required"}},
		{"bad name", strings.Replace(base, "t1", "a/b", 1), []string{"name:", "a/b"}},
		{"missing everything", "name: t1\n", []string{"source.host: required", "source.user: required", "target.host: required", "target.user: required"}},
		{"unknown field after a valid one", base + "apply: {}\nx: 1\n", []string{"field x not found"}},
		{"port range", "name: t1\nsource: {host: a, user: u, port: 70000}\ntarget: {host: b, user: u}\n", []string{"source.port: 70000"}},
		{"port type", "name: t1\nsource: {host: a, user: u, port: three}\ntarget: {host: b, user: u}\n", []string{"three"}},
		{"flavor", "name: t1\nsource: {host: a, user: u, flavor: postgres}\ntarget: {host: b, user: u}\n", []string{"source.flavor", "postgres"}},
		{"both passwords", "name: t1\nsource: {host: a, user: u, password: x, passwordFile: /p}\ntarget: {host: b, user: u}\n", []string{"source.passwordFile", "not both"}},
		{"target is source", "name: t1\nsource: {host: a, user: u}\ntarget: {host: a, user: v}\n", []string{"target: is the source"}},
		{"include pattern", base + "filter: {include: [shop]}\n", []string{"filter.include[0]", "db.table"}},
		{"exclude pattern", base + "filter: {exclude: [\"shop.t?\"]}\n", []string{"filter.exclude[0]", "wildcard *"}},
		{"route shape", base + "routes: [{from: shop, to: a.b}]\n", []string{"routes[0]"}},
		{"route wildcard", base + "routes: [{from: shop.*, to: a.*}]\n", []string{"routes[0]", "no wildcards"}},
		{"route empty", base + "routes: [{from: shop}]\n", []string{"routes[0]", "required"}},
		{"start", base + "start: yesterday\n", []string{"start:", "yesterday"}},
		{"start pos", base + "start: mysql-bin.000001:2\n", []string{"start:", "start at 4"}},
		{"mariadb gtid on mysql", base + "start: 0-1-100\n", []string{"start:", "MariaDB GTID", "mysql"}},
		{"mysql gtid on mariadb", "name: t1\nsource: {host: a, user: u, flavor: mariadb}\ntarget: {host: b, user: u}\nstart: 3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5\n", []string{"start:", "MySQL GTID"}},
		{"mode", base + "standby: {mode: warm}\n", []string{"standby.mode", "warm"}},
		{"cold without group", base + "standby: {mode: cold}\n", []string{"standby.group: required"}},
		{"hot with group", base + "standby: {mode: hot, group: g}\n", []string{"standby.group", "only cold"}},
		{"hot with preferred cores", base + "standby: {mode: hot, preferredCores: [a]}\n", []string{"standby.preferredCores", "only cold"}},
		{"bad preferred core", base + "standby: {mode: cold, group: g, preferredCores: [a, a, 'b c']}\n",
			[]string{`standby.preferredCores[1]: "a" given twice`, "standby.preferredCores[2]"}},
		{"state", base + "state: paused\n", []string{"state:", "paused"}},
		{"batch", base + "apply: {batchRows: -1, maxTxnRows: 99999999999}\n", []string{"apply.batchRows: -1", "apply.maxTxnRows"}},
		{"version", base + "version: 2\n", []string{"version: 2 is not supported"}},
		{"checkpoint schema", base + "checkpointSchema: \"a b\"\n", []string{"checkpointSchema"}},
		{"snapshot fields", base + "start: snapshot\nsnapshot: {threads: 4, chunkRows: -1, maxRowsPerSecond: -5}\n",
			[]string{"snapshot.threads: 4", "snapshot.chunkRows: -1", "snapshot.maxRowsPerSecond: -5"}},
		{"snapshot without start", base + "snapshot: {chunkRows: 10}\n", []string{"snapshot: only with start: snapshot"}},
		{"verify fields", base + "verify: {every: 10ms, chunkRows: -1}\n", []string{"verify.every: 10ms", "verify.chunkRows: -1"}},
		{"verify of nats", "name: t1\nsource: {host: a, user: u}\ntarget: {kind: nats, url: 'nats://x:1', stream: S}\nverify: {every: 1h}\n",
			[]string{"verify: a nats target cannot be verified"}},
		{"snapshot to nats", "name: t1\nsource: {host: a, user: u}\ntarget: {kind: nats, url: 'nats://x:1', stream: S}\nstart: snapshot\n",
			[]string{"start: snapshot", "nats"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSpec([]byte(tc.doc))
			if err == nil {
				t.Fatalf("ParseSpec accepted:\n%s", tc.doc)
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("error %v does not wrap ErrInvalidSpec", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestStartPoints(t *testing.T) {
	for _, tc := range []struct {
		start, flavor string
		ok            bool
	}{
		{"current", FlavorMySQL, true},
		{"earliest", FlavorMariaDB, true},
		{"mysql-bin.000003:4", FlavorMySQL, true},
		{"binlog.000001:4294967295", FlavorMySQL, true},
		{"binlog.000001:4294967296", FlavorMySQL, false},
		{"mysql-bin:4", FlavorMySQL, false},
		{"3E11FA47-71CA-11E1-9E33-C80AA9429562:23", FlavorMySQL, true},
		{"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:11-18,2E11FA47-71CA-11E1-9E33-C80AA9429562:1-3", FlavorMySQL, true},
		{"0-1-100", FlavorMariaDB, true},
		{"0-1-100,1-2-7", FlavorMariaDB, true},
		{"0-1", FlavorMariaDB, false},
		{"snapshot", FlavorMariaDB, true},
		{"", FlavorMySQL, false},
	} {
		err := checkStart(tc.start, tc.flavor)
		if (err == nil) != tc.ok {
			t.Errorf("checkStart(%q, %s) = %v; want ok %v", tc.start, tc.flavor, err, tc.ok)
		}
	}
}

func TestStoredSpecChecks(t *testing.T) {
	sp, err := ParseSpec([]byte("name: t1\nsource: {host: a, user: u}\ntarget: {host: b, user: u}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeStoredSpec("t2", sp.Marshal()); !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), `holds the spec of "t1"`) {
		t.Errorf("spec of t1 under t2: %v", err)
	}
	if _, err := decodeStoredSpec("t1", nil); !errors.Is(err, ErrNoSpec) {
		t.Errorf("empty node: %v, want ErrNoSpec", err)
	}
	if _, err := decodeStoredSpec("t1", []byte(`{"name":"t1","bogus":1}`)); !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown stored field: %v", err)
	}
}

func TestResolvePassword(t *testing.T) {
	f := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(f, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		e    Endpoint
		want string
		err  bool
	}{
		{Endpoint{Password: "inline"}, "inline", false},
		{Endpoint{PasswordFile: f}, "hunter2", false},
		{Endpoint{PasswordFile: f + ".missing"}, "", true},
	} {
		got, err := tc.e.ResolvePassword(t.Context())
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ResolvePassword(%+v) = %q, %v; want %q, error %v", tc.e, got, err, tc.want, tc.err)
		}
	}
}

func TestSeqOf(t *testing.T) {
	for name, want := range map[string]int{
		"host1-0000000007":   7,
		"a-b-c-0000000012":   12,
		"host1-7":            -1,
		"nodash0000000007":   -1,
		"host1-000000000x":   -1,
		"db-1.example-00001": -1,
	} {
		if got := seqOf(name); got != want {
			t.Errorf("seqOf(%q) = %d, want %d", name, got, want)
		}
	}
}

// TestParseSpecs: a stream of specs separated by --- gives each document
// as ParseSpec reads it alone, numbered from 1 with the line it starts on;
// empty documents (before a leading ---, comments only) are skipped, an
// invalid one does not hide the others, and the decoder's line numbers
// are the stream's.
func TestParseSpecs(t *testing.T) {
	two := strings.Replace(goodYAML, "copy_hot_item", "second", 1)
	stream := "# tasks\n---\n" + strings.TrimPrefix(goodYAML, "\n") + "---\n# nothing here\n--- " +
		"{name: bad, source: {host: h, port: 70000, user: u}, target: {host: h, user: u}}\n---\n" +
		"name: typo\nsource: {host: h, user: u}\ntarget: {host: h, user: u}\nfliter: {}\n...\n---\n" + strings.TrimPrefix(two, "\n")
	docs, err := ParseSpecs([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	type doc struct {
		index, line int
		name, err   string
	}
	want := []doc{
		{1, 2, "copy_hot_item", ""},
		{2, 17, "", "source.port: 70000: want 1-65535"},
		{3, 18, "", "line 22: field fliter not found"},
		{4, 24, "second", ""},
	}
	if len(docs) != len(want) {
		t.Fatalf("ParseSpecs: %d documents, want %d: %+v", len(docs), len(want), docs)
	}
	for i, w := range want {
		d := docs[i]
		if d.Index != w.index || d.Line != w.line {
			t.Errorf("document %d: index %d, line %d; want %d, %d", i, d.Index, d.Line, w.index, w.line)
		}
		switch {
		case w.err == "" && (d.Err != nil || d.Spec == nil || d.Spec.Name != w.name):
			t.Errorf("document %d: %+v, %v; want task %s", w.index, d.Spec, d.Err, w.name)
		case w.err != "" && (!errors.Is(d.Err, ErrInvalidSpec) || !strings.Contains(d.Err.Error(), w.err)):
			t.Errorf("document %d: %v, want ErrInvalidSpec with %q", w.index, d.Err, w.err)
		}
	}
	if d, err := ParseSpecs([]byte(goodYAML)); err != nil || len(d) != 1 || d[0].Err != nil || d[0].Index != 1 {
		t.Errorf("one document without ---: %+v, %v", d, err)
	}
	for _, in := range []string{"", "---\n", "# only a comment\n---\n---\n"} {
		if _, err := ParseSpecs([]byte(in)); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("ParseSpecs(%q): %v, want ErrInvalidSpec (no spec)", in, err)
		}
	}
}

// natsYAML is the example NATS task of docs/replication.md.
const natsYAML = `
name: orders_to_nats
source: {host: db1.example, port: 3306, user: repl, passwordFile: /etc/shepherd/db1.pw, flavor: mariadb}
target:
  kind: nats
  url: nats://nats1.example:4222,nats://nats2.example:4222
  stream: SHOP_CDC
  subjectPrefix: cdc.shop
  duplicateWindow: 2m
  user: shepherd
  password: t0ken
filter:
  include: [shop.*]
`

func TestNATSTargetSpec(t *testing.T) {
	sp, err := ParseSpec([]byte(natsYAML))
	if err != nil {
		t.Fatal(err)
	}
	tg := sp.Target
	if !tg.IsNATS() || tg.Stream != "SHOP_CDC" || tg.SubjectPrefix != "cdc.shop" || tg.DuplicateWindow.D() != 2*60e9 || tg.Port != 0 || tg.Flavor != "" {
		t.Errorf("parsed target %+v", tg)
	}
	back, err := decodeStoredSpec(sp.Name, sp.Marshal())
	if err != nil || string(back.Marshal()) != string(sp.Marshal()) {
		t.Errorf("stored form does not round-trip (%v):\n%s", err, sp.Marshal())
	}
	if r := sp.Redacted(); r.Target.Password != RedactedPassword || strings.Contains(string(r.Marshal()), "t0ken") {
		t.Errorf("Redacted keeps the target's password: %s", r.Marshal())
	}
	if !sp.HasInlinePassword() {
		t.Error("an inline NATS password does not count as one")
	}
	noFile := *sp
	noFile.Source.PasswordFile = ""
	cfg, err := replicationConfig(t.Context(), &noFile, nil)
	if err != nil || cfg.Sink == nil || !strings.Contains(cfg.Sink.String(), "SHOP_CDC") || strings.Contains(cfg.Sink.String(), "t0ken") {
		t.Errorf("replication config: sink %v (%v)", cfg.Sink, err)
	}

	// A MySQL spec is stored as it was before target kinds existed.
	my, err := ParseSpec([]byte(goodYAML))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(my.Marshal()), "kind") {
		t.Errorf("a MySQL spec now stores a kind:\n%s", my.Marshal())
	}

	base := "name: t1\nsource: {host: a, user: u}\n"
	for _, tc := range []struct{ doc, want string }{
		{base + "target: {kind: nats, stream: S}\n", "target.url: required"},
		{base + "target: {kind: nats, url: 'http://x:1', stream: S}\n", "target.url:"},
		{base + "target: {kind: nats, url: 'nats://x:1'}\n", "target.stream: required"},
		{base + "target: {kind: nats, url: 'nats://x:1', stream: S, subjectPrefix: 'a.*'}\n", "target.subjectPrefix:"},
		{base + "target: {kind: nats, url: 'nats://x:1', stream: S, duplicateWindow: 48h}\n", "target.duplicateWindow:"},
		{base + "target: {kind: nats, url: 'nats://x:1', stream: S, host: h}\n", "target.host:"},
		{base + "target: {kind: nats, url: 'nats://x:1', stream: S, password: p, passwordFile: /f}\n", "target.passwordFile:"},
		{base + "target: {host: b, user: u, stream: S}\n", "target.stream: only with kind nats"},
		{base + "target: {kind: pulsar, host: b, user: u}\n", `target.kind: "pulsar": want mysql, nats or kafka`},
	} {
		_, err := ParseSpec([]byte(tc.doc))
		if err == nil || !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.doc, err, tc.want)
		}
	}
}

// kafkaYAML is the example Kafka task of docs/replication.md.
const kafkaYAML = `
name: orders_to_kafka
source: {host: db1.example, port: 3306, user: repl, passwordFile: /etc/shepherd/db1.pw, flavor: mariadb}
target:
  kind: kafka
  brokers: [kafka1.example:9093, kafka2.example:9093]
  topicPrefix: cdc.shop
  format: debezium
  checkpointTopic: shepherd_checkpoints
  saslMechanism: SCRAM-SHA-512
  user: shepherd
  password: s3cret
  tls: {caFile: /etc/shepherd/kafka-ca.pem}
filter:
  include: [shop.*]
`

func TestKafkaTargetSpec(t *testing.T) {
	sp, err := ParseSpec([]byte(kafkaYAML))
	if err != nil {
		t.Fatal(err)
	}
	tg := sp.Target
	if !tg.IsKafka() || tg.IsMySQL() || len(tg.Brokers) != 2 || tg.TopicPrefix != "cdc.shop" || tg.TLS == nil || tg.TLS.CAFile != "/etc/shepherd/kafka-ca.pem" || tg.Port != 0 || tg.Flavor != "" {
		t.Errorf("parsed target %+v", tg)
	}
	back, err := decodeStoredSpec(sp.Name, sp.Marshal())
	if err != nil || string(back.Marshal()) != string(sp.Marshal()) {
		t.Errorf("stored form does not round-trip (%v):\n%s", err, sp.Marshal())
	}
	if r := sp.Redacted(); r.Target.Password != RedactedPassword || strings.Contains(string(r.Marshal()), "s3cret") {
		t.Errorf("Redacted keeps the target's password: %s", r.Marshal())
	}
	if txt := tg.KafkaText(); strings.Contains(txt, "s3cret") || !strings.Contains(txt, "kafka1.example:9093") || !strings.Contains(txt, "SCRAM-SHA-512 user shepherd") {
		t.Errorf("KafkaText() = %q", txt)
	}
	noFile := *sp
	noFile.Source.PasswordFile = ""
	cfg, err := replicationConfig(t.Context(), &noFile, nil)
	if err != nil || cfg.Sink == nil || !strings.Contains(cfg.Sink.String(), "cdc.shop.<db>.<table>") || strings.Contains(cfg.Sink.String(), "s3cret") {
		t.Errorf("replication config: sink %v (%v)", cfg.Sink, err)
	}

	base := "name: t1\nsource: {host: a, user: u}\n"
	for _, tc := range []struct{ doc, want string }{
		{base + "target: {kind: kafka}\n", "target.brokers: required"},
		{base + "target: {kind: kafka, brokers: [k]}\n", "target.brokers:"},
		{base + "target: {kind: kafka, brokers: ['k:1'], host: h}\n", "target.host:"},
		{base + "target: {kind: kafka, brokers: ['k:1'], stream: S}\n", "target.stream: only with kind nats"},
		{base + "target: {kind: nats, url: 'nats://x:1', stream: S, brokers: ['k:1']}\n", "target.brokers: only with kind kafka"},
		{base + "target: {host: b, user: u, format: canal}\n", "target.format: only with kind kafka"},
		{base + "target: {kind: kafka, brokers: ['k:1'], format: avro}\n", "target.format:"},
		{base + "target: {kind: kafka, brokers: ['k:1'], topicMode: single}\n", "target.topic: required"},
		{base + "target: {kind: kafka, brokers: ['k:1'], topicPrefix: 'a b'}\n", "target.topicPrefix:"},
		{base + "target: {kind: kafka, brokers: ['k:1'], saslMechanism: GSSAPI, user: u, password: p}\n", "target.saslMechanism:"},
		{base + "target: {kind: kafka, brokers: ['k:1'], saslMechanism: PLAIN, user: u}\n", "target.password: required"},
		{base + "target: {kind: kafka, brokers: ['k:1'], user: u, password: p}\n", "target.saslMechanism: required"},
		{base + "target: {kind: kafka, brokers: ['k:1'], saslMechanism: PLAIN, user: u, password: p, passwordFile: /f}\n", "target.passwordFile:"},
		{base + "target: {kind: kafka, brokers: ['k:1'], tls: {certFile: c.pem}}\n", "target.tls.certFile:"},
		{base + "target: {kind: kafka, brokers: ['k:1'], transactionTimeout: 1h}\n", "target.transactionTimeout:"},
	} {
		_, err := ParseSpec([]byte(tc.doc))
		if err == nil || !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.doc, err, tc.want)
		}
	}
	// A password file stands for the password.
	withFile := base + "target: {kind: kafka, brokers: ['k:1'], saslMechanism: PLAIN, user: u, passwordFile: /f}\n"
	if _, err := ParseSpec([]byte(withFile)); err != nil {
		t.Errorf("a kafka target with SASL and a password file: %v", err)
	}
}

func TestSnapshotSpec(t *testing.T) {
	doc := "name: t1\nsource: {host: a, user: u, flavor: mariadb}\ntarget: {host: b, user: u}\nstart: snapshot\nsnapshot: {threads: 1, chunkRows: 500, maxRowsPerSecond: 10000}\n"
	sp, err := ParseSpec([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeStoredSpec(sp.Name, sp.Marshal())
	if err != nil || back.Snapshot != sp.Snapshot {
		t.Fatalf("stored form does not round-trip (%v):\n%s", err, sp.Marshal())
	}
	cfg, err := replicationConfig(t.Context(), sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Snapshot; !s.Enabled || s.Threads != 1 || s.ChunkRows != 500 || s.MaxRowsPerSecond != 10000 {
		t.Errorf("replication snapshot config = %+v", s)
	}
	plain, err := ParseSpec([]byte(goodYAML))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain.Marshal()), "snapshot") {
		t.Errorf("a spec without a snapshot stores one:\n%s", plain.Marshal())
	}
}

// TestVerifySpec: verify: {every, chunkRows} parses, stores and reads
// back; a spec without it stores none.
func TestVerifySpec(t *testing.T) {
	doc := "name: t1\nsource: {host: a, user: u, flavor: mariadb}\ntarget: {host: b, user: u}\nverify: {every: 6h, chunkRows: 500}\n"
	sp, err := ParseSpec([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Verify.Every.D() != 6*time.Hour || sp.Verify.ChunkRows != 500 {
		t.Fatalf("verify = %+v", sp.Verify)
	}
	back, err := decodeStoredSpec(sp.Name, sp.Marshal())
	if err != nil || back.Verify != sp.Verify {
		t.Fatalf("stored form does not round-trip (%v):\n%s", err, sp.Marshal())
	}
	plain, err := ParseSpec([]byte("name: t1\nsource: {host: a, user: u}\ntarget: {host: b, user: u}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain.Marshal()), "verify") {
		t.Errorf("a spec without verify stores %s", plain.Marshal())
	}
}
