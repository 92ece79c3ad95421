package natssink

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shepherd-dev/shepherd/internal/sinktest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// BenchmarkNATSSink publishes b.N row events through the sink — each
// with its message id, every one acknowledged, the checkpoint written to
// the key-value bucket every 1,000 rows — and, for comparison, as many
// messages of the same size with message ids, published raw by nats.go's
// JetStream client and acknowledged every 1,000. The server is a
// nats-server process of its own: CPU-s/Mevents is this process's, the
// core's part.
//
//	SHEPHERD_IT=1 go test -run '^$' -bench BenchmarkNATSSink -benchtime 200000x ./replication/natssink/
func BenchmarkNATSSink(b *testing.B) {
	const batch = 1000
	size := 700
	b.Run("sink", func(b *testing.B) {
		r := sinktest.BenchSink(b, New(natsConfig(testpeer.StartNATS(b))), batch)
		size = len(r.(*run).buf)
	})
	b.Run("raw", func(b *testing.B) {
		n := testpeer.StartNATS(b)
		nc, err := nats.Connect(n.URL())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		ctx := b.Context()
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}, Duplicates: DefaultDuplicateWindow}); err != nil {
			b.Fatal(err)
		}
		value := make([]byte, size)
		b.ResetTimer()
		cpu0, t0 := sinktest.CPUSeconds(), time.Now()
		futures := make([]jetstream.PubAckFuture, 0, batch)
		for i := range b.N {
			f, err := js.PublishMsgAsync(&nats.Msg{Subject: "raw.shop.orders", Data: value}, jetstream.WithMsgID(fmt.Sprintf("bench:0-1-%d:%d", i/2+1, i%2)))
			if err != nil {
				b.Fatal(err)
			}
			futures = append(futures, f)
			if len(futures) == batch || i+1 == b.N {
				for _, f := range futures {
					select {
					case <-f.Ok():
					case err := <-f.Err():
						b.Fatal(err)
					}
				}
				futures = futures[:0]
			}
		}
		sinktest.Report(b, b.N, time.Since(t0), sinktest.CPUSeconds()-cpu0)
		b.Logf("messages of %d bytes", len(value))
	})
}
