package sinktest

import (
	"fmt"
	"log/slog"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	binlog "github.com/go-mysql-org/go-mysql/replication"
	"github.com/shopspring/decimal"

	"github.com/shepherd-dev/shepherd/replication"
)

// The event sinks' benchmarks write the same pre-built source
// transactions and report the same figures, beside their broker's raw
// client publishing records of the same sizes.

// BenchMap is shop.orders with the columns of a typical order row: id
// BIGINT key, customer INT, status VARCHAR, total DECIMAL(10,2), placed
// DATETIME, note VARCHAR.
var BenchMap = &binlog.TableMapEvent{
	Schema: []byte("shop"), Table: []byte("orders"), ColumnCount: 6,
	ColumnType: []byte{gomysql.MYSQL_TYPE_LONGLONG, gomysql.MYSQL_TYPE_LONG, gomysql.MYSQL_TYPE_VARCHAR,
		gomysql.MYSQL_TYPE_NEWDECIMAL, gomysql.MYSQL_TYPE_DATETIME2, gomysql.MYSQL_TYPE_VARCHAR},
	ColumnMeta:       []uint16{0, 0, 80, 10<<8 | 2, 0, 400},
	ColumnName:       [][]byte{[]byte("id"), []byte("customer"), []byte("status"), []byte("total"), []byte("placed"), []byte("note")},
	SignednessBitmap: []byte{0}, DefaultCharset: []uint64{45}, PrimaryKey: []uint64{0},
}

// BenchSegments are n source transactions of two updates of an order
// each.
func BenchSegments(n int) []replication.Segment {
	segs := make([]replication.Segment, n)
	at := replication.Position{File: "mysql-bin.000001", Pos: 4, Server: "mariadb:1"}
	placed := time.Date(2026, 11, 22, 6, 3, 17, 0, time.UTC)
	for i := range segs {
		end := replication.Position{File: at.File, Pos: at.Pos + 300, Server: at.Server, GTID: fmt.Sprintf("0-1-%d", i+1)}
		row := func(id int, status string) []any {
			return []any{int64(id), int32(id % 977), status, decimal.New(int64(1990+id%500), -2), placed, "deliver to the back door, ring twice"}
		}
		segs[i] = replication.Segment{Start: at, End: end, Last: true, Rows: 2, TS: 1764000000, GTID: end.GTID,
			Changes: []replication.Change{{DB: "shop", Table: "orders", Kind: replication.ChangeUpdate, TableMap: BenchMap,
				Rows: [][]any{row(2*i, "new"), row(2*i, "paid"), row(2*i+1, "new"), row(2*i+1, "paid")}}}}
		at = end
	}
	return segs
}

// CPUSeconds is the process's user and system CPU time so far.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// Report reports events per second and CPU-seconds per million events
// (the whole process's CPU: an in-process broker's counts too).
func Report(b *testing.B, events int, wall time.Duration, cpu float64) {
	b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
	b.ReportMetric(cpu/float64(events)*1e6, "CPU-s/Mevents")
	b.ReportMetric(0, "ns/op")
}

// BenchSink drives sink as a task's Run would, without a source: it
// claims the task, writes b.N/2 of BenchSegments (b.N row events), a
// commit every batchRows rows, reports the figures, and returns the run
// for the caller to read its buffers.
func BenchSink(b *testing.B, sink replication.Sink, batchRows int) replication.SinkRun {
	b.Helper()
	env := replication.SinkEnv{Task: "bench", Log: slog.New(slog.DiscardHandler), BatchRows: batchRows}
	s, err := sink.Open(b.Context(), env)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	r, _, err := s.Claim(b.Context(), 1, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	r.Begin(replication.Position{}, replication.History{}, func(replication.Position, string, uint32, int, int) {})
	segs := BenchSegments(b.N/2 + 1)
	b.ResetTimer()
	cpu0, t0 := CPUSeconds(), time.Now()
	for i := range segs[:b.N/2] {
		if err := r.Write(b.Context(), segs[i]); err != nil {
			b.Fatal(err)
		}
		if err := r.Flush(b.Context(), i+1 < b.N/2); err != nil {
			b.Fatal(err)
		}
	}
	Report(b, b.N/2*2, time.Since(t0), CPUSeconds()-cpu0)
	return r
}
