package bench

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/proto"
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

// measureOp runs the measured closed loop of a rate workload through the
// client Options.Client names: wire sends wire's requests, go-zookeeper
// makes gozk's calls.
func (e *env) measureOp(ctx context.Context, wire wireOp, gozk func(w *worker) error) (Result, error) {
	if e.o.Client == ClientWire {
		return wireLoop(ctx, e, e.o.Ops, e.o.Duration, wire)
	}
	return e.measure(ctx, gozk)
}

// withKeys creates the numKeys znodes, then measures a request on a random
// one of them: wire appends its body and returns its op code, gozk makes
// the call.
func withKeys(ctx context.Context, e *env, wire func(enc *proto.Encoder, key string, rng *rand.Rand) proto.OpCode, gozk func(w *worker, key string) error) (Result, error) {
	if err := e.createAll(ctx, "creating keys", numKeys, e.key); err != nil {
		return Result{}, err
	}
	keys := make([]string, numKeys)
	for i := range keys {
		keys[i] = e.key(i)
	}
	return e.measureOp(ctx, wireOp{request: func(enc *proto.Encoder, _ int, _ int64, rng *rand.Rand) proto.OpCode {
		return wire(enc, keys[rng.IntN(numKeys)], rng)
	}}, func(w *worker) error { return gozk(w, keys[w.rng.IntN(numKeys)]) })
}

// wireACL is openACL in the protocol's terms.
var wireACL = []proto.ACL{{Perms: proto.PermAll, Id: proto.Id{Scheme: "world", ID: "anyone"}}}

// worker bucket znodes keep any one parent's child list short (a flat
// directory of every create would outgrow a getChildren response).
func (e *env) bucket(id int) string { return fmt.Sprintf("%s/w%03d", e.root, id) }

// buckets returns every bucket path, indexed by worker (or wire slot).
func (e *env) buckets() []string {
	b := make([]string, e.o.Clients*e.o.InFlight)
	for i := range b {
		b[i] = e.bucket(i)
	}
	return b
}

func (e *env) createBuckets(ctx context.Context) error {
	return e.createAll(ctx, "creating buckets", e.o.Clients*e.o.InFlight, e.bucket)
}

func runCreate(ctx context.Context, e *env) (Result, error) {
	if err := e.createBuckets(ctx); err != nil {
		return Result{}, err
	}
	buckets := e.buckets()
	return e.measureOp(ctx, wireOp{request: func(enc *proto.Encoder, slot int, seq int64, _ *rand.Rand) proto.OpCode {
		req := proto.CreateRequest{Path: fmt.Sprintf("%s/n%09d", buckets[slot], seq), Data: e.value, ACL: wireACL}
		req.Encode(enc)
		return proto.OpCreate
	}}, func(w *worker) error {
		_, err := w.conn.Create(fmt.Sprintf("%s/n%09d", buckets[w.id], w.seq), e.value, 0, openACL)
		return err
	})
}

func runSet(ctx context.Context, e *env) (Result, error) {
	return withKeys(ctx, e, func(enc *proto.Encoder, key string, _ *rand.Rand) proto.OpCode {
		req := proto.SetDataRequest{Path: key, Data: e.value, Version: -1}
		req.Encode(enc)
		return proto.OpSetData
	}, func(w *worker, key string) error {
		_, err := w.conn.Set(key, e.value, -1)
		return err
	})
}

func runGet(ctx context.Context, e *env) (Result, error) {
	return withKeys(ctx, e, func(enc *proto.Encoder, key string, _ *rand.Rand) proto.OpCode {
		req := proto.GetDataRequest{Path: key}
		req.Encode(enc)
		return proto.OpGetData
	}, func(w *worker, key string) error {
		_, _, err := w.conn.Get(key)
		return err
	})
}

func runExists(ctx context.Context, e *env) (Result, error) {
	// On the wire a missing znode is a NoNode reply, which fails the run.
	return withKeys(ctx, e, func(enc *proto.Encoder, key string, _ *rand.Rand) proto.OpCode {
		req := proto.ExistsRequest{Path: key}
		req.Encode(enc)
		return proto.OpExists
	}, func(w *worker, key string) error {
		ok, _, err := w.conn.Exists(key)
		if err == nil && !ok {
			err = fmt.Errorf("exists %s: %w", key, zk.ErrNoNode)
		}
		return err
	})
}

func runMixed(ctx context.Context, e *env) (Result, error) {
	return withKeys(ctx, e, func(enc *proto.Encoder, key string, rng *rand.Rand) proto.OpCode {
		if rng.IntN(10) == 0 {
			req := proto.SetDataRequest{Path: key, Data: e.value, Version: -1}
			req.Encode(enc)
			return proto.OpSetData
		}
		req := proto.GetDataRequest{Path: key}
		req.Encode(enc)
		return proto.OpGetData
	}, func(w *worker, key string) error {
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
	buckets := e.buckets()
	return e.measureOp(ctx, wireOp{request: func(enc *proto.Encoder, slot int, _ int64, _ *rand.Rand) proto.OpCode {
		parent := buckets[slot]
		child := parent + "/x"
		req := proto.MultiRequest{Ops: []proto.MultiOp{
			{Type: proto.OpCreate, Op: &proto.CreateRequest{Path: child, Data: e.value, ACL: wireACL}},
			{Type: proto.OpSetData, Op: &proto.SetDataRequest{Path: parent, Data: e.value, Version: -1}},
			{Type: proto.OpDelete, Op: &proto.DeleteRequest{Path: child, Version: -1}},
		}}
		req.Encode(enc)
		return proto.OpMulti
	}}, func(w *worker) error {
		parent := buckets[w.id]
		child := parent + "/x"
		_, err := w.conn.Multi(
			&zk.CreateRequest{Path: child, Data: e.value, Acl: openACL},
			&zk.SetDataRequest{Path: parent, Data: e.value, Version: -1},
			&zk.DeleteRequest{Path: child, Version: -1},
		)
		return err
	})
}
