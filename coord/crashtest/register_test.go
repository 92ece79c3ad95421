package crashtest

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// This file is the linearizability test's sequential specification: every
// znode is a register holding data and a version, and a history is checked
// against it with porcupine, one key at a time.

// regOpKind is one kind of register operation.
type regOpKind int

const (
	regGet regOpKind = iota
	regSet           // setData with version -1: always applies
	regCAS           // setData with an expected version
)

// regInput is an operation as called.
type regInput struct {
	kind    regOpKind
	key     string
	value   string // set, cas
	version int32  // cas: the expected version
}

// regOutput is an operation's result as returned.
type regOutput struct {
	// unknown marks a write whose connection was lost before the reply: it
	// may have been applied or not. Its return time is the end of the
	// history, per porcupine's convention, so it may take effect at any
	// point after its call (or, by being ordered last, never).
	unknown bool
	// badVersion is a CAS the server refused with BadVersion.
	badVersion bool
	// err is any other server answer (NoNode, …), which no correct server
	// gives on these keys: the model accepts no step with it.
	err     string
	value   string // get
	version int32  // get: the version read; set, cas: the new version
}

// regState is a key's value and version.
type regState struct {
	value   string
	version int32
}

// registerModel returns the model of versioned registers whose initial
// value is init at version 0.
func registerModel(init string) porcupine.Model {
	return porcupine.Model{
		Partition: partitionByKey,
		Init:      func() any { return regState{value: init} },
		Step: func(state, input, output any) (bool, any) {
			return regStep(state.(regState), input.(regInput), output.(regOutput))
		},
		DescribeOperation: func(input, output any) string {
			return describeRegOp(input.(regInput), output.(regOutput))
		},
		DescribeState: func(state any) string {
			s := state.(regState)
			return fmt.Sprintf("%q v%d", s.value, s.version)
		},
	}
}

// regStep is ZooKeeper's getData/setData on one znode.
func regStep(s regState, in regInput, out regOutput) (bool, regState) {
	if out.err != "" {
		return false, s
	}
	next := regState{value: in.value, version: s.version + 1}
	switch in.kind {
	case regGet:
		return out.value == s.value && out.version == s.version, s
	case regSet:
		return out.unknown || out.version == next.version, next
	default:
		if s.version != in.version {
			return out.unknown || out.badVersion, s
		}
		return out.unknown || (!out.badVersion && out.version == next.version), next
	}
}

func describeRegOp(in regInput, out regOutput) string {
	var call string
	switch in.kind {
	case regGet:
		call = fmt.Sprintf("get(%s)", in.key)
	case regSet:
		call = fmt.Sprintf("set(%s, %q)", in.key, in.value)
	default:
		call = fmt.Sprintf("cas(%s, %q, v%d)", in.key, in.value, in.version)
	}
	switch {
	case out.unknown:
		return call + " → ? (connection lost)"
	case out.err != "":
		return call + " → " + out.err
	case out.badVersion:
		return call + " → bad version"
	case in.kind == regGet:
		return fmt.Sprintf("%s → %q v%d", call, out.value, out.version)
	default:
		return fmt.Sprintf("%s → v%d", call, out.version)
	}
}

// partitionByKey splits a history into one history per key: registers are
// independent, so the whole is linearizable iff every key's is.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range history {
		k := op.Input.(regInput).key
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

// recorder collects a concurrent history. Timestamps are nanoseconds on
// the monotonic clock since the recorder was made.
type recorder struct {
	start   time.Time
	clients atomic.Int64 // porcupine client ids handed out

	mu      sync.Mutex
	ops     []porcupine.Operation
	pending []int // indexes of ops whose outcome is unknown
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

// now returns the current timestamp.
func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

// newClient returns a fresh client id. A client whose operation's outcome
// is unknown continues under a new id: porcupine's clients issue one
// operation at a time, and the unknown one never returns.
func (r *recorder) newClient() int { return int(r.clients.Add(1) - 1) }

// add records a completed operation, or one with an unknown outcome.
func (r *recorder) add(client int, in regInput, call int64, out regOutput, ret int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if out.unknown {
		r.pending = append(r.pending, len(r.ops))
	}
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// history returns the recorded operations, the unknown ones returning
// after everything else.
func (r *recorder) history() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := r.now()
	for _, op := range r.ops {
		end = max(end, op.Return)
	}
	ops := append([]porcupine.Operation(nil), r.ops...)
	for _, i := range r.pending {
		ops[i].Return = end + 1
	}
	return ops
}
