package dns

import (
	"testing"
	"time"
)

// TestJudge: the scanner's decision, on a clock the test sets.
func TestJudge(t *testing.T) {
	hb := AddressStatus{Mode: "heartbeat", TTL: 5 * time.Second, Healthy: true}
	marked := hb
	marked.Healthy, marked.Unhealthy = false, &Mark{Reason: "old"}
	checked := AddressStatus{Mode: "session", Healthy: true, Check: &Check{Kind: "tcp"}}
	for _, tc := range []struct {
		what    string
		a       AddressStatus
		hbAge   time.Duration
		settled bool
		fails   int
		healthy bool
	}{
		{"heartbeat 4.9s old", hb, 4900 * time.Millisecond, true, 0, true},
		{"heartbeat exactly ttl old", hb, 5 * time.Second, true, 0, true},
		{"heartbeat 5.1s old", hb, 5100 * time.Millisecond, true, 0, false},
		{"no heartbeat yet", hb, -1, true, 0, false},
		{"5.1s old, scanner not settled: unchanged (healthy)", hb, 5100 * time.Millisecond, false, 0, true},
		{"5.1s old, scanner not settled: unchanged (unhealthy)", marked, 5100 * time.Millisecond, false, 0, false},
		{"marked, heartbeat again", marked, time.Second, false, 0, true},
		{"session-held, no check", AddressStatus{Mode: "session", Healthy: true}, -1, true, 0, true},
		{"check failed once", checked, 0, true, 1, true},
		{"check failed twice", checked, 0, true, 2, false},
		{"check failed twice, not settled: acted on", checked, 0, false, 2, false},
	} {
		v := judge(tc.a, tc.hbAge, tc.settled, tc.fails, 2)
		if v.healthy != tc.healthy {
			t.Errorf("%s: healthy %v (%q); want %v", tc.what, v.healthy, v.reason, tc.healthy)
		}
		if !v.healthy && v.reason == "" {
			t.Errorf("%s: unhealthy without a reason", tc.what)
		}
	}
}
