package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Recover reads what is on disk: the newest snapshot whose checksums hold,
// and every logged record after it. It must be called once, after Open and
// before Append.
//
// A torn tail on the newest log segment (what a crash in the middle of a
// write leaves) is truncated with a warning. Damage anywhere else, a missing
// segment, or a log that no valid snapshot connects to, is ErrCorrupt, and
// nothing on disk is changed.
func (s *Store) Recover() (*Recovery, error) {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, ErrClosed
	case s.recoverCalled:
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: Recover called twice", ErrNotRecovered)
	}
	s.recoverCalled = true
	s.mu.Unlock()

	snaps, err := listZxidFiles(s.opts.Dir, parseSnapName)
	if err != nil {
		return nil, err
	}
	segs, err := listZxidFiles(s.logDir, parseLogName)
	if err != nil {
		return nil, err
	}

	// Newest snapshot first; a damaged one gives way to the next older.
	var snapZxid int64
	found := false
	bad := map[int64]bool{}
	for i := len(snaps) - 1; i >= 0 && !found; i-- {
		z := snaps[i]
		path := filepath.Join(s.opts.Dir, snapName(z))
		switch err := verifySnapshot(path, z); {
		case err == nil:
			snapZxid, found = z, true
		case errors.Is(err, ErrCorrupt):
			s.log.Warn("wal: skipping damaged snapshot; falling back to an older one", "file", path, "err", err)
			bad[z] = true
		default:
			return nil, err
		}
	}

	plan, err := s.planLog(segs, snapZxid)
	if err != nil {
		if len(bad) > 0 {
			return nil, fmt.Errorf("wal: %d newer snapshot(s) are damaged (see the warnings), so recovery had to start from zxid %#x: %w",
				len(bad), snapZxid, err)
		}
		return nil, err
	}
	if err := s.applyPlan(plan); err != nil {
		return nil, err
	}
	if err := s.removeSnapshotTemps(); err != nil {
		return nil, err
	}

	rec := &Recovery{Records: plan.records}
	if found {
		sr, err := openSnapshot(filepath.Join(s.opts.Dir, snapName(snapZxid)), snapZxid)
		if err != nil {
			return nil, err
		}
		rec.SnapshotZxid, rec.Snapshot = snapZxid, sr
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.recovered = true
	s.segs = plan.segs
	s.lastZxid = max(snapZxid, plan.lastZxid)
	s.badSnaps = bad
	s.stats.LastSnapshotZxid = snapZxid
	return rec, nil
}

// logPlan is the outcome of reading the log, before anything is changed.
type logPlan struct {
	records  []Record
	lastZxid int64
	segs     []*segment // segments that remain on disk
	// Repairs of the newest segments: files holding no complete record to
	// delete, or a torn tail to cut off.
	removePaths  []string
	truncatePath string // cut this file to truncateAt bytes
	truncateAt   int64
}

// planLog reads the segments (sorted by first zxid) that recovery from a
// snapshot at snapZxid needs (readLog), decides from their bytes what to
// recover and repair (decideLog), and logs the repairs decided. It
// changes nothing on disk: applyPlan does.
func (s *Store) planLog(firsts []int64, snapZxid int64) (logPlan, error) {
	lr, err := s.readLog(firsts, snapZxid)
	if err != nil {
		return lr.plan, err
	}
	plan, notes, err := decideLog(lr, snapZxid)
	for _, n := range notes {
		if n.warn {
			s.log.Warn(n.msg, n.args...)
		} else {
			s.log.Info(n.msg, n.args...)
		}
	}
	return plan, err
}

// logRead is what readLog read: the segments recovery needs, oldest
// first, with their bytes.
type logRead struct {
	plan  logPlan   // segs and the removal of a newest segment with no header
	reads []segRead // plan.segs[start:] with their data
	start int
	// tornOK: the last of reads is the newest segment as written, so its
	// tail may be torn by a crash.
	tornOK bool
}

// segRead is one segment and its bytes.
type segRead struct {
	seg  *segment
	data []byte
}

// logNote is a line decideLog asks its caller to log.
type logNote struct {
	warn bool
	msg  string
	args []any
}

// readLog reads the newest segment whole (it is always needed, and a
// crash while creating it can leave it shorter than a header or all
// zeros), walks back through the headers of older ones to the newest that
// starts at or before the snapshot (older ones hold nothing recovery needs
// and are not opened), and reads the segments from there on.
func (s *Store) readLog(firsts []int64, snapZxid int64) (logRead, error) {
	var lr logRead
	plan := &lr.plan
	for _, first := range firsts {
		plan.segs = append(plan.segs, &segment{first: first, path: filepath.Join(s.logDir, logName(first)), onDisk: true})
	}
	n := len(plan.segs)
	if n == 0 {
		return lr, nil
	}
	newest := plan.segs[n-1]
	newestData, err := os.ReadFile(newest.path)
	if err != nil {
		return lr, fmt.Errorf("wal: read log segment: %w", err)
	}
	// A torn tail is only possible in the newest segment: Sync makes each
	// segment durable before it creates the next one.
	lr.tornOK = true
	if len(newestData) < segHeaderSize || allZero(newestData) {
		s.log.Warn("wal: removing newest log segment: its header was never completely written",
			"file", newest.path, "size", len(newestData))
		plan.removePaths = append(plan.removePaths, newest.path)
		plan.segs = plan.segs[:n-1]
		n--
		newestData, lr.tornOK = nil, false
		if n == 0 {
			return lr, nil
		}
	}
	start := -1
	for i := n - 1; i >= 0; i-- {
		seg := plan.segs[i]
		var h segHeader
		if i == n-1 && newestData != nil {
			h, err = parseSegHeader(newestData)
		} else {
			h, err = readSegHeader(seg.path)
		}
		if err != nil {
			if errors.Is(err, ErrCorrupt) || !isIOError(err) {
				return lr, corruptf(seg.path, 0, "%v", err)
			}
			return lr, err
		}
		seg.prev, seg.prevKnown = h.prev, true
		if h.prev <= snapZxid {
			start = i
			break
		}
	}
	if start < 0 {
		return lr, corruptf(plan.segs[0].path, 0,
			"the log starts after zxid %#x but the newest valid snapshot is at zxid %#x (0 means none): the transactions in between are missing",
			plan.segs[0].prev, snapZxid)
	}
	lr.start = start
	for i := start; i < n; i++ {
		data := newestData
		if i < n-1 || data == nil {
			if data, err = os.ReadFile(plan.segs[i].path); err != nil {
				return lr, fmt.Errorf("wal: read log segment: %w", err)
			}
		}
		lr.reads = append(lr.reads, segRead{seg: plan.segs[i], data: data})
	}
	return lr, nil
}

// decideLog is the decision part of recovery's log reading, with no I/O:
// from the segments read, it checks that they chain from snapZxid without
// gaps, collects the records after snapZxid, and decides the repairs of
// the newest segment (a torn tail or unused preallocated space to cut off,
// a segment with no complete record to remove). notes are what to log.
func decideLog(lr logRead, snapZxid int64) (plan logPlan, notes []logNote, err error) {
	plan = lr.plan
	covered := snapZxid // every zxid up to here is in the snapshot or a read segment
	prevLast := int64(-1)
	for j, r := range lr.reads {
		seg, data := r.seg, r.data
		newest := j == len(lr.reads)-1
		sc, err := scanSegment(seg.path, data, seg.first, newest && lr.tornOK)
		if err != nil {
			return plan, notes, err
		}
		switch {
		case sc.hdr.prev > covered:
			return plan, notes, corruptf(seg.path, 0,
				"gap in the history: the segment continues from zxid %#x but the snapshot and the segments before it end at %#x",
				sc.hdr.prev, covered)
		case prevLast >= 0 && sc.hdr.prev < prevLast:
			return plan, notes, corruptf(seg.path, 0,
				"zxids not increasing across segments: the segment continues from zxid %#x but %s already reached %#x",
				sc.hdr.prev, lr.reads[j-1].seg.path, prevLast)
		}
		last := sc.hdr.prev
		for _, r := range sc.records {
			if r.Zxid > snapZxid {
				plan.records = append(plan.records, r)
			}
			last = r.Zxid
		}
		switch {
		case sc.torn != "":
			notes = append(notes, logNote{true, "wal: truncating torn tail of the newest log segment (a write interrupted by a crash)",
				[]any{"file", seg.path, "offset", sc.end, "discarded_bytes", int64(len(data)) - sc.end, "reason", sc.torn}})
			plan.truncatePath, plan.truncateAt = seg.path, sc.end
		case sc.zeroTail:
			notes = append(notes, logNote{false, "wal: trimming unused preallocated space of the newest log segment",
				[]any{"file", seg.path, "offset", sc.end, "bytes", int64(len(data)) - sc.end}})
			plan.truncatePath, plan.truncateAt = seg.path, sc.end
		}
		if newest && len(sc.records) == 0 {
			// Its name is the zxid of a record that never became durable and
			// will be appended again; the file must not stand in the way.
			notes = append(notes, logNote{false, "wal: removing newest log segment: it holds no complete record", []any{"file", seg.path}})
			plan.removePaths, plan.truncatePath = append(plan.removePaths, seg.path), ""
			plan.segs = plan.segs[:len(plan.segs)-1]
		}
		prevLast = last
		covered = max(covered, last)
		plan.lastZxid = last
	}
	return plan, notes, nil
}

// applyPlan makes the repairs planLog decided on durable.
func (s *Store) applyPlan(plan logPlan) error {
	if plan.truncatePath != "" {
		f, err := os.OpenFile(plan.truncatePath, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("wal: truncate torn tail: %w", err)
		}
		err = f.Truncate(plan.truncateAt)
		if err == nil && !s.opts.NoSync {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("wal: truncate torn tail of %s: %w", plan.truncatePath, err)
		}
	}
	for _, path := range plan.removePaths {
		if err := os.Remove(path); err != nil && !isNotExist(err) {
			return fmt.Errorf("wal: remove empty log segment: %w", err)
		}
	}
	if len(plan.removePaths) > 0 && !s.opts.NoSync {
		return syncDir(s.logDir)
	}
	return nil
}

// readSegHeader reads and parses the header of the segment at path.
// Parse failures are returned as plain errors, I/O failures as *os.PathError.
func readSegHeader(path string) (segHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return segHeader{}, err
	}
	defer f.Close()
	b := make([]byte, segHeaderSize)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return segHeader{}, err
	}
	return parseSegHeader(b[:n])
}

func isIOError(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe)
}

// listZxidFiles returns the zxids of the files in dir whose names parse,
// ascending.
func listZxidFiles(dir string, parse func(string) (int64, bool)) ([]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	var zxids []int64
	for _, e := range entries {
		if z, ok := parse(e.Name()); ok && e.Type().IsRegular() {
			zxids = append(zxids, z)
		}
	}
	slices.Sort(zxids)
	return zxids, nil
}

// removeSnapshotTemps deletes what snapshots interrupted by a crash left.
func (s *Store) removeSnapshotTemps() error {
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return fmt.Errorf("wal: list %s: %w", s.opts.Dir, err)
	}
	for _, e := range entries {
		if !isSnapshotTemp(e.Name()) {
			continue
		}
		path := filepath.Join(s.opts.Dir, e.Name())
		s.log.Info("wal: removing unfinished snapshot left by a crash", "file", path)
		if err := os.Remove(path); err != nil && !isNotExist(err) {
			return fmt.Errorf("wal: remove unfinished snapshot: %w", err)
		}
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
