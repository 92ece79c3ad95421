package crashtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/coordhealth"
)

// Shape of the log-damage tests: a small --snap-count rolls the log into
// several segments within a second of load.
const (
	damageSnapCount = 200
	damageWorkers   = 4
	damageSlots     = 16
	damageMinLoad   = 300 * time.Millisecond
	damageMaxLoad   = 10 * time.Second
	// noSnapshots is a --snap-count no test reaches.
	noSnapshots = 1_000_000
)

// damage is what a tornTail case did to the newest log segment.
type damage struct {
	// lastKept is the zxid of the last record left complete in the log.
	lastKept int64
	// cut lists the zxids of the records the damage removed or broke.
	cut []int64
	// warnFile is the file the server must name in a warning, or "" when
	// nothing was lost and a warning is optional.
	warnFile string
}

// TestTornTail crashes the server under load, then damages the end of its
// log the way a crash can, and checks that the server starts, warns about
// the torn segment, recovers exactly up to the last complete record, keeps
// every acknowledged write still complete in the log, and stays
// recoverable: a second crash after more load loses nothing either. When
// the damage cut a record that had been acknowledged, that is disk damage
// rather than a crash, and only starting and serving is required.
func TestTornTail(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, segs []segment, rng *rand.Rand) damage
	}{
		{"last record cut by a few bytes", cutLastRecord},
		{"end of last record zeroed in preallocated space", zeroLastRecordEnd},
		{"next record half written", appendHalfRecord},
		{"new segment empty", newSegment(0)},
		{"new segment with half a header", newSegment(segmentHeaderSize / 2)},
	}
	seed := testSeed(t)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			srv, f := crashWithSegments(t, seed+uint64(i), 2)
			segs, err := listSegments(srv.txnLogDir)
			if err != nil {
				t.Fatal(err)
			}
			d := tc.damage(t, segs, rng)
			srv.Restart(t)
			if d.warnFile != "" {
				requireWarning(t, srv.lastLog(), filepath.Base(d.warnFile))
			}
			if zxid, err := serverZxid(srv.Addr()); err != nil {
				t.Errorf("srvr: %v", err)
			} else if zxid != d.lastKept {
				t.Errorf("recovered to zxid %#x, want %#x: the last complete record left in the log (cut: %#x)", zxid, d.lastKept, d.cut)
			}
			for _, z := range d.cut {
				if f.ledger.has(z) {
					t.Logf("the damage cut zxid %#x, an acknowledged write: this is disk damage, not a crash; checking only that the server serves", z)
					requireServes(t, srv.Addr())
					return
				}
			}
			f.verifyRecovered("after recovering from the damaged tail")
			if t.Failed() {
				return
			}
			st := f.loadUntilKilled(2, func(e time.Duration) bool { return e >= damageMinLoad }, damageMaxLoad)
			srv.Restart(t)
			f.verifyRecovered(fmt.Sprintf("after a second crash (%d more writes acknowledged) on the repaired log", st.acked))
		})
	}
}

// until its log has at least minSegments segments and the newest holds a
// few records, and kills it. The server is left stopped.
func crashWithSegments(t *testing.T, seed uint64, minSegments int) (*shepherd, *fleet) {
	t.Helper()
	srv := startShepherd(t, serverOptions{snapCount: damageSnapCount})
	f := newFleet(t, srv, damageWorkers, damageSlots, seed)
	enough := func() bool {
		segs, err := listSegments(srv.txnLogDir)
		return err == nil && len(segs) >= minSegments && len(segs[len(segs)-1].records) >= 3
	}
	st := f.loadUntilKilled(1, func(e time.Duration) bool { return e >= damageMinLoad && enough() }, damageMaxLoad)
	if t.Failed() {
		t.FailNow()
	}
	segs, err := listSegments(srv.txnLogDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < minSegments {
		t.Fatalf("%d log segments under %s after %d acknowledged writes with --snap-count %d; want at least %d (does the server roll its log before a snapshot?)",
			len(segs), srv.txnLogDir, st.acked, damageSnapCount, minSegments)
	}
	t.Logf("crashed with %d writes acknowledged, %d in flight, %d log segments", st.acked, st.unknown, len(segs))
	return srv, f
}

// cutLastRecord truncates the newest segment a few bytes into its last
// record (dropping anything after it too), as a crash during its write
// would.
func cutLastRecord(t *testing.T, segs []segment, rng *rand.Rand) damage {
	newest := segs[len(segs)-1]
	size := newest.dataEnd() - 1 - rng.Int64N(8)
	if err := os.Truncate(newest.path, size); err != nil {
		t.Fatal(err)
	}
	d := damage{lastKept: lastZxidBefore(segs, len(segs)-1), warnFile: newest.path}
	for _, r := range newest.records {
		if r.end <= size {
			d.lastKept = r.zxid
		} else {
			d.cut = append(d.cut, r.zxid)
		}
	}
	t.Logf("truncated %s from %d to %d bytes, cutting records %#x", newest.path, newest.size, size, d.cut)
	return d
}

// zeroLastRecordEnd zeroes the last few bytes of the newest segment's last
// record, keeping the file's size: what a crash leaves when the log
// preallocates its files and the last page of a write never reached them.
func zeroLastRecordEnd(t *testing.T, segs []segment, rng *rand.Rand) damage {
	newest := segs[len(segs)-1]
	if len(newest.records) == 0 {
		t.Fatalf("newest segment %s has no complete record to damage", newest.path)
	}
	last := newest.records[len(newest.records)-1]
	n := 1 + rng.Int64N(8)
	f, err := os.OpenFile(newest.path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(make([]byte, n), last.end-n)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("zeroed bytes %d to %d of %s (%d bytes), the end of record %#x", last.end-n, last.end, newest.path, newest.size, last.zxid)
	kept := lastZxidBefore(segs, len(segs)-1)
	if len(newest.records) > 1 {
		kept = newest.records[len(newest.records)-2].zxid
	}
	return damage{lastKept: kept, cut: []int64{last.zxid}, warnFile: newest.path}
}

// appendHalfRecord appends the first half of a record that follows the
// newest one, as a crash in the middle of writing the next batch would
// leave it: a header announcing more payload than there is.
func appendHalfRecord(t *testing.T, segs []segment, rng *rand.Rand) damage {
	newest := segs[len(segs)-1]
	if err := os.Truncate(newest.path, newest.dataEnd()); err != nil {
		t.Fatal(err)
	}
	last := lastZxidBefore(segs, len(segs))
	next := last + 1
	payload := 64 + rng.IntN(200)
	rec := make([]byte, 0, recordHeaderSize+payload/2)
	rec = binary.BigEndian.AppendUint32(rec, uint32(payload))
	rec = binary.BigEndian.AppendUint64(rec, uint64(next))
	rec = binary.BigEndian.AppendUint32(rec, rng.Uint32()) // the checksum of bytes that never made it
	rec = append(rec, bytes.Repeat([]byte{'t'}, payload/2)...)
	appendFile(t, newest.path, rec)
	t.Logf("appended %d of %d bytes of a record %#x to %s", len(rec), recordHeaderSize+payload, next, newest.path)
	return damage{lastKept: last, cut: []int64{next}, warnFile: newest.path}
}

// newSegment returns a damage that adds the segment a crash left just after
// creating it for the next record, holding only the first headerBytes
// bytes of its header. The log trims the preallocated tail of a segment
// before it creates the next, so the damage trims it too.
func newSegment(headerBytes int) func(*testing.T, []segment, *rand.Rand) damage {
	return func(t *testing.T, segs []segment, _ *rand.Rand) damage {
		newest := segs[len(segs)-1]
		if err := os.Truncate(newest.path, newest.dataEnd()); err != nil {
			t.Fatal(err)
		}
		last := lastZxidBefore(segs, len(segs))
		head, err := os.ReadFile(newest.path)
		if err != nil {
			t.Fatal(err)
		}
		// The start of a header is the same in every segment: magic,
		// version, reserved. Only first, prev and the checksum differ.
		path := filepath.Join(filepath.Dir(newest.path), segmentName(last+1))
		if err := os.WriteFile(path, head[:headerBytes], 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("created %s with %d of %d header bytes", path, headerBytes, segmentHeaderSize)
		d := damage{lastKept: last}
		if headerBytes > 0 {
			d.warnFile = path
		}
		return d
	}
}

// lastZxidBefore is the zxid of the last complete record in segs[:i], or 0.
func lastZxidBefore(segs []segment, i int) int64 {
	for j := i - 1; j >= 0; j-- {
		if z := segs[j].lastZxid(); z != 0 {
			return z
		}
	}
	return 0
}

// requireWarning fails t unless the log has a warning naming file.
func requireWarning(t *testing.T, log, file string) {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, file) {
			t.Logf("warning: %s", line)
			return
		}
	}
	t.Errorf("no warning naming %s in the server's log:\n%s", file, excerpt(log, logTailLines))
}

var srvrZxid = regexp.MustCompile(`(?m)^Zxid: (0x[0-9a-fA-F]+)$`)

// serverZxid asks the server for its last zxid with the srvr command.
func serverZxid(addr string) (int64, error) {
	ans, err := coordhealth.Ask(context.Background(), addr, "srvr")
	if err != nil {
		return 0, err
	}
	m := srvrZxid.FindStringSubmatch(ans)
	if m == nil {
		return 0, fmt.Errorf("no Zxid line in srvr's answer %q", ans)
	}
	return strconv.ParseInt(m[1], 0, 64)
}

// requireServes checks that a new session can write and read. The old
// sessions have seen zxids the damaged server no longer has, so a server
// may rightly turn them away.
func requireServes(t *testing.T, addr string) {
	t.Helper()
	c := connect(t, addr)
	const path = "/after-damage"
	if _, err := c.Create(path, []byte("ok"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s after recovery: %v", path, err)
	}
	if data, _, err := c.Get(path); err != nil || string(data) != "ok" {
		t.Fatalf("get %s after recovery = %q, %v; want \"ok\"", path, data, err)
	}
}
