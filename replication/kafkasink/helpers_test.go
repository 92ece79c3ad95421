package kafkasink

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/sinktest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
	"github.com/shepherd-dev/shepherd/replication"
)

// The tests share one MariaDB source, logging column names
// (binlog_row_metadata=FULL) as this sink needs, started by TestMain;
// each test starts its own in-process Kafka cluster (kfake, which speaks
// the Kafka protocol, transactions included) and replicates databases of
// its own.

var shared *sinktest.Source

func TestMain(m *testing.M) {
	// Fail a request or a record after seconds, not a minute, so that a
	// broker outage shows as a retry while the test waits for it.
	retryTimeout, deliveryTimeout = 2*time.Second, 3*time.Second
	if os.Getenv(helperEnv) != "" {
		os.Exit(sinktest.ChildMain(helperEnv, func(c Config) replication.Sink { return New(c) }))
	}
	shared = sinktest.LaunchSource("kafkasink-test-")
	code := m.Run()
	shared.Close()
	os.Exit(code)
}

// startKafka starts a three-broker cluster on loopback ports, closed
// when the test ends.
func startKafka(t testing.TB) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatalf("start kfake cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// peers returns the shared source and a new Kafka cluster, or ends the
// test when MariaDB is unavailable (a skip, or a failure under
// SHEPHERD_IT=1).
func peers(t *testing.T) (*testpeer.MariaDB, *kfake.Cluster) {
	t.Helper()
	return shared.Get(t), startKafka(t)
}

// kafkaConfig is the sink of the tests: topics cdc.<db>.<table>.
func kafkaConfig(c *kfake.Cluster, format string) Config {
	return Config{Brokers: c.ListenAddrs(), TopicPrefix: "cdc", Format: format}
}

func replicationConfig(t testing.TB, source *testpeer.MariaDB, sink Config, dbs ...string) replication.Config {
	return sinktest.Config(t, source, New(sink), dbs...)
}

// event is one record as a read_committed consumer gets it, its
// Debezium envelope decoded when it is one.
type event struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       string
	Value     string
	Headers   map[string]string
	Env       struct {
		Before map[string]any `json:"before"`
		After  map[string]any `json:"after"`
		Op     string         `json:"op"`
		TSMS   int64          `json:"ts_ms"`
		DDL    string         `json:"ddl"`
		Source struct {
			Server string `json:"server"`
			DB     string `json:"db"`
			Table  string `json:"table"`
			File   string `json:"file"`
			Pos    uint32 `json:"pos"`
			GTID   string `json:"gtid"`
			Row    int    `json:"row"`
		} `json:"source"`
	}
}

// readTopics reads every committed record of the topics starting with
// prefix, as a consumer in read_committed isolation does, topic by
// topic and partition by partition in offset order. Every transaction
// must be decided (committed or aborted): the test stops or fences the
// writers first.
func readTopics(t testing.TB, brokers []string, prefix string) []event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	var topics []string
	for _, name := range listed.Names() {
		if strings.HasPrefix(name, prefix) {
			topics = append(topics, name)
		}
	}
	slices.Sort(topics)
	if len(topics) == 0 {
		return nil
	}
	// The end of each partition: its last stable offset, which must be
	// its high watermark (no transaction open).
	want := map[string]map[int32]int64{}
	coordtest.WaitFor(t, 30*time.Second, "every transaction on "+prefix+"* decided", func() error {
		lso, err := adm.ListCommittedOffsets(ctx, topics...)
		if err != nil {
			return err
		}
		hwm, err := adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return err
		}
		want = map[string]map[int32]int64{}
		var open []string
		lso.Each(func(o kadm.ListedOffset) {
			h, _ := hwm.Lookup(o.Topic, o.Partition)
			if o.Offset != h.Offset {
				open = append(open, o.Topic)
			}
			if o.Offset > 0 {
				if want[o.Topic] == nil {
					want[o.Topic] = map[int32]int64{}
				}
				want[o.Topic][o.Partition] = o.Offset
			}
		})
		if len(open) > 0 {
			return fmt.Errorf("transactions still open on %v", open)
		}
		return nil
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]map[int32][]event{}
	left := 0
	for _, ps := range want {
		left += len(ps)
	}
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %v: %d partitions not read to their end (%v)", topics, left, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			end := want[r.Topic][r.Partition]
			if r.Offset == end-1 {
				left--
			}
			if r.Attrs.IsControl() {
				return
			}
			e := event{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value), Headers: map[string]string{}}
			for _, h := range r.Headers {
				e.Headers[h.Key] = string(h.Value)
			}
			if err := json.Unmarshal(r.Value, &e.Env); err != nil {
				t.Fatalf("record %s/%d@%d is not JSON: %v\n%s", r.Topic, r.Partition, r.Offset, err, r.Value)
			}
			if got[r.Topic] == nil {
				got[r.Topic] = map[int32][]event{}
			}
			got[r.Topic][r.Partition] = append(got[r.Topic][r.Partition], e)
		})
	}
	var out []event
	for _, topic := range topics {
		parts := got[topic]
		keys := make([]int32, 0, len(parts))
		for p := range parts {
			keys = append(keys, p)
		}
		slices.Sort(keys)
		for _, p := range keys {
			out = append(out, parts[p]...)
		}
	}
	return out
}
