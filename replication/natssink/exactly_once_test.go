package natssink

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	binlog "github.com/go-mysql-org/go-mysql/replication"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/crashload"
	"github.com/shepherd-dev/shepherd/internal/sinktest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
	"github.com/shepherd-dev/shepherd/replication"
	"github.com/shepherd-dev/shepherd/replication/changeevent"
)

// helperEnv, when set, makes the test binary a replicator process
// publishing to NATS: it holds a JSON helperSpec, and TestMain runs
// helperMain instead of the tests. The crash test SIGKILLs it mid-load.
const helperEnv = "SHEPHERD_NATSSINK_HELPER"

// checkExactlyOnce reads the stream and checks that the load's txns
// transactions are each there once: by message id (no id twice), by
// content (no envelope twice), and by meaning — the log table's inserts
// carry every transaction number 1..txns once, the counter's updates
// every value 1..txns once.
func checkExactlyOnce(t *testing.T, url, stream, db string, txns int) {
	t.Helper()
	events := readStream(t, url, stream)
	ids, contents := map[string]uint64{}, map[string]uint64{}
	logTxns, counts := map[int]int{}, map[int]int{}
	for _, e := range events {
		if e.ID == "" {
			t.Fatalf("message %d on %s has no Nats-Msg-Id", e.Seq, e.Subject)
		}
		if prev, dup := ids[e.ID]; dup {
			t.Errorf("message id %s stored twice: sequences %d and %d", e.ID, prev, e.Seq)
		}
		ids[e.ID] = e.Seq
		if prev, dup := contents[e.Data]; dup {
			t.Errorf("the same event stored twice: sequences %d and %d: %s", prev, e.Seq, e.Data)
		}
		contents[e.Data] = e.Seq
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
			t.Errorf("transaction %d: its log insert is in the stream %d times, its counter update %d times; want once each", i, logTxns[i], counts[i])
		}
	}
	if len(logTxns) != txns || len(counts) != txns {
		t.Errorf("the stream has %d log inserts and %d counter updates, want %d each", len(logTxns), len(counts), txns)
	}
	t.Logf("%d transactions, %d events, each once", txns, len(events))
}

// TestExactlyOnceAcrossCrashes crashes the replicator again and again
// while the source is written — cancelling Run in process, and SIGKILL
// of a child process running it — and checks that a consumer of the
// stream sees every change exactly once.
func TestExactlyOnceAcrossCrashes(t *testing.T) {
	for _, mode := range []string{"cancel", "sigkill"} {
		t.Run(mode, func(t *testing.T) {
			source, n := peers(t)
			db := "ns_crash_" + mode
			sinktest.DropDB(t, source, db)
			nc := natsConfig(n)
			cfg := replicationConfig(t, source, nc, db)
			cfg.BatchRows = 50 // many checkpoints, so crashes land between and inside batches
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
					BatchRows: cfg.BatchRows, Sink: nc, From: from, Epoch: 1, Owner: "child"}}
			}
			load := crashload.Start(t, source, db, 1500)
			dupsBefore := Duplicates()
			c.Start(t)
			for range 6 {
				sinktest.WaitCommits(t, r, 3)
				c.Crash(t)
				c.Start(t)
			}
			txns := load.Finish(t)
			sinktest.WaitCaughtUp(t, r, source, nil)
			c.Crash(t)
			if mode == "cancel" {
				// Evidence that the crashes landed between a publish and its
				// checkpoint (not asserted: a cancel may find the batch
				// committed).
				t.Logf("JetStream dropped %d re-sent messages", Duplicates()-dupsBefore)
			}
			checkExactlyOnce(t, n.URL(), "CDC", db, txns)
		})
	}
}

// TestNATSRestartMidStream stops the NATS server while the source is
// written and the replicator publishes, starts it again, and checks that
// the task retried, caught up, and lost or repeated nothing.
func TestNATSRestartMidStream(t *testing.T) {
	source, n := peers(t)
	db := "ns_outage"
	sinktest.DropDB(t, source, db)
	cfg := replicationConfig(t, source, natsConfig(n), db)
	cfg.BatchRows = 50
	r := sinktest.Open(t, cfg)
	from := sinktest.CurrentPosition(t, r)
	crashload.CreateTables(t, source, db)
	load := crashload.Start(t, source, db, 1000)
	rn := sinktest.StartRun(t, r, from, 1, "outage")
	sinktest.WaitCommits(t, r, 3)
	n.Stop()
	coordtest.WaitFor(t, 30*time.Second, "Run reporting the outage as a retry", func() error {
		if !rn.Saw(replication.StateRetrying) {
			return errors.New("no retrying state reported yet")
		}
		return nil
	})
	n.Start(t)
	txns := load.Finish(t)
	sinktest.WaitCaughtUp(t, r, source, rn)
	if err := rn.Stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkExactlyOnce(t, n.URL(), "CDC", db, txns)
}

// TestFencedOwnerCannotMoveCheckpoint starts a second owner with a newer
// epoch while the first publishes under load: the first stops with
// ErrFenced at its next checkpoint, cannot claim the task again, and the
// stream still holds every change once.
func TestFencedOwnerCannotMoveCheckpoint(t *testing.T) {
	source, n := peers(t)
	db := "ns_fence"
	sinktest.DropDB(t, source, db)
	cfg := replicationConfig(t, source, natsConfig(n), db)
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
	cp, _, err := r2.TargetCheckpoint(t.Context())
	if err != nil || cp.Epoch != 2 || cp.Owner != "new" {
		t.Fatalf("checkpoint %+v (%v), want epoch 2 of owner new", cp, err)
	}
	// Epoch 1 can no longer claim, and so cannot move the checkpoint.
	if err := r1.Run(t.Context(), from, 1, "old", nil); !errors.Is(err, replication.ErrFenced) {
		t.Fatalf("a Run of epoch 1 after epoch 2 claimed returned %v, want ErrFenced", err)
	}
	if after, _, _ := r2.TargetCheckpoint(t.Context()); after.Epoch != 2 || after.Owner != "new" {
		t.Fatalf("checkpoint after the refused claim: %+v, want epoch 2 of owner new", after)
	}

	// At the sink itself: a run whose epoch was overtaken between two
	// checkpoints fails its compare-and-set, and the entry keeps the
	// newer owner's epoch.
	env := replication.SinkEnv{Task: cfg.Task + "_direct", Log: coordtest.Logger(t), BatchRows: 1}
	direct, err := New(natsConfig(n)).Open(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	stale, _, err := direct.Claim(t.Context(), 5, "five")
	if err != nil {
		t.Fatal(err)
	}
	stale.Begin(replication.Position{}, replication.History{}, func(replication.Position, string, uint32, int, int) {})
	if _, _, err := direct.Claim(t.Context(), 7, "seven"); err != nil {
		t.Fatal(err)
	}
	end := replication.Position{File: "mysql-bin.000001", Pos: 4242, Server: "mariadb:1"}
	if err := stale.Write(t.Context(), replication.Segment{End: end, Last: true}); err != nil {
		t.Fatal(err)
	}
	if err := stale.Flush(t.Context(), false); !errors.Is(err, replication.ErrFenced) {
		t.Errorf("the overtaken run's checkpoint: %v, want ErrFenced", err)
	}
	if cp, _, err := direct.Checkpoint(t.Context()); err != nil || cp.Epoch != 7 || cp.Owner != "seven" || cp.Position == end {
		t.Errorf("checkpoint %+v (%v): want epoch 7 of seven, not moved to %s", cp, err, end)
	}
	if _, _, err := direct.Claim(t.Context(), 6, "six"); !errors.Is(err, replication.ErrFenced) {
		t.Errorf("a claim of epoch 6 after 7: %v, want ErrFenced", err)
	}

	txns := load.Finish(t)
	sinktest.WaitCaughtUp(t, r2, source, newer)
	if err := newer.Stop(); err != nil {
		t.Fatalf("Run of epoch 2: %v", err)
	}
	checkExactlyOnce(t, n.URL(), "CDC", db, txns)
}

// TestDryRun checks a target without creating anything: a fresh server
// passes (the stream and bucket would be created), a stream whose
// duplicate window is shorter than the task's fails, naming both.
func TestDryRun(t *testing.T) {
	n := testpeer.StartNATS(t)
	env := replication.SinkEnv{Task: "dry", Log: coordtest.Logger(t)}
	checks := New(natsConfig(n)).DryRun(t.Context(), env)
	for _, c := range checks {
		if !c.OK {
			t.Errorf("check %s failed on a fresh server: %s", c.Name, c.Detail)
		}
	}
	if len(checks) != 4 {
		t.Errorf("checks %+v, want connect, JetStream, stream, bucket", checks)
	}
	// Nothing was created.
	short := natsConfig(n)
	short.Stream, short.DuplicateWindow = "SHORT", 5*time.Minute
	opened, err := New(Config{URL: n.URL(), Stream: "SHORT", SubjectPrefix: "short", DuplicateWindow: time.Minute}).Open(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	opened.Close()
	var failed []string
	for _, c := range New(short).DryRun(t.Context(), env) {
		if !c.OK {
			failed = append(failed, c.Name+": "+c.Detail)
		}
	}
	if all := strings.Join(failed, "\n"); len(failed) != 1 || !strings.Contains(all, "target.duplicateWindow") || !strings.Contains(all, "target.subjectPrefix") {
		t.Errorf("a stream with a 1m window for a 5m task, and other subjects: failed checks %q, want the stream's subjects and window named", failed)
	}
	if bad := New(Config{URL: "nats://127.0.0.1:1", Stream: "X"}).DryRun(t.Context(), env); len(bad) != 1 || bad[0].OK {
		t.Errorf("an unreachable server: %+v", bad)
	}
}

// TestResendAfterCrashIsDropped is the exactly-once argument step by
// step, at the sink: a run publishes a batch, JetStream acknowledges it,
// and the run dies before its checkpoint; the next run claims the task,
// re-publishes the same transactions from the checkpoint with the same
// ids, and JetStream drops every one of them. The stream holds each event
// once, and the checkpoint moved once.
func TestResendAfterCrashIsDropped(t *testing.T) {
	n := testpeer.StartNATS(t)
	env := replication.SinkEnv{Task: "resend", Log: coordtest.Logger(t), BatchRows: 1000}
	sink, err := New(natsConfig(n)).Open(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	tm := &binlog.TableMapEvent{
		Schema: []byte("shop"), Table: []byte("orders"), ColumnCount: 2,
		ColumnType: []byte{gomysql.MYSQL_TYPE_LONG, gomysql.MYSQL_TYPE_VARCHAR}, ColumnMeta: []uint16{0, 160},
		ColumnName: [][]byte{[]byte("id"), []byte("note")}, SignednessBitmap: []byte{0}, DefaultCharset: []uint64{45},
	}
	var segs []replication.Segment
	at := replication.Position{File: "mysql-bin.000001", Pos: 4, Server: "mariadb:1", GTID: "0-1-0"}
	for i := 1; i <= 20; i++ {
		end := replication.Position{File: at.File, Pos: at.Pos + 100, Server: at.Server, GTID: fmt.Sprintf("0-1-%d", i)}
		segs = append(segs, replication.Segment{Start: at, End: end, Last: true, Rows: 2, TS: 1764000000, GTID: end.GTID,
			Changes: []replication.Change{{DB: "shop", Table: "orders", Kind: replication.ChangeInsert, TableMap: tm,
				Rows: [][]any{{int32(2 * i), "a"}, {int32(2*i + 1), "b"}}}}})
		at = end
	}
	commits := 0
	onCommit := func(replication.Position, string, uint32, int, int) { commits++ }

	first, _, err := sink.Claim(t.Context(), 1, "first")
	if err != nil {
		t.Fatal(err)
	}
	first.Begin(segs[0].Start, replication.History{}, onCommit)
	for _, s := range segs {
		if err := first.Write(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	// Every message acknowledged (stored), then the run dies: no checkpoint.
	if err := first.(*run).waitAcks(t.Context(), len(first.(*run).futures)); err != nil {
		t.Fatal(err)
	}
	first.Close()
	if cp, ok, err := sink.Checkpoint(t.Context()); err != nil || ok {
		t.Fatalf("checkpoint after the crash: %+v %v %v, want none", cp, ok, err)
	}

	dups := Duplicates()
	second, cp, err := sink.Claim(t.Context(), 2, "second")
	if err != nil {
		t.Fatal(err)
	}
	if !cp.Position.IsZero() {
		t.Fatalf("claimed checkpoint %+v, want none", cp)
	}
	second.Begin(segs[0].Start, replication.History{}, onCommit)
	for _, s := range segs {
		if err := second.Write(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	if err := second.Flush(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	second.Close()
	if got := Duplicates() - dups; got != 40 {
		t.Errorf("JetStream dropped %d re-sent messages, want all 40", got)
	}
	if c, ok, err := sink.Checkpoint(t.Context()); err != nil || !ok || c.Position != at || c.Epoch != 2 || commits != 1 {
		t.Errorf("checkpoint %+v %v %v after %d commits; want %s of epoch 2 after 1", c, ok, err, commits, at)
	}
	events := readStream(t, n.URL(), "CDC")
	if len(events) != 40 {
		t.Fatalf("the stream holds %d events, want 40", len(events))
	}
	for i, e := range events {
		if id := e.Env.After["id"].(float64); int(id) != i+2 || e.Subject != "cdc.shop.orders" {
			t.Errorf("event %d: id %v on %s, want %d on cdc.shop.orders, in order", i, id, e.Subject, i+2)
		}
	}
}
