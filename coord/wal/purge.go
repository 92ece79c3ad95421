package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// MinRetain is the fewest snapshots Purge keeps, as ZooKeeper's
// autopurge.snapRetainCount: one damaged snapshot must never leave the
// server without a fallback.
const MinRetain = 3

// Purge deletes old files: it keeps the newest retain snapshots (damaged
// ones found by Recover do not count) and the log segments needed to recover
// from the oldest of them, and removes older snapshots and segments. It is
// safe to call while Append, Sync and WriteSnapshot run.
func (s *Store) Purge(retain int) error {
	if retain < MinRetain {
		return fmt.Errorf("wal: purge: retain must be at least %d, got %d", MinRetain, retain)
	}
	s.purgeMu.Lock()
	defer s.purgeMu.Unlock()
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.ops.Add(1)
	bad := make(map[int64]bool, len(s.badSnaps))
	for z := range s.badSnaps {
		bad[z] = true
	}
	s.mu.Unlock()
	defer s.ops.Done()

	snaps, err := listZxidFiles(s.opts.Dir, parseSnapName)
	if err != nil {
		return err
	}
	var good []int64 // newest first
	for i := len(snaps) - 1; i >= 0; i-- {
		if !bad[snaps[i]] {
			good = append(good, snaps[i])
		}
	}
	if len(good) == 0 {
		return nil
	}
	oldest := good[min(retain, len(good))-1]

	// The retained log starts at the newest segment recovery from the
	// oldest kept snapshot would open (see planLog). Only segments whose
	// contents are durable qualify, and everything before such a segment
	// was closed by Sync before it was created.
	s.mu.Lock()
	start := -1
	for i := len(s.segs) - 1; i >= 0; i-- {
		if seg := s.segs[i]; seg.onDisk && seg.prevKnown && seg.prev <= oldest {
			start = i
			break
		}
	}
	var drop []*segment
	if start > 0 {
		drop = append(drop, s.segs[:start]...)
	}
	s.mu.Unlock()

	var errs []error
	removed := map[*segment]bool{}
	for _, seg := range drop {
		if err := os.Remove(seg.path); err != nil && !isNotExist(err) {
			errs = append(errs, fmt.Errorf("wal: purge: %w", err))
			continue
		}
		removed[seg] = true
	}
	s.mu.Lock()
	kept := s.segs[:0]
	for _, seg := range s.segs {
		if !removed[seg] {
			kept = append(kept, seg)
		}
	}
	clear(s.segs[len(kept):])
	s.segs = kept
	s.mu.Unlock()

	nsnaps := 0
	for _, z := range snaps {
		if z >= oldest {
			continue
		}
		if err := os.Remove(filepath.Join(s.opts.Dir, snapName(z))); err != nil && !isNotExist(err) {
			errs = append(errs, fmt.Errorf("wal: purge: %w", err))
			continue
		}
		nsnaps++
		s.mu.Lock()
		delete(s.badSnaps, z)
		s.mu.Unlock()
	}
	if len(removed) > 0 || nsnaps > 0 {
		s.log.Info("wal: purged old files", "segments", len(removed), "snapshots", nsnaps, "oldest_kept_snapshot_zxid", oldest)
	}
	return errors.Join(errs...)
}
