package coordtest

import (
	"testing"
	"time"
)

// WaitFor polls cond every 10ms until it returns nil, failing the test
// with what and cond's last error if d passes first (NATS's checkFor). d
// is a liveness bound, never a timing assertion.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %v: %v", what, d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
