package kafkasink

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	binlog "github.com/go-mysql-org/go-mysql/replication"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/replication"
)

// ordersMap is the table map of shop.orders (id INT PRIMARY KEY, note
// VARCHAR(40)) as a source logging column names writes it.
var ordersMap = &binlog.TableMapEvent{
	Schema: []byte("shop"), Table: []byte("orders"), ColumnCount: 2,
	ColumnType: []byte{gomysql.MYSQL_TYPE_LONG, gomysql.MYSQL_TYPE_VARCHAR}, ColumnMeta: []uint16{0, 160},
	ColumnName: [][]byte{[]byte("id"), []byte("note")}, SignednessBitmap: []byte{0}, DefaultCharset: []uint64{45},
	PrimaryKey: []uint64{0},
}

// orderTxns are n source transactions, each inserting two orders.
func orderTxns(n int) []replication.Segment {
	var segs []replication.Segment
	at := replication.Position{File: "mysql-bin.000001", Pos: 4, Server: "mariadb:1", GTID: "0-1-0"}
	for i := 1; i <= n; i++ {
		end := replication.Position{File: at.File, Pos: at.Pos + 100, Server: at.Server, GTID: fmt.Sprintf("0-1-%d", i)}
		segs = append(segs, replication.Segment{Start: at, End: end, Last: true, Rows: 2, TS: 1764000000, GTID: end.GTID,
			Changes: []replication.Change{{DB: "shop", Table: "orders", Kind: replication.ChangeInsert, TableMap: ordersMap,
				Rows: [][]any{{int32(2 * i), "a"}, {int32(2*i + 1), "b"}}}}})
		at = end
	}
	return segs
}

func openSink(t *testing.T, cfg Config, task string, batchRows int) replication.OpenSink {
	t.Helper()
	env := replication.SinkEnv{Task: task, Log: coordtest.Logger(t), BatchRows: batchRows}
	s, err := New(cfg).Open(t.Context(), env)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func claim(t *testing.T, s replication.OpenSink, epoch int64, owner string, onCommit func(replication.Position, string, uint32, int, int)) replication.SinkRun {
	t.Helper()
	r, _, err := s.Claim(t.Context(), epoch, owner)
	if err != nil {
		t.Fatalf("Claim(%d, %s): %v", epoch, owner, err)
	}
	if onCommit == nil {
		onCommit = func(replication.Position, string, uint32, int, int) {}
	}
	r.Begin(replication.Position{}, replication.History{}, onCommit)
	return r
}

func writeAll(t *testing.T, r replication.SinkRun, segs []replication.Segment) {
	t.Helper()
	for _, s := range segs {
		if err := r.Write(t.Context(), s); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
}

// TestResendAfterCrashIsNotSeen is the exactly-once argument step by
// step, at the sink: a run produces a batch, every record stored by the
// brokers, and dies before its commit; the next run claims the task
// (its producer aborting the dead one's transaction), produces the same
// transactions again from the checkpoint and commits them with it. A
// read_committed consumer sees each event once, in order, and the
// checkpoint moved once.
func TestResendAfterCrashIsNotSeen(t *testing.T) {
	c := startKafka(t)
	cfg := kafkaConfig(c, FormatDebezium)
	sink := openSink(t, cfg, "resend", 1000)
	segs := orderTxns(20)
	at := segs[len(segs)-1].End
	commits := 0
	onCommit := func(replication.Position, string, uint32, int, int) { commits++ }

	first := claim(t, sink, 1, "first", onCommit)
	writeAll(t, first, segs)
	if err := first.(*run).p.Flush(t.Context()); err != nil { // stored, not committed
		t.Fatal(err)
	}
	// The run dies here: no Close, its transaction left open.
	if cp, ok, err := sink.Checkpoint(t.Context()); err != nil || ok {
		t.Fatalf("checkpoint after the crash: %+v %v %v, want none", cp, ok, err)
	}

	second := claim(t, sink, 2, "second", onCommit)
	writeAll(t, second, segs)
	if err := second.Flush(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	second.Close()
	first.Close()
	if c, ok, err := sink.Checkpoint(t.Context()); err != nil || !ok || c.Position != at || c.Epoch != 2 || commits != 1 {
		t.Errorf("checkpoint %+v %v %v after %d commits; want %s of epoch 2 after 1", c, ok, err, commits, at)
	}
	events := readTopics(t, cfg.Brokers, "cdc.")
	if len(events) != 40 {
		t.Fatalf("consumers see %d events, want 40", len(events))
	}
	seen := map[int]bool{}
	last := map[int32]int{} // the last id seen in each partition: a key's events are in order
	for i, e := range events {
		id := int(e.Env.After["id"].(float64))
		if seen[id] || e.Topic != "cdc.shop.orders" || e.Key != fmt.Sprintf(`{"id":%d}`, id) || id < last[e.Partition] {
			t.Errorf("event %d: id %v on %s partition %d with key %s: want ids 2..41 once each on cdc.shop.orders, keyed by id, in order in their partition", i, id, e.Topic, e.Partition, e.Key)
		}
		seen[id], last[e.Partition] = true, id
		if e.Headers[HeaderGTID] != e.Env.Source.GTID || e.Headers[HeaderServer] != "mariadb:1" || e.Headers[HeaderTSMS] != "1764000000000" {
			t.Errorf("event %d: headers %v do not carry its source facts", i, e.Headers)
		}
	}
}

// TestFencing: a claim of an older epoch than the stored one fails with
// ErrFenced; a run overtaken by a newer claim (a zombie owner) cannot
// commit, and consumers never see what it produced; an older claim that
// fences the newer owner's producer before failing only makes that
// owner claim again.
func TestFencing(t *testing.T) {
	c := startKafka(t)
	cfg := kafkaConfig(c, FormatDebezium)
	sink := openSink(t, cfg, "fence", 1)
	segs := orderTxns(3)

	zombie := claim(t, sink, 5, "five", nil)
	writeAll(t, zombie, segs[:1])
	newer := claim(t, sink, 7, "seven", nil)
	writeAll(t, zombie, segs[1:2])
	if err := zombie.Flush(t.Context(), false); !errors.Is(err, replication.ErrFenced) {
		t.Errorf("the overtaken run's commit: %v, want ErrFenced", err)
	}
	zombie.Close()
	if cp, _, err := sink.Checkpoint(t.Context()); err != nil || cp.Epoch != 7 || cp.Owner != "seven" || !cp.Position.IsZero() {
		t.Errorf("checkpoint %+v (%v): want epoch 7 of seven, no position", cp, err)
	}
	if _, _, err := sink.Claim(t.Context(), 6, "six"); !errors.Is(err, replication.ErrFenced) {
		t.Errorf("a claim of epoch 6 after 7: %v, want ErrFenced", err)
	}

	// Epoch 6 was refused on the checkpoint it read, before it had a
	// producer. Had its read been older than epoch 7's claim, its
	// producer would have fenced 7's before it refused: 7's commit then
	// fails, not as fenced, and 7 claims again. A producer of the task's
	// transactional id started here does what that producer would.
	writeAll(t, newer, segs[:1])
	other, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	foreign := &target{cfg: other, env: replication.SinkEnv{Task: "fence"}}
	fp, err := foreign.producer()
	if err != nil {
		t.Fatal(err)
	}
	if err := fp.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := fp.ProduceSync(t.Context(), &kgo.Record{Topic: "cdc.shop.orders", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	abort(fp)
	fp.Close()
	err = newer.Flush(t.Context(), false)
	if err == nil || errors.Is(err, replication.ErrFenced) {
		t.Errorf("epoch 7's commit after another producer of its transactional id began: %v, want a retryable error", err)
	}
	newer.Close()
	again := claim(t, sink, 7, "seven", nil)
	writeAll(t, again, segs)
	if err := again.Flush(t.Context(), false); err != nil {
		t.Fatalf("epoch 7's commit after claiming again: %v", err)
	}
	again.Close()
	if cp, _, err := sink.Checkpoint(t.Context()); err != nil || cp.Epoch != 7 || cp.Position != segs[2].End {
		t.Errorf("checkpoint %+v (%v): want epoch 7 at %s", cp, err, segs[2].End)
	}
	if n, err := sink.ResetEpoch(t.Context()); err != nil || n != 7 {
		t.Errorf("ResetEpoch: %d, %v; want 7", n, err)
	}
	if cp, _, err := sink.Checkpoint(t.Context()); err != nil || cp.Epoch != 0 || cp.Position != segs[2].End {
		t.Errorf("checkpoint after ResetEpoch %+v (%v): want epoch 0 at %s", cp, err, segs[2].End)
	}
	events := readTopics(t, cfg.Brokers, "cdc.")
	if len(events) != 6 {
		t.Fatalf("consumers see %d events, want the 6 of epoch 7's commit only", len(events))
	}
}

// TestSourceTransactionNotSplit: a source transaction in several
// segments is committed whole, with the checkpoint at its end, however
// small the batch.
func TestSourceTransactionNotSplit(t *testing.T) {
	c := startKafka(t)
	cfg := kafkaConfig(c, FormatMaxwell)
	sink := openSink(t, cfg, "split", 1)
	segs := orderTxns(1)
	first, last := segs[0], segs[0]
	first.Last, first.End = false, replication.Position{}
	last.Changes = []replication.Change{{DB: "shop", Table: "orders", Kind: replication.ChangeInsert, TableMap: ordersMap,
		Rows: [][]any{{int32(4), "c"}, {int32(5), "d"}}}}
	r := claim(t, sink, 1, "one", nil)
	for _, s := range []replication.Segment{first, last} {
		if err := r.Write(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		if err := r.Flush(t.Context(), false); err != nil {
			t.Fatal(err)
		}
		cp, ok, err := sink.Checkpoint(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if s.Last != ok || ok && cp.Position != s.End {
			t.Errorf("after the segment with Last %v: checkpoint %+v (%v), want one at the end of the whole transaction only", s.Last, cp, ok)
		}
	}
	r.Close()
	events := readTopics(t, cfg.Brokers, "cdc.")
	if len(events) != 4 {
		t.Fatalf("%d events, want 4", len(events))
	}
	for _, e := range events {
		last := strings.Contains(e.Value, `"data":{"id":5,`)
		if strings.Contains(e.Value, `"commit":true`) != last || strings.Contains(e.Value, `"xoffset"`) == last {
			t.Errorf("%s: only the transaction's last row (id 5) has commit:true, the others an xoffset", e.Value)
		}
	}
}
