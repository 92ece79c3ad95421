package cluster

import (
	"context"
	"errors"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Watcher is a Reader that can tell when what it reads may have changed.
// A Poller re-reads at once when the channel receives.
type Watcher interface {
	Watch(ctx context.Context) (<-chan struct{}, error)
}

// watchSet keeps one watch armed per path: a path whose watch has not
// fired is not watched again, so that paths that never change do not
// pile up watches (the client keeps every one until it fires).
type watchSet struct {
	s     *recipe.Session
	paths []string
	fired chan struct{} // buffered 1: one pending notice is enough

	mu    sync.Mutex
	armed map[string]bool
}

func newWatchSet(s *recipe.Session, paths []string) *watchSet {
	return &watchSet{s: s, paths: paths, fired: make(chan struct{}, 1), armed: map[string]bool{}}
}

// arm watches the children of each path not watched yet, or its
// creation if it does not exist. A watch's goroutine ends when it fires
// or ctx ends.
func (w *watchSet) arm(ctx context.Context) (<-chan struct{}, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.paths {
		if w.armed[p] {
			continue
		}
		var ch <-chan zk.Event
		err := w.s.Retry(ctx, func() (err error) {
			_, _, ch, err = w.s.ChildrenW(ctx, p)
			if errors.Is(err, zk.ErrNoNode) {
				_, _, ch, err = w.s.ExistsW(ctx, p)
			}
			return err
		})
		if err != nil {
			return w.fired, err
		}
		w.armed[p] = true
		go func() {
			select {
			case <-ch:
			case <-ctx.Done():
			}
			w.mu.Lock()
			w.armed[p] = false
			w.mu.Unlock()
			select {
			case w.fired <- struct{}{}:
			default:
			}
		}()
	}
	return w.fired, nil
}
