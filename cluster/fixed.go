package cluster

import (
	"context"
	"errors"
)

// ErrNoSnapshot is Fixed.Read's error before a snapshot is set.
var ErrNoSnapshot = errors.New("cluster: no snapshot set")

// Fixed is a Reader and Feed serving the snapshot a test set: the double
// of a live cluster for the tests of the console and the monitor, as
// hashicorp/raft ships its in-memory transport.
type Fixed struct {
	feed
}

// NewFixed returns a Fixed serving s (nil: none yet).
func NewFixed(s *Snapshot) *Fixed {
	f := &Fixed{}
	if s != nil {
		f.publish(s)
	}
	return f
}

// Set replaces the snapshot and notifies subscribers.
func (f *Fixed) Set(s *Snapshot) { f.publish(s) }

// Read returns the snapshot set last, or ErrNoSnapshot.
func (f *Fixed) Read(ctx context.Context) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s := f.Latest(); s != nil {
		return s, nil
	}
	return nil, ErrNoSnapshot
}
