package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shepherd-dev/shepherd/internal/sinktest"
)

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
			r := sinktest.BenchSink(b, New(kafkaConfig(startKafka(b), format)), batch)
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
		cpu0, t0 := sinktest.CPUSeconds(), time.Now()
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
		sinktest.Report(b, b.N, time.Since(t0), sinktest.CPUSeconds()-cpu0)
		b.Logf("records of %d bytes, keys of %d", len(value), len(key))
	})
}
