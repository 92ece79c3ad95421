package dns

import (
	"context"
	"errors"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// watchSet sets at most one watch of each kind per node, and calls a
// function when one fires: a reader re-reading a node whose watch is
// outstanding reads it without setting another, so watches never pile
// up on a node that is read often. A nil watchSet sets no watch (Admin's
// one-off reads). Each outstanding watch has one goroutine, which ends
// when the watch fires (a lost session fires every watch) or the set is
// stopped; stop waits for them.
type watchSet struct {
	mu          sync.Mutex
	outstanding map[string]bool // "c:" or "d:" + path
	markDomain  func(n Name, provider string)
	markNames   func()
	done        chan struct{}
	wg          sync.WaitGroup
}

func newWatchSet(markDomain func(Name, string), markNames func()) *watchSet {
	return &watchSet{outstanding: map[string]bool{}, markDomain: markDomain, markNames: markNames, done: make(chan struct{})}
}

// claim reports whether a watch on key should be set, and records it.
func (w *watchSet) claim(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.outstanding[key] {
		return false
	}
	w.outstanding[key] = true
	return true
}

// release forgets key, claimed and then not set (the read failed).
func (w *watchSet) release(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.outstanding, key)
}

// follow waits for ch in a goroutine of the set and calls fired.
func (w *watchSet) follow(key string, ch <-chan zk.Event, fired func()) {
	w.wg.Go(func() {
		select {
		case <-ch:
		case <-w.done:
			return
		}
		w.release(key)
		fired()
	})
}

// stop ends the goroutines of the outstanding watches and waits for them.
func (w *watchSet) stop() {
	close(w.done)
	w.wg.Wait()
}

// children lists the children of p; with a watch set, it leaves a watch on
// them (on p's creation if p does not exist: no children then).
func (w *watchSet) children(ctx context.Context, s *recipe.Session, p string, fired func()) ([]string, error) {
	key := "c:" + p
	if w == nil || !w.claim(key) {
		names, _, err := s.Retrying().Children(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		return names, err
	}
	for {
		names, _, ch, err := s.Retrying().ChildrenW(ctx, p)
		if err == nil {
			w.follow(key, ch, fired)
			return names, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			w.release(key)
			return nil, err
		}
		ok, _, ch, err := s.Retrying().ExistsW(ctx, p)
		if err != nil {
			w.release(key)
			return nil, err
		}
		if !ok {
			w.follow(key, ch, fired)
			return nil, nil
		}
		// Created meanwhile; the exists watch fires on its next change
		// and is harmless.
	}
}

// get reads p's data; with a watch set, it leaves a watch on it.
func (w *watchSet) get(ctx context.Context, s *recipe.Session, p string, fired func()) ([]byte, *zk.Stat, error) {
	key := "d:" + p
	if w == nil || !w.claim(key) {
		return s.Retrying().Get(ctx, p)
	}
	data, st, ch, err := s.Retrying().GetW(ctx, p)
	if err != nil {
		w.release(key)
		return nil, nil, err
	}
	w.follow(key, ch, fired)
	return data, st, nil
}
