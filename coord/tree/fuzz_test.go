package tree

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// fuzzTree is a small tree with one of everything for fuzzed transactions
// to land on.
func fuzzTree(t testing.TB) *Tree {
	h := newHarness(t)
	h.openSession(7, 4000)
	h.create("/a", "data")
	h.create("/a/b", "")
	h.must(Caller{Session: 7}, create("/a/e", proto.ModeEphemeral))
	h.must(anyone, Op{Code: proto.OpCreateContainer, Path: "/c", ACL: open, Flags: proto.ModeContainer})
	h.must(anyone, Op{Code: proto.OpCreateTTL, Path: "/t", ACL: open, Flags: proto.ModePersistentWithTTL, TTL: 10})
	return h.tr
}

// seedTxns returns encoded transactions of every kind: a random workload's
// log plus the shapes it may miss.
func seedTxns(t testing.TB) [][]byte {
	w := newWorkload(t, 7)
	for range 60 {
		w.step()
	}
	seeds := w.h.log
	tr := fuzzTree(t)
	for _, txn := range []*Txn{
		tr.PrepareCreateSession(100, 1, 9, 30000),
		tr.PrepareCloseSession(101, 2, 7),
		tr.Prepare(anyone, 102, 3, nil, true),
		tr.Prepare(anyone, 103, 4, []Op{create("/a", 0)}, false),
		tr.Prepare(anyone, 104, 5, []Op{create("/x", 0), del("/a/b", -1), set("/a", "d", 0), check("/a", 1)}, true),
		tr.Prepare(anyone, 105, 6, []Op{setACL("/a", proto.ACLReadUnsafe, 0)}, false),
		tr.Prepare(root, 106, 7, []Op{{Code: proto.OpDeleteContainer, Path: "/c"}}, false),
		tr.Prepare(anyone, 107, 8, []Op{setACL("/a", nil, -1)}, true),
	} {
		seeds = append(seeds, EncodeTxn(txn))
	}
	return seeds
}

func FuzzDecodeTxn(f *testing.F) {
	for _, b := range seedTxns(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		txn, err := DecodeTxn(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptTxn) {
				t.Fatalf("DecodeTxn error %v does not wrap ErrCorruptTxn", err)
			}
			return
		}
		again, err := DecodeTxn(EncodeTxn(txn))
		if err != nil || !reflect.DeepEqual(again, txn) {
			t.Fatalf("re-encoding changed the transaction: %+v, then %+v (%v)", txn, again, err)
		}
		// Whatever decodes must apply without breaking the tree.
		tr := fuzzTree(t)
		tr.Apply(txn)
		checkInvariants(t, tr)
		if tr.LastZxid() < txn.Zxid() {
			t.Fatalf("last zxid %#x below the applied %#x", tr.LastZxid(), txn.Zxid())
		}
	})
}

func FuzzLoad(f *testing.F) {
	f.Add(snapshotBytes(f, New().Freeze()))
	f.Add(snapshotBytes(f, fuzzTree(f).Freeze()))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := Load(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("Load error %v does not wrap ErrCorruptSnapshot", err)
			}
			return
		}
		checkInvariants(t, tr)
		if out := snapshotBytes(t, tr.Freeze()); !bytes.Equal(out, b) {
			t.Fatal("a loaded snapshot does not write back the same bytes")
		}
	})
}

func TestFuzzSeedsDecode(t *testing.T) {
	// The committed corpus must stay decodable when the format changes,
	// or the fuzzer would start from nothing but rejections.
	for i, b := range seedTxns(t) {
		if _, err := DecodeTxn(b); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
}
