package kafkasink

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	binlog "github.com/go-mysql-org/go-mysql/replication"
	"github.com/shopspring/decimal"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/replication"
)

// benchMap is shop.orders with the columns of a typical order row: id
// BIGINT key, customer INT, status VARCHAR, total DECIMAL(10,2), placed
// DATETIME, note VARCHAR.
var benchMap = &binlog.TableMapEvent{
	Schema: []byte("shop"), Table: []byte("orders"), ColumnCount: 6,
	ColumnType: []byte{gomysql.MYSQL_TYPE_LONGLONG, gomysql.MYSQL_TYPE_LONG, gomysql.MYSQL_TYPE_VARCHAR,
		gomysql.MYSQL_TYPE_NEWDECIMAL, gomysql.MYSQL_TYPE_DATETIME2, gomysql.MYSQL_TYPE_VARCHAR},
	ColumnMeta:       []uint16{0, 0, 80, 10<<8 | 2, 0, 400},
	ColumnName:       [][]byte{[]byte("id"), []byte("customer"), []byte("status"), []byte("total"), []byte("placed"), []byte("note")},
	SignednessBitmap: []byte{0}, DefaultCharset: []uint64{45}, PrimaryKey: []uint64{0},
}

// benchSegments are n source transactions of two updates of an order
// each.
func benchSegments(n int) []replication.Segment {
	segs := make([]replication.Segment, n)
	at := replication.Position{File: "mysql-bin.000001", Pos: 4, Server: "mariadb:1"}
	placed := time.Date(2026, 11, 22, 6, 3, 17, 0, time.UTC)
	for i := range segs {
		end := replication.Position{File: at.File, Pos: at.Pos + 300, Server: at.Server, GTID: fmt.Sprintf("0-1-%d", i+1)}
		row := func(id int, status string) []any {
			return []any{int64(id), int32(id % 977), status, decimal.New(int64(1990+id%500), -2), placed, "deliver to the back door, ring twice"}
		}
		segs[i] = replication.Segment{Start: at, End: end, Last: true, Rows: 2, TS: 1764000000, GTID: end.GTID,
			Changes: []replication.Change{{DB: "shop", Table: "orders", Kind: replication.ChangeUpdate, TableMap: benchMap,
				Rows: [][]any{row(2*i, "new"), row(2*i, "paid"), row(2*i+1, "new"), row(2*i+1, "paid")}}}}
		at = end
	}
	return segs
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkKafkaSink produces b.N row events through the sink — rendered
// in each format, committed with the checkpoint every 1,000 rows in a
// Kafka transaction — and, for comparison, the same number of records of
// the same sizes, keys spread over the partitions and the same headers,
// produced raw by franz-go (idempotent, not transactional, flushed every
// 1,000). The cluster is kfake, in process:
// its CPU counts in CPU-s/Mevents, which is the whole process's.
//
//	go test -run '^$' -bench BenchmarkKafkaSink -benchtime 200000x ./replication/kafkasink/
func BenchmarkKafkaSink(b *testing.B) {
	const batch = 1000
	sizes := map[string][]int{}
	for _, format := range []string{FormatDebezium, FormatCanal, FormatMaxwell} {
		b.Run("sink/"+format, func(b *testing.B) {
			c := startKafka(b)
			cfg := kafkaConfig(c, format)
			env := replication.SinkEnv{Task: "bench", Log: coordtest.Logger(b), BatchRows: batch}
			s, err := New(cfg).Open(b.Context(), env)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			r, _, err := s.Claim(b.Context(), 1, "bench")
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			r.Begin(replication.Position{}, replication.History{}, func(replication.Position, string, uint32, int, int) {})
			segs := benchSegments(b.N/2 + 1)
			b.ResetTimer()
			cpu0, t0 := cpuSeconds(), time.Now()
			for i := range segs[:b.N/2] {
				if err := r.Write(b.Context(), segs[i]); err != nil {
					b.Fatal(err)
				}
				if err := r.Flush(b.Context(), i+1 < b.N/2); err != nil {
					b.Fatal(err)
				}
			}
			report(b, b.N/2*2, time.Since(t0), cpuSeconds()-cpu0)
			sizes[format] = []int{len(r.(*run).buf), len(r.(*run).key)}
		})
	}
	b.Run("raw", func(b *testing.B) {
		value, key := make([]byte, 700), []byte(`{"id":123456}`)
		if sz := sizes[FormatDebezium]; len(sz) == 2 {
			value, key = make([]byte, sz[0]), make([]byte, sz[1])
		}
		c := startKafka(b)
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.MaxBufferedRecords(maxBuffered), kgo.ProducerLinger(0))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		ctx := context.Background()
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, -1, -1, nil, "raw.shop.orders"); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		cpu0, t0 := cpuSeconds(), time.Now()
		headers := []kgo.RecordHeader{{Key: HeaderTask, Value: []byte("bench")}, {Key: HeaderServer, Value: []byte("mariadb:1")},
			{Key: HeaderFile, Value: []byte("mysql-bin.000001")}, {Key: HeaderPos, Value: []byte("123456")},
			{Key: HeaderGTID, Value: []byte("0-1-12345")}, {Key: HeaderTSMS, Value: []byte("1764000000000")}, {Key: HeaderRow, Value: []byte("1")}}
		for i := range b.N {
			k := append([]byte(nil), key...)
			k[len(k)-2] = byte('0' + i%10) // keys spread over the partitions as the sink's do
			k[len(k)-3] = byte('0' + i/10%10)
			cl.Produce(ctx, &kgo.Record{Topic: "raw.shop.orders", Key: k, Value: value, Headers: headers}, func(_ *kgo.Record, err error) {
				if err != nil {
					b.Error(err)
				}
			})
			if (i+1)%batch == 0 || i+1 == b.N {
				if err := cl.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b, b.N, time.Since(t0), cpuSeconds()-cpu0)
		b.Logf("records of %d bytes, keys of %d", len(value), len(key))
	})
}

func report(b *testing.B, events int, wall time.Duration, cpu float64) {
	b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
	b.ReportMetric(cpu/float64(events)*1e6, "CPU-s/Mevents")
	b.ReportMetric(0, "ns/op")
}
