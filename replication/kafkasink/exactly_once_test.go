package kafkasink

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/crashload"
	"github.com/shepherd-dev/shepherd/internal/sinktest"
	"github.com/shepherd-dev/shepherd/replication"
	"github.com/shepherd-dev/shepherd/replication/changeevent"
)

// helperEnv, when set, makes the test binary a replicator process
// producing to Kafka: it holds a JSON helperSpec, and TestMain runs
// helperMain instead of the tests. The crash test SIGKILLs it mid-load.
const helperEnv = "SHEPHERD_KAFKASINK_HELPER"

// settle claims the task with a newer epoch and lets go: its producer
// aborts what a killed writer left open, so that every transaction on
// the topics is decided when the test reads them.
func settle(t *testing.T, cfg Config, task string, epoch int64) {
	t.Helper()
	s := openSink(t, cfg, task, 1)
	r, _, err := s.Claim(t.Context(), epoch, "settle")
	if err != nil {
		t.Fatalf("settling claim: %v", err)
	}
	r.Close()
}

// checkExactlyOnce reads the topics as a read_committed consumer and
// checks that the load's txns transactions are each there once: by
// content (no event twice), and by meaning — the log table's inserts
// carry every transaction number 1..txns once, the counter's updates
// every value 1..txns once.
func checkExactlyOnce(t *testing.T, brokers []string, db string, txns int) {
	t.Helper()
	events := readTopics(t, brokers, "cdc.")
	contents := map[string]string{}
	logTxns, counts := map[int]int{}, map[int]int{}
	for _, e := range events {
		at := fmt.Sprintf("%s/%d@%d", e.Topic, e.Partition, e.Offset)
		if prev, dup := contents[e.Value]; dup {
			t.Errorf("the same event seen twice: %s and %s: %s", prev, at, e.Value)
		}
		contents[e.Value] = at
		if e.Env.Source.DB != db {
			continue
		}
		switch {
		case e.Env.Source.Table == "log" && e.Env.Op == changeevent.OpCreate:
			logTxns[int(e.Env.After["txn"].(float64))]++
		case e.Env.Source.Table == "counter" && e.Env.Op == changeevent.OpUpdate:
			counts[int(e.Env.After["n"].(float64))]++
		}
	}
	for i := 1; i <= txns; i++ {
		if logTxns[i] != 1 || counts[i] != 1 {
			t.Errorf("transaction %d: its log insert is seen %d times, its counter update %d times; want once each", i, logTxns[i], counts[i])
		}
	}
	if len(logTxns) != txns || len(counts) != txns {
		t.Errorf("consumers see %d log inserts and %d counter updates, want %d each", len(logTxns), len(counts), txns)
	}
	t.Logf("%d transactions, %d events, each once", txns, len(events))
}

// TestExactlyOnceAcrossCrashes crashes the replicator again and again
// while the source is written — cancelling Run in process, and SIGKILL
// of a child process running it — and checks that a read_committed
// consumer sees every change exactly once.
func TestExactlyOnceAcrossCrashes(t *testing.T) {
	for _, mode := range []string{"cancel", "sigkill"} {
		t.Run(mode, func(t *testing.T) {
			source, k := peers(t)
			db := "ks_crash_" + mode
			sinktest.DropDB(t, source, db)
			kc := kafkaConfig(k, FormatDebezium)
			cfg := replicationConfig(t, source, kc, db)
			cfg.BatchRows = 50 // many commits, so crashes land between and inside them
			r := sinktest.Open(t, cfg)
			from := sinktest.CurrentPosition(t, r)
			crashload.CreateTables(t, source, db)

			var c crashload.Crasher
			switch mode {
			case "cancel":
				c = &sinktest.InProcess{R: r, From: from}
			case "sigkill":
				out, err := os.CreateTemp(t.TempDir(), "helper-*.log")
				if err != nil {
					t.Fatal(err)
				}
				c = &crashload.Subprocess{Env: helperEnv, Out: out, Spec: sinktest.ChildSpec[Config]{Task: cfg.Task, Source: cfg.Source, Include: cfg.Include,
					BatchRows: cfg.BatchRows, Sink: kc, From: from, Epoch: 1, Owner: "child"}}
			}
			load := crashload.Start(t, source, db, 1500)
			c.Start(t)
			for range 6 {
				sinktest.WaitCommits(t, r, 3)
				c.Crash(t)
				c.Start(t)
			}
			txns := load.Finish(t)
			sinktest.WaitCaughtUp(t, r, source, nil)
			c.Crash(t)
			settle(t, kc, cfg.Task, 2)
			checkExactlyOnce(t, kc.Brokers, db, txns)
		})
	}
}

// outage makes the cluster refuse every request (closing the
// connection it came on) until it is ended.
type outage struct {
	c   *kfake.Cluster
	on  atomic.Bool
	hit atomic.Int64
}

func startOutage(c *kfake.Cluster) *outage {
	o := &outage{c: c}
	o.on.Store(true)
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		if !o.on.Load() {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		o.hit.Add(1)
		return nil, errors.New("outage"), true
	})
	return o
}

func (o *outage) end() { o.on.Store(false) }

// TestKafkaOutageMidStream cuts the cluster off while the source is
// written and the replicator produces, until the task reports retrying,
// then restores it, and checks that the task caught up and lost or
// repeated nothing.
func TestKafkaOutageMidStream(t *testing.T) {
	source, k := peers(t)
	db := "ks_outage"
	sinktest.DropDB(t, source, db)
	kc := kafkaConfig(k, FormatDebezium)
	cfg := replicationConfig(t, source, kc, db)
	cfg.BatchRows = 50
	r := sinktest.Open(t, cfg)
	from := sinktest.CurrentPosition(t, r)
	crashload.CreateTables(t, source, db)
	load := crashload.Start(t, source, db, 1000)
	rn := sinktest.StartRun(t, r, from, 1, "outage")
	sinktest.WaitCommits(t, r, 3)
	o := startOutage(k)
	coordtest.WaitFor(t, 60*time.Second, "Run reporting the outage as a retry", func() error {
		if !rn.Saw(replication.StateRetrying) {
			return errors.New("no retrying state reported yet")
		}
		return nil
	})
	o.end()
	t.Logf("the cluster refused %d requests", o.hit.Load())
	txns := load.Finish(t)
	sinktest.WaitCaughtUp(t, r, source, rn)
	if err := rn.Stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkExactlyOnce(t, kc.Brokers, db, txns)
}

// TestFencedOwnerUnderLoad starts a second owner with a newer epoch
// while the first produces under load: the first stops with ErrFenced,
// cannot claim the task again, and consumers see every change once.
func TestFencedOwnerUnderLoad(t *testing.T) {
	source, k := peers(t)
	db := "ks_fence"
	sinktest.DropDB(t, source, db)
	kc := kafkaConfig(k, FormatDebezium)
	cfg := replicationConfig(t, source, kc, db)
	cfg.BatchRows = 20
	r1 := sinktest.Open(t, cfg)
	from := sinktest.CurrentPosition(t, r1)
	crashload.CreateTables(t, source, db)
	load := crashload.Start(t, source, db, 500)
	old := sinktest.StartRun(t, r1, from, 1, "old")
	sinktest.WaitCommits(t, r1, 2)

	r2 := sinktest.Open(t, cfg)
	newer := sinktest.StartRun(t, r2, from, 2, "new")
	coordtest.WaitFor(t, 60*time.Second, "the older owner fenced", func() error {
		done, err := old.Returned()
		if !done {
			return errors.New("still running")
		}
		if !errors.Is(err, replication.ErrFenced) {
			t.Fatalf("the older owner's Run returned %v, want ErrFenced", err)
		}
		return nil
	})
	if err := r1.Run(t.Context(), from, 1, "old", nil); !errors.Is(err, replication.ErrFenced) {
		t.Fatalf("a Run of epoch 1 after epoch 2 claimed returned %v, want ErrFenced", err)
	}
	txns := load.Finish(t)
	sinktest.WaitCaughtUp(t, r2, source, newer)
	if err := newer.Stop(); err != nil {
		t.Fatalf("Run of epoch 2: %v", err)
	}
	if cp, _, err := r2.TargetCheckpoint(t.Context()); err != nil || cp.Epoch != 2 || cp.Owner != "new" {
		t.Fatalf("checkpoint %+v (%v), want epoch 2 of owner new", cp, err)
	}
	checkExactlyOnce(t, kc.Brokers, db, txns)
}
