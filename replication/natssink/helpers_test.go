package natssink

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
	"github.com/shepherd-dev/shepherd/replication"
)

// The tests share one MariaDB source, logging column names
// (binlog_row_metadata=FULL) as this sink needs, started by TestMain;
// each test starts its own nats-server and replicates databases of its
// own.

var shared struct {
	source *testpeer.MariaDB
	err    error
}

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	var dir string
	if _, ok := testpeer.MariaDBAvailable(); ok {
		var err error
		if dir, err = os.MkdirTemp("", "natssink-test-"); err != nil {
			shared.err = err
		} else {
			shared.source, shared.err = testpeer.LaunchMariaDB(dir, testpeer.MariaDBOptions{
				ExtraArgs: []string{"--binlog-row-metadata=FULL", "--default-time-zone=+05:30"},
			})
		}
	}
	code := m.Run()
	if shared.source != nil {
		shared.source.Close()
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// peers returns the shared source and a new nats-server, or ends the
// test when either is unavailable (a skip, or a failure under
// SHEPHERD_IT=1).
func peers(t *testing.T) (*testpeer.MariaDB, *testpeer.NATS) {
	t.Helper()
	why, ok := testpeer.MariaDBAvailable()
	testpeer.Require(t, "MariaDB", ok, why)
	if shared.err != nil || shared.source == nil {
		t.Fatalf("shared MariaDB source did not start: %v", shared.err)
	}
	return shared.source, testpeer.StartNATS(t)
}

// taskName is a task name unique to the test.
func taskName(t testing.TB) string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
}

// natsConfig is the sink of the tests: stream CDC, prefix cdc.
func natsConfig(n *testpeer.NATS) Config {
	return Config{URL: n.URL(), Stream: "CDC", SubjectPrefix: "cdc"}
}

func replicationConfig(t testing.TB, source *testpeer.MariaDB, sink Config, dbs ...string) replication.Config {
	return replication.Config{
		Task:            taskName(t),
		Source:          replication.Endpoint{Host: source.Host(), Port: source.Port(), User: "root"},
		Include:         dbs,
		Sink:            New(sink),
		HeartbeatPeriod: 200 * time.Millisecond,
		MaxBackoff:      500 * time.Millisecond,
		Logger:          coordtest.Logger(t),
	}
}

func open(t testing.TB, cfg replication.Config) *replication.Replicator {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := replication.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func currentPosition(t testing.TB, r *replication.Replicator) replication.Position {
	t.Helper()
	p, err := r.ResolveStart(context.Background(), "current")
	if err != nil {
		t.Fatalf("ResolveStart(current): %v", err)
	}
	return p
}

// bgRun is a Run in the background.
type bgRun struct {
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	last   replication.Progress
	states map[replication.State]int
}

func startRun(t testing.TB, r *replication.Replicator, from replication.Position, epoch int64, owner string) *bgRun {
	ctx, cancel := context.WithCancel(context.Background())
	rn := &bgRun{cancel: cancel, done: make(chan error, 1), states: map[replication.State]int{}}
	go func() {
		rn.done <- r.Run(ctx, from, epoch, owner, func(p replication.Progress) {
			rn.mu.Lock()
			defer rn.mu.Unlock()
			rn.last = p
			rn.states[p.State]++
		})
	}()
	t.Cleanup(func() { rn.stop() })
	return rn
}

func (rn *bgRun) stop() error {
	rn.cancel()
	select {
	case err := <-rn.done:
		rn.done <- err
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	case <-time.After(30 * time.Second):
		return errors.New("Run did not return within 30s of cancel")
	}
}

func (rn *bgRun) saw(s replication.State) bool {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.states[s] > 0
}

// waitCaughtUp waits until the checkpoint covers every transaction the
// source has logged so far.
func waitCaughtUp(t testing.TB, r *replication.Replicator, source *testpeer.MariaDB, rn *bgRun) {
	t.Helper()
	var want string
	if err := source.DB(t).QueryRow("SELECT @@gtid_binlog_pos").Scan(&want); err != nil {
		t.Fatalf("read source gtid_binlog_pos: %v", err)
	}
	coordtest.WaitFor(t, 60*time.Second, "checkpoint catching up with source GTID "+want, func() error {
		if rn != nil {
			select {
			case err := <-rn.done:
				rn.done <- err
				return fmt.Errorf("Run returned: %w", err)
			default:
			}
		}
		cp, ok, err := r.TargetCheckpoint(context.Background())
		if err != nil || !ok {
			return fmt.Errorf("checkpoint %v, %v", ok, err)
		}
		if c, ok := replication.ComparePositions(replication.FlavorMariaDB, replication.Position{GTID: cp.Position.GTID}, replication.Position{GTID: want}); !ok || c < 0 {
			return fmt.Errorf("checkpoint at %s", cp.Position)
		}
		return nil
	})
}

// waitCommits waits until the checkpoint has been seen moving moves
// times.
func waitCommits(t testing.TB, r *replication.Replicator, moves int) {
	t.Helper()
	var last replication.Position
	seen := -1
	coordtest.WaitFor(t, 30*time.Second, "checkpoint moving", func() error {
		cp, _, err := r.TargetCheckpoint(context.Background())
		if err != nil {
			return err
		}
		if cp.Position != last {
			seen++
			last = cp.Position
		}
		if seen < moves {
			return fmt.Errorf("checkpoint seen moving %d times, at %s", seen, last)
		}
		return nil
	})
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

// sqlConn is one connection to db, for statements that must share a
// session (SET timestamp).
func sqlConn(t testing.TB, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dropDB drops a database on the source now and when the test ends.
func dropDB(t testing.TB, source *testpeer.MariaDB, db string) {
	drop := func() { source.DB(t).Exec("DROP DATABASE IF EXISTS " + db) }
	drop()
	t.Cleanup(drop)
}
