package bench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWriteTable(t *testing.T) {
	rows := []Row{
		{Target: "zookeeper", Result: Result{Workload: "get", Ops: 1000, OpsPerSec: 10000, P50: 500 * time.Microsecond,
			P99: 4 * time.Millisecond, CPUPerOp: 30 * time.Microsecond, RSSBytes: 200 << 20}},
		{Target: "shepherd", Result: Result{Workload: "get", Ops: 2000, OpsPerSec: 20000, P50: 250 * time.Microsecond,
			P99: 1 * time.Millisecond, CPUPerOp: 10 * time.Microsecond, RSSBytes: 20 << 20}},
		{Target: "zookeeper", Result: Result{Workload: "tree200k", Ops: 5, OpsPerSec: 5, P50: 2 * time.Second,
			P99: 3 * time.Second, Extra: map[string]string{"restart": "3s", "znodes": "5"}}},
		{Target: "shepherd", Result: Result{Workload: "tree200k", Ops: 5, OpsPerSec: 5, P50: 2 * time.Second,
			P99: 3 * time.Second, Extra: map[string]string{"restart": "1.5s", "znodes": "5"}}},
		{Target: "zookeeper", Result: Result{Workload: "lock"}, Err: errors.New("bench: lock:\nserver | gone")},
	}
	var b strings.Builder
	if err := WriteTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	want := `| workload | target    | ops/s | p50   | p99    | CPU µs/op | RSS       | extra                              | × baseline                                          |
| -------- | --------- | ----- | ----- | ------ | --------- | --------- | ---------------------------------- | --------------------------------------------------- |
| get      | zookeeper | 10000 | 500µs | 4.00ms | 30.0      | 200.0 MiB |                                    | baseline                                            |
| get      | shepherd  | 20000 | 250µs | 1.00ms | 10.0      | 20.0 MiB  |                                    | ops/s 2.00, p50 2.00, p99 4.00, cpu 3.00, rss 10.00 |
| tree200k | zookeeper | 5     | 2.00s | 3.00s  | —         | —         | restart=3s znodes=5                | baseline                                            |
| tree200k | shepherd  | 5     | 2.00s | 3.00s  | —         | —         | restart=1.5s znodes=5              | ops/s 1.00, p50 1.00, p99 1.00, restart 2.00        |
| lock     | zookeeper | —     | —     | —      | —         | —         | error: bench: lock: server \| gone |                                                     |

- get: getData of 1024 existing znodes; one op = getData; p50/p99 = one getData.
- tree200k: create 200k znodes (Ops); RSS holding them; SIGKILL, start, time until the last reads back; one op = create; p50/p99 = one create.
- lock: Clients contenders take and release a herd-free lock (ephemeral-sequential, watch the predecessor); one op = acquire+release; p50/p99 = hand-off, release until the next holder knows it holds.
`
	if got != want {
		t.Errorf("WriteTable wrote\n%s\nwant\n%s", got, want)
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "—"},
		{1500 * time.Nanosecond, "2µs"},
		{999 * time.Microsecond, "999µs"},
		{1234 * time.Microsecond, "1.23ms"},
		{12345 * time.Microsecond, "12.3ms"},
		{1500 * time.Millisecond, "1.50s"},
	}
	for _, tt := range tests {
		if got := formatDuration(tt.d); got != tt.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
