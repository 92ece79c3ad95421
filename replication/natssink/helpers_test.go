package natssink

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shepherd-dev/shepherd/internal/sinktest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
	"github.com/shepherd-dev/shepherd/replication"
)

// The tests share one MariaDB source, logging column names
// (binlog_row_metadata=FULL) as this sink needs, started by TestMain;
// each test starts its own nats-server and replicates databases of its
// own.

var shared *sinktest.Source

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(sinktest.ChildMain(helperEnv, func(c Config) replication.Sink { return New(c) }))
	}
	shared = sinktest.LaunchSource("natssink-test-")
	code := m.Run()
	shared.Close()
	os.Exit(code)
}

// peers returns the shared source and a new nats-server, or ends the
// test when either is unavailable (a skip, or a failure under
// SHEPHERD_IT=1).
func peers(t *testing.T) (*testpeer.MariaDB, *testpeer.NATS) {
	t.Helper()
	return shared.Get(t), testpeer.StartNATS(t)
}

// natsConfig is the sink of the tests: stream CDC, prefix cdc.
func natsConfig(n *testpeer.NATS) Config {
	return Config{URL: n.URL(), Stream: "CDC", SubjectPrefix: "cdc"}
}

func replicationConfig(t testing.TB, source *testpeer.MariaDB, sink Config, dbs ...string) replication.Config {
	return sinktest.Config(t, source, New(sink), dbs...)
}

// event is one message of the stream, its envelope decoded.
type event struct {
	Seq     uint64
	Subject string
	ID      string
	Data    string
	Env     struct {
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

// readStream reads every message the stream holds, in order, as a
// consumer would after JetStream's deduplication.
func readStream(t testing.TB, url, stream string) []event {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := info.State.Msgs
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []event
	for uint64(len(out)) < want {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatalf("fetch from %s: %v", stream, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			e := event{Seq: md.Sequence.Stream, Subject: m.Subject(), ID: m.Headers().Get(jetstream.MsgIDHeader), Data: string(m.Data())}
			if err := json.Unmarshal(m.Data(), &e.Env); err != nil {
				t.Fatalf("message %d on %s is not an envelope: %v\n%s", e.Seq, e.Subject, err, m.Data())
			}
			out = append(out, e)
		}
		if err := batch.Error(); err != nil {
			t.Fatalf("fetch from %s: %v", stream, err)
		}
		if n == 0 {
			t.Fatalf("stream %s holds %d messages but the consumer stopped after %d", stream, want, len(out))
		}
	}
	return out
}
