package scheduler

import (
	"strings"
	"testing"
	"time"
)

func decidePlan(t *testing.T) *plan {
	t.Helper()
	p, err := compile(Job{Name: "j", Schedule: "@daily", Command: "true", Retries: 2,
		RetryBackoff: Duration(time.Second), StartingDeadline: Duration(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDecideStart: before its first attempt a run is missed when later
// than the starting deadline (never a manual one) or started only to be
// recorded; a run whose masters died is taken over, and abandoned once
// they died MaxTakeovers times past the first.
func TestDecideStart(t *testing.T) {
	p := decidePlan(t)
	at := time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		key        string
		late       time.Duration
		missedOnly bool
		a          attempts
		want       startVerdict
		errHas     string
	}{
		{"on time", "2026-11-25", 10 * time.Second, false, attempts{}, startVerdict{policy: true}, ""},
		{"late", "2026-11-25", 2 * time.Minute, false, attempts{}, startVerdict{status: Missed}, "not started within 1m0s of its scheduled time (2m0s late)"},
		{"manual never late", ManualPrefix + "x", time.Hour, false, attempts{}, startVerdict{policy: true}, ""},
		{"missed only", "2026-11-25", 0, true, attempts{}, startVerdict{status: Missed}, "only the latest missed run"},
		{"takeover", "2026-11-25", time.Hour, false, attempts{Attempts: 2, Failures: 1}, startVerdict{takeover: true}, ""},
		{"abandoned", "2026-11-25", 0, false, attempts{Attempts: 1 + MaxTakeovers + 1, Failures: 1}, startVerdict{status: Abandoned, takeover: true}, "died 4 times"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decideStart(p, strings.HasPrefix(tc.key, ManualPrefix), at, at.Add(tc.late), tc.missedOnly, tc.a)
			if !strings.Contains(got.err, tc.errHas) {
				t.Errorf("err %q, want it to contain %q", got.err, tc.errHas)
			}
			got.err = ""
			if got != tc.want {
				t.Errorf("decideStart = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestDecideAfterAttempt: a run ends on success, on replacement or when
// its retries are spent; otherwise it is retried after a backoff that
// doubles from retryBackoff.
func TestDecideAfterAttempt(t *testing.T) {
	p := decidePlan(t)
	for _, tc := range []struct {
		status   Status
		failures int
		publish  bool
		backoff  time.Duration
	}{
		{Succeeded, 0, true, 0},
		{Replaced, 0, true, 0},
		{Failed, 0, false, time.Second},
		{Failed, 1, false, 2 * time.Second},
		{Failed, 2, true, 0},
		{TimedOut, 1, false, 2 * time.Second},
	} {
		publish, backoff := decideAfterAttempt(p, tc.status, tc.failures)
		if publish != tc.publish || backoff != tc.backoff {
			t.Errorf("decideAfterAttempt(%s, %d failures) = %v, %v; want %v, %v", tc.status, tc.failures, publish, backoff, tc.publish, tc.backoff)
		}
	}
}
