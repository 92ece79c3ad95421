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
// snapshot at snapZxid needs, checks that they chain without gaps, and
// collects the records after snapZxid.
func (s *Store) planLog(firsts []int64, snapZxid int64) (logPlan, error) {
	var plan logPlan
	for _, first := range firsts {
		plan.segs = append(plan.segs, &segment{first: first, path: filepath.Join(s.logDir, logName(first)), onDisk: true})
	}
	n := len(plan.segs)
	if n == 0 {
		return plan, nil
	}

	// The newest segment is read whole: it is always needed, and a crash
	// while creating it can leave it shorter than a header or all zeros.
	newest := plan.segs[n-1]
	newestData, err := os.ReadFile(newest.path)
	if err != nil {
		return plan, fmt.Errorf("wal: read log segment: %w", err)
	}
	// A torn tail is only possible in the newest segment: Sync makes each
	// segment durable before it creates the next one.
	tornOK := true
	if len(newestData) < segHeaderSize || allZero(newestData) {
		s.log.Warn("wal: removing newest log segment: its header was never completely written",
			"file", newest.path, "size", len(newestData))
		plan.removePaths = append(plan.removePaths, newest.path)
		plan.segs = plan.segs[:n-1]
		n--
		newestData, tornOK = nil, false
		if n == 0 {
			return plan, nil
		}
	}
	read := func(i int) ([]byte, error) {
		if i == n-1 && newestData != nil {
			return newestData, nil
		}
		data, err := os.ReadFile(plan.segs[i].path)
		if err != nil {
			return nil, fmt.Errorf("wal: read log segment: %w", err)
		}
		return data, nil
	}

	// Walk back to the newest segment that starts at or before the
	// snapshot; older ones hold nothing recovery needs and are not opened.
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
				return plan, corruptf(seg.path, 0, "%v", err)
			}
			return plan, err
		}
		seg.prev, seg.prevKnown = h.prev, true
		if h.prev <= snapZxid {
			start = i
			break
		}
	}
	if start < 0 {
		return plan, corruptf(plan.segs[0].path, 0,
			"the log starts after zxid %#x but the newest valid snapshot is at zxid %#x (0 means none): the transactions in between are missing",
			plan.segs[0].prev, snapZxid)
	}

	covered := snapZxid // every zxid up to here is in the snapshot or a read segment
	prevLast := int64(-1)
	for i := start; i < n; i++ {
		seg := plan.segs[i]
		data, err := read(i)
		if err != nil {
			return plan, err
		}
		sc, err := scanSegment(seg.path, data, seg.first, i == n-1 && tornOK)
		if err != nil {
			return plan, err
		}
		switch {
		case sc.hdr.prev > covered:
			return plan, corruptf(seg.path, 0,
				"gap in the history: the segment continues from zxid %#x but the snapshot and the segments before it end at %#x",
				sc.hdr.prev, covered)
		case prevLast >= 0 && sc.hdr.prev < prevLast:
			return plan, corruptf(seg.path, 0,
				"zxids not increasing across segments: the segment continues from zxid %#x but %s already reached %#x",
				sc.hdr.prev, plan.segs[i-1].path, prevLast)
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
			s.log.Warn("wal: truncating torn tail of the newest log segment (a write interrupted by a crash)",
				"file", seg.path, "offset", sc.end, "discarded_bytes", int64(len(data))-sc.end, "reason", sc.torn)
			plan.truncatePath, plan.truncateAt = seg.path, sc.end
		case sc.zeroTail:
			s.log.Info("wal: trimming unused preallocated space of the newest log segment",
				"file", seg.path, "offset", sc.end, "bytes", int64(len(data))-sc.end)
			plan.truncatePath, plan.truncateAt = seg.path, sc.end
		}
		if i == n-1 && len(sc.records) == 0 {
			// Its name is the zxid of a record that never became durable and
			// will be appended again; the file must not stand in the way.
			s.log.Info("wal: removing newest log segment: it holds no complete record", "file", seg.path)
			plan.removePaths, plan.truncatePath = append(plan.removePaths, seg.path), ""
			plan.segs = plan.segs[:n-1]
		}
		prevLast = last
		covered = max(covered, last)
		plan.lastZxid = last
	}
	return plan, nil
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
