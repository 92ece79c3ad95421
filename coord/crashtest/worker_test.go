package crashtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Load shape.
const (
	// maxOpsPerCycle bounds one worker's writes in one load cycle, so a
	// server that never gets killed cannot make a cycle run forever.
	maxOpsPerCycle = 20000
	// ephemeralShare is the fraction of creates that are ephemeral: their
	// survival also proves the owner's session survived the crash.
	ephemeralShare = 0.2
	// setShare and setACLShare are the fractions of writes to an existing
	// znode that are setData and setACL; the rest are deletes.
	setShare    = 0.6
	setACLShare = 0.1
	// maxPadding bounds the random padding of most written data;
	// largeShare of the writes get up to maxLargePadding instead.
	maxPadding      = 300
	largeShare      = 0.03
	maxLargePadding = 32 << 10
	// multiShare is the fraction of requests that are a multi of 2 to
	// maxMultiOps writes on distinct slots.
	multiShare  = 0.15
	maxMultiOps = 3
)

// worker writes its own slots, one request at a time.
type worker struct {
	id    int
	c     *client
	rng   *rand.Rand
	dir   parentDir
	slots []*slot
	seq   int   // numbers written data so that every value is unique
	last  int64 // zxid of this worker's latest applied write
	// acked and unknown count this cycle's writes by outcome.
	acked, unknown int
	// failure is a server answer the model contradicts; it ends the load.
	failure error
}

// step is one request a worker sends: a single write, or writes on
// distinct slots sent together as one multi.
type step struct {
	slots  []*slot
	writes []*write
}

func (st step) String() string {
	if len(st.writes) == 1 {
		return fmt.Sprintf("%v on %s", st.writes[0], st.slots[0].path)
	}
	return st.writes[0].multi.String()
}

// run writes until stop is closed, a write has an unknown outcome, or the
// server answers something the model contradicts.
func (w *worker) run(cycle int, led *ledger, stop <-chan struct{}) {
	for range maxOpsPerCycle {
		select {
		case <-stop:
			return
		default:
		}
		st := w.nextStep(cycle)
		zxid, err := w.send(st)
		if errors.Is(err, errUnknownOutcome) {
			for i, s := range st.slots {
				s.pending = st.writes[i]
			}
			w.unknown++
			return
		}
		if err == nil {
			err = w.noteApplied(zxid, st, led)
		}
		if err != nil {
			w.failure = err
			return
		}
		w.acked++
	}
}

// nextStep chooses the next request: usually one write to a random slot,
// sometimes a multi of writes to several.
func (w *worker) nextStep(cycle int) step {
	n := 1
	if w.rng.Float64() < multiShare {
		n = 2 + w.rng.IntN(maxMultiOps-1)
	}
	var st step
	for _, i := range w.rng.Perm(len(w.slots))[:n] {
		s := w.slots[i]
		st.slots = append(st.slots, s)
		st.writes = append(st.writes, w.next(s, cycle, n > 1))
	}
	if n > 1 {
		m := &multi{}
		for i, s := range st.slots {
			m.paths = append(m.paths, s.path)
			st.writes[i].multi = m
		}
	}
	return st
}

// next chooses the next write to s: a create if it is absent, else mostly
// setData, sometimes setACL (never in a multi, which cannot carry one) or
// delete, always conditioned on the expected version.
func (w *worker) next(s *slot, cycle int, inMulti bool) *write {
	w.seq++
	if !s.present {
		return &write{kind: opCreate, data: w.value(), ephemeral: w.rng.Float64() < ephemeralShare, cycle: cycle}
	}
	switch p := w.rng.Float64(); {
	case p < setShare:
		return &write{kind: opSet, data: w.value(), version: s.stat.Version, cycle: cycle}
	case p < setShare+setACLShare && !inMulti:
		acl := aclVariants[0]
		if slices.Equal(s.acl, acl) {
			acl = aclVariants[1+w.rng.IntN(len(aclVariants)-1)]
		}
		return &write{kind: opSetACL, acl: acl, version: s.stat.Aversion, cycle: cycle}
	}
	return &write{kind: opDelete, version: s.stat.Version, cycle: cycle}
}

// value returns unique data: the worker and a sequence number, padded to
// lengths that vary, now and then past a page, so that log records vary in
// size and a crash tears them at varied places.
func (w *worker) value() []byte {
	pad := w.rng.IntN(maxPadding)
	if w.rng.Float64() < largeShare {
		pad = w.rng.IntN(maxLargePadding)
	}
	return []byte(fmt.Sprintf("w%d-%d-", w.id, w.seq) + strings.Repeat("x", pad))
}

// send sends st and, if the server acknowledges it, moves the model to the
// new state. It returns the zxid the step was applied at.
func (w *worker) send(st step) (int64, error) {
	if len(st.writes) > 1 {
		return w.sendMulti(st)
	}
	s, wr := st.slots[0], st.writes[0]
	switch wr.kind {
	case opCreate:
		if _, err := w.c.Create(s.path, wr.data, w.createFlags(wr), zk.WorldACL(zk.PermAll)); err != nil {
			return 0, w.refused(st, err)
		}
		zxid := w.c.tap.lastZxid()
		return zxid, w.commit(s, wr, zxid, nil)
	case opSet:
		stat, err := w.c.Set(s.path, wr.data, wr.version)
		if err != nil {
			return 0, w.refused(st, err)
		}
		return stat.Mzxid, w.commit(s, wr, stat.Mzxid, stat)
	case opSetACL:
		stat, err := w.c.SetACL(s.path, wr.acl, wr.version)
		if err != nil {
			return 0, w.refused(st, err)
		}
		zxid := w.c.tap.lastZxid()
		return zxid, w.commit(s, wr, zxid, stat)
	default:
		if err := w.c.Delete(s.path, wr.version); err != nil {
			return 0, w.refused(st, err)
		}
		zxid := w.c.tap.lastZxid()
		return zxid, w.commit(s, wr, zxid, nil)
	}
}

// sendMulti sends st's writes as one multi request.
func (w *worker) sendMulti(st step) (int64, error) {
	ops := make([]any, len(st.writes))
	for i, wr := range st.writes {
		path := st.slots[i].path
		switch wr.kind {
		case opCreate:
			ops[i] = &zk.CreateRequest{Path: path, Data: wr.data, Acl: zk.WorldACL(zk.PermAll), Flags: w.createFlags(wr)}
		case opSet:
			ops[i] = &zk.SetDataRequest{Path: path, Data: wr.data, Version: wr.version}
		default:
			ops[i] = &zk.DeleteRequest{Path: path, Version: wr.version}
		}
	}
	res, err := w.c.Multi(ops...)
	if err != nil {
		return 0, w.refused(st, err)
	}
	if len(res) != len(ops) {
		return 0, fmt.Errorf("%v: acknowledged with %d results for %d operations", st, len(res), len(ops))
	}
	zxid := w.c.tap.lastZxid()
	for i, wr := range st.writes {
		s := st.slots[i]
		switch {
		case res[i].Error != nil:
			return 0, fmt.Errorf("%v: acknowledged, yet its operation on %s reports %v", st, s.path, res[i].Error)
		case wr.kind == opCreate && res[i].String != s.path:
			return 0, fmt.Errorf("%v: create of %s acknowledged with path %q", st, s.path, res[i].String)
		case wr.kind == opSet && (res[i].Stat == nil || res[i].Stat.Mzxid != zxid):
			return 0, fmt.Errorf("%v: setData of %s acknowledged with stat %+v, want mzxid %#x, the multi's zxid", st, s.path, res[i].Stat, zxid)
		}
		if err := w.commit(s, wr, zxid, res[i].Stat); err != nil {
			return 0, err
		}
	}
	return zxid, nil
}

func (w *worker) createFlags(wr *write) int32 {
	if wr.ephemeral {
		return zk.FlagEphemeral
	}
	return 0
}

// commit moves the model of s to the state after the acknowledged write wr,
// applied at zxid. stat is the stat a setData returned.
func (w *worker) commit(s *slot, wr *write, zxid int64, stat *zk.Stat) error {
	switch wr.kind {
	case opCreate:
		owner := int64(0)
		if wr.ephemeral {
			owner = w.c.session
		}
		s.present, s.data, s.acl = true, wr.data, aclVariants[0]
		s.stat, s.timesKnown = expectedCreateStat(zxid, wr.data, owner), false
		w.dir.childChanged(zxid, true)
	case opSet:
		want := s.stat
		want.Mzxid, want.Mtime, want.Version, want.DataLength = stat.Mzxid, stat.Mtime, wr.version+1, int32(len(wr.data))
		if !s.timesKnown {
			want.Ctime = stat.Ctime
		}
		if d := statDiff(*stat, want); d != "" || stat.Mzxid <= s.stat.Mzxid {
			return fmt.Errorf("%s: %v after %s returned stat {%s}: %s (mzxid must grow)", s.path, wr, s.describe(), statString(*stat), d)
		}
		s.data, s.stat, s.timesKnown = wr.data, *stat, true
	case opSetACL:
		want := s.stat
		want.Aversion = wr.version + 1
		if !s.timesKnown {
			want.Ctime, want.Mtime = stat.Ctime, stat.Mtime
		}
		if d := statDiff(*stat, want); d != "" {
			return fmt.Errorf("%s: %v after %s returned stat {%s}: %s", s.path, wr, s.describe(), statString(*stat), d)
		}
		s.acl, s.stat, s.timesKnown = wr.acl, *stat, true
	default:
		s.present, s.data = false, nil
		w.dir.childChanged(zxid, true)
	}
	s.lastAck = fmt.Sprintf("%v at zxid %#x", wr, zxid)
	return nil
}

// refused turns a server's answer to a step the model says must succeed
// into a failure naming what the model expected, and a lost connection
// into errUnknownOutcome.
func (w *worker) refused(st step, err error) error {
	if !answered(err) {
		if errors.Is(err, zk.ErrSessionExpired) {
			return fmt.Errorf("%w: %v: %v", errSessionLost, st, err)
		}
		return fmt.Errorf("%w: %v: %v", errUnknownOutcome, st, err)
	}
	var want []string
	for _, s := range st.slots {
		want = append(want, s.path+" "+s.describe())
	}
	return fmt.Errorf("%v was refused with %q, but the model says it must succeed: %s", st, err, strings.Join(want, "; "))
}

// noteApplied checks an acknowledged step's zxid: above this worker's
// previous one (a session's writes are applied in order), unique, and above
// every zxid applied before the last restart.
func (w *worker) noteApplied(zxid int64, st step, led *ledger) error {
	if zxid <= w.last {
		return fmt.Errorf("acknowledged %v got zxid %#x, not above this session's previous write at %#x", st, zxid, w.last)
	}
	w.last = zxid
	return led.record(zxid, st.String())
}

// verify checks one worker's slots and directory and returns every
// mismatch.
func (w *worker) verify(c *client, led *ledger) []error {
	var errs []error
	var present []string
	multis := map[*multi][]decision{}
	for _, s := range w.slots {
		obs, err := read(c, s.path)
		if err != nil {
			return append(errs, err)
		}
		pending := s.pending
		owner := int64(0)
		if pending != nil && pending.ephemeral {
			owner = w.c.session
		}
		d, err := s.check(obs, owner, &w.dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if pending != nil && pending.multi != nil {
			multis[pending.multi] = append(multis[pending.multi], d)
		} else if d.zxid != 0 {
			errs = append(errs, w.noteDecided(d.zxid, fmt.Sprintf("%s on %s", s.lastAck, s.path), led)...)
		}
		if s.present {
			present = append(present, s.path[len(w.dir.path)+1:])
		}
	}
	for m, ds := range multis {
		zxid, err := atomically(m, ds)
		if err != nil {
			errs = append(errs, err)
		} else if zxid != 0 {
			errs = append(errs, w.noteDecided(zxid, m.String()+", unacknowledged but found applied", led)...)
		}
	}
	if len(errs) > 0 {
		return errs // the directory cannot match a model that does not
	}
	children, st, err := c.Children(w.dir.path)
	if err != nil {
		return append(errs, fmt.Errorf("list %s: %v", w.dir.path, err))
	}
	slices.Sort(children)
	slices.Sort(present)
	if !slices.Equal(children, present) {
		errs = append(errs, fmt.Errorf("%s has children %v, want %v", w.dir.path, children, present))
	}
	if int(st.NumChildren) != len(present) || st.Cversion != w.dir.cversion || (w.dir.pzxidKnown && st.Pzxid != w.dir.pzxid) {
		errs = append(errs, fmt.Errorf("%s has stat {%s}, want numChildren=%d cversion=%d pzxid=%#x (pzxid checked: %v)",
			w.dir.path, statString(*st), len(present), w.dir.cversion, w.dir.pzxid, w.dir.pzxidKnown))
	}
	w.dir.pzxid, w.dir.pzxidKnown = st.Pzxid, true
	return errs
}

// noteDecided records the zxid of a pending write found applied.
func (w *worker) noteDecided(zxid int64, what string, led *ledger) []error {
	w.last = max(w.last, zxid)
	if err := led.record(zxid, what); err != nil {
		return []error{err}
	}
	return nil
}

// atomically checks that the writes of an unacknowledged multi were
// decided alike: all applied at one zxid, or none. It returns that zxid.
func atomically(m *multi, ds []decision) (int64, error) {
	var zxid int64
	for _, d := range ds {
		if d.applied != ds[0].applied {
			return 0, fmt.Errorf("%v was applied in part after the crash (decisions %+v): a multi must be all or nothing", m, ds)
		}
		if d.zxid == 0 {
			continue
		}
		if zxid != 0 && d.zxid != zxid {
			return 0, fmt.Errorf("%v was applied at several zxids (decisions %+v): a multi is one transaction", m, ds)
		}
		zxid = d.zxid
	}
	return zxid, nil
}

// read returns what the server holds at path. Only a server answer counts:
// a lost connection is an error, since the server was just checked alive.
func read(c *client, path string) (observation, error) {
	data, st, err := c.Get(path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return observation{}, nil
	case err != nil:
		return observation{}, fmt.Errorf("read %s: %w", path, err)
	}
	acl, ast, err := c.GetACL(path)
	if err != nil {
		return observation{}, fmt.Errorf("read the acl of %s: %w", path, err)
	}
	if *ast != *st {
		return observation{}, fmt.Errorf("%s changed between getData (stat {%s}) and getACL (stat {%s}) with no writer running", path, statString(*st), statString(*ast))
	}
	return observation{present: true, data: data, acl: acl, stat: *st}, nil
}
