package kafkasink

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/replication"
)

// TestSnapshotRefused: the Kafka sink does not copy tables yet; a task
// with start: snapshot is refused at Open and by its dry run, for good.
func TestSnapshotRefused(t *testing.T) {
	s := New(Config{Brokers: []string{"127.0.0.1:1"}})
	env := replication.SinkEnv{Task: "t", Snapshot: true}
	if _, err := s.Open(context.Background(), env); !errors.Is(err, replication.ErrSnapshotUnsupported) || !errors.Is(err, replication.ErrNonRetryable) {
		t.Errorf("Open = %v, want ErrSnapshotUnsupported (non-retryable)", err)
	}
	checks := s.DryRun(context.Background(), env)
	if len(checks) != 1 || checks[0].OK || !strings.Contains(checks[0].Detail, "snapshot") {
		t.Errorf("DryRun = %+v, want one failed snapshot check", checks)
	}
}
