package coord

import (
	"slices"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/tree"
)

func TestSyncerGathersWaitingBatchesUpToASnapshot(t *testing.T) {
	y := &syncer{in: make(chan *batch, 4)}
	b1, b2, b3, b4 := &batch{}, &batch{}, &batch{snapshot: &tree.Frozen{}}, &batch{}
	y.in <- b2
	y.in <- b3
	y.in <- b4
	got := y.gather([]*batch{b1})
	if !slices.Equal(got, []*batch{b1, b2, b3}) {
		t.Fatalf("gather = %p, want b1 %p b2 %p b3 %p: everything waiting up to and including the snapshot batch", got, b1, b2, b3)
	}
	// b4 comes after the snapshot: it starts the next group, alone.
	next := <-y.in
	if got := y.gather([]*batch{next}); !slices.Equal(got, []*batch{b4}) {
		t.Errorf("next gather = %p, want only b4 %p", got, b4)
	}
}

func TestSyncerGatherStopsAtClosedQueue(t *testing.T) {
	y := &syncer{in: make(chan *batch, 2)}
	b1, b2 := &batch{}, &batch{}
	y.in <- b2
	close(y.in)
	if got := y.gather([]*batch{b1}); !slices.Equal(got, []*batch{b1, b2}) {
		t.Errorf("gather = %p, want b1 %p and b2 %p", got, b1, b2)
	}
}
