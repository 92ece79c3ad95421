package bench

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// numKeys is how many znodes set, get, exists and mixed spread their
// requests over: enough that workers rarely collide on one znode, few
// enough to create in a blink.
const numKeys = 1024

func (e *env) key(i int) string { return fmt.Sprintf("%s/k%04d", e.root, i) }

// measure runs the measured closed loop of a rate workload.
func (e *env) measure(ctx context.Context, op func(w *worker) error) (Result, error) {
	return closedLoop(ctx, e, "measuring", true, e.o.Ops, e.o.Duration, op)
}

// withKeys creates the numKeys znodes, then measures op.
func withKeys(ctx context.Context, e *env, op func(w *worker, key string) error) (Result, error) {
	if err := e.createAll(ctx, "creating keys", numKeys, e.key); err != nil {
		return Result{}, err
	}
	return e.measure(ctx, func(w *worker) error { return op(w, e.key(w.rng.IntN(numKeys))) })
}

// worker bucket znodes keep any one parent's child list short (a flat
// directory of every create would outgrow a getChildren response).
func (e *env) bucket(id int) string { return fmt.Sprintf("%s/w%03d", e.root, id) }

func (e *env) createBuckets(ctx context.Context) error {
	return e.createAll(ctx, "creating buckets", e.o.Clients*e.o.InFlight, e.bucket)
}

func runCreate(ctx context.Context, e *env) (Result, error) {
	if err := e.createBuckets(ctx); err != nil {
		return Result{}, err
	}
	return e.measure(ctx, func(w *worker) error {
		_, err := w.conn.Create(fmt.Sprintf("%s/n%09d", e.bucket(w.id), w.seq), e.value, 0, openACL)
		return err
	})
}

func runSet(ctx context.Context, e *env) (Result, error) {
	return withKeys(ctx, e, func(w *worker, key string) error {
		_, err := w.conn.Set(key, e.value, -1)
		return err
	})
}

func runGet(ctx context.Context, e *env) (Result, error) {
	return withKeys(ctx, e, func(w *worker, key string) error {
		_, _, err := w.conn.Get(key)
		return err
	})
}

func runExists(ctx context.Context, e *env) (Result, error) {
	return withKeys(ctx, e, func(w *worker, key string) error {
		ok, _, err := w.conn.Exists(key)
		if err == nil && !ok {
			err = fmt.Errorf("exists %s: %w", key, zk.ErrNoNode)
		}
		return err
	})
}

func runMixed(ctx context.Context, e *env) (Result, error) {
	return withKeys(ctx, e, func(w *worker, key string) error {
		if w.rng.IntN(10) == 0 {
			_, err := w.conn.Set(key, e.value, -1)
			return err
		}
		_, _, err := w.conn.Get(key)
		return err
	})
}

func runEphemeralSeq(ctx context.Context, e *env) (Result, error) {
	prefix := e.root + "/e-"
	return e.measure(ctx, func(w *worker) error {
		p, err := w.conn.Create(prefix, e.value, zk.FlagEphemeralSequential, openACL)
		if err != nil {
			return err
		}
		return w.conn.Delete(p, -1)
	})
}

// runMulti issues transactions that leave the tree as they found it, so
// its size stays constant however long the run.
func runMulti(ctx context.Context, e *env) (Result, error) {
	if err := e.createBuckets(ctx); err != nil {
		return Result{}, err
	}
	return e.measure(ctx, func(w *worker) error {
		parent := e.bucket(w.id)
		child := parent + "/x"
		_, err := w.conn.Multi(
			&zk.CreateRequest{Path: child, Data: e.value, Acl: openACL},
			&zk.SetDataRequest{Path: parent, Data: e.value, Version: -1},
			&zk.DeleteRequest{Path: child, Version: -1},
		)
		return err
	})
}
