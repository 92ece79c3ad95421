package wal

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// DefaultSegmentBytes is the log segment size used when Options.SegmentBytes
// is zero, the same as ZooKeeper's default log preallocation.
const DefaultSegmentBytes = 64 << 20

// Options configures a Store.
type Options struct {
	// Dir holds snapshots, and the log unless LogDir is set. It is created
	// if missing and locked against other processes while the Store is open.
	Dir string
	// LogDir, if set, holds the log segments (ZooKeeper's dataLogDir): on a
	// disk of its own, log fsyncs do not queue behind snapshot writes.
	LogDir string
	// SegmentBytes is the size past which the log rolls to a new segment
	// file. Zero means DefaultSegmentBytes.
	SegmentBytes int64
	// NoSync skips every fsync. Only for tests that do not test durability.
	NoSync bool
	// Logger receives warnings about torn tails, damaged snapshots and
	// purges; nil means slog.Default().
	Logger *slog.Logger
}

// Record is one logged transaction: an opaque payload and its zxid.
type Record struct {
	Zxid int64
	Data []byte
}

// Recovery is what Recover found on disk.
type Recovery struct {
	// SnapshotZxid is the zxid of the snapshot to load, 0 if there is none.
	SnapshotZxid int64
	// Snapshot streams the snapshot's payload exactly as WriteSnapshot's
	// callback wrote it, verifying checksums as it goes. It is nil if there
	// is no snapshot; the caller must close it.
	Snapshot io.ReadCloser
	// Records are the logged transactions after SnapshotZxid, in zxid
	// order. The caller owns them.
	Records []Record
}

// Stats are counters for metrics.
type Stats struct {
	Appends          int64 // records appended since Open
	Syncs            int64 // Syncs that had records to write
	SyncNanos        int64 // total time spent in those Syncs (write + fdatasync)
	Bytes            int64 // bytes written to log segments since Open
	Segments         int64 // log segment files currently on disk
	Snapshots        int64 // snapshots written since Open
	LastSnapshotZxid int64 // zxid of the newest snapshot recovered or written
}

// segment is one log segment file, existing or about to be created.
type segment struct {
	first int64
	prev  int64
	// prevKnown is false for old segments that recovery did not need and so
	// never opened; Purge never starts the retained log at one of them.
	prevKnown bool
	path      string
	// onDisk is set once the file exists with durable contents, so Purge
	// never deletes a segment that Sync may still write to.
	onDisk bool
}

// batch is the buffered, not yet written tail of one segment.
type batch struct {
	seg *segment
	buf []byte
}

// Store is the write-ahead log and snapshot directory of one server.
//
// Append, Sync, Roll and LastZxid are meant for one pipeline goroutine but
// are safe for concurrent use; WriteSnapshot and Purge may run in other
// goroutines at the same time. See the package doc for the lock order.
type Store struct {
	opts   Options
	log    *slog.Logger
	logDir string
	locks  []*os.File

	// syncMu serializes log I/O. It is held across write and fdatasync so
	// that Append (which only takes mu) keeps going during an fsync.
	syncMu     sync.Mutex
	file       *os.File // open file of fileSeg; guarded by syncMu, as are the next four
	fileSeg    *segment
	fileOff    int64 // bytes written to file
	fileAlloc  int64 // bytes preallocated in file (its size, if more than fileOff)
	noPrealloc bool  // the filesystem refused fallocate once; stop trying

	// purgeMu serializes Purge calls.
	purgeMu sync.Mutex

	// ops counts WriteSnapshot and Purge calls in flight; Close waits for
	// them so it never releases the directory lock under their feet.
	ops sync.WaitGroup

	mu            sync.Mutex
	recoverCalled bool
	recovered     bool
	closed        bool
	failed        error // sticky ErrFailed
	lastZxid      int64
	segs          []*segment // oldest first, including the one Append fills
	cur           *segment   // segment receiving appends; nil until the first Append
	curBytes      int64      // size cur will have once pending is written
	rollPending   bool
	pending       []batch
	freeBatches   []batch // recycled slice for pending
	spare         []byte  // recycled buffer for the next batch
	badSnaps      map[int64]bool
	stats         Stats
}

// maxSpareBytes caps the batch buffer kept for reuse after a Sync, so one
// burst does not pin a large buffer for the life of the server.
const maxSpareBytes = 4 << 20

// Open prepares a Store on opts.Dir (and opts.LogDir), creating them if
// needed and locking them so that two servers cannot share them. Call
// Recover next.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("wal: open: Options.Dir is required")
	}
	if opts.SegmentBytes < 0 {
		return nil, fmt.Errorf("wal: open: Options.SegmentBytes must not be negative, got %d", opts.SegmentBytes)
	}
	if opts.SegmentBytes == 0 {
		opts.SegmentBytes = DefaultSegmentBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Store{opts: opts, log: opts.Logger, logDir: opts.Dir, badSnaps: map[int64]bool{}}
	if opts.LogDir != "" {
		s.logDir = opts.LogDir
	}
	dirs := []string{opts.Dir}
	if s.logDir != opts.Dir {
		dirs = append(dirs, s.logDir)
	}
	for i, dir := range dirs {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			s.unlock()
			return nil, fmt.Errorf("wal: open: create directory: %w", err)
		}
		if i == 1 && sameDir(dirs[0], dir) {
			break // one directory under two names: one lock is enough
		}
		f, err := lockDir(dir)
		if err != nil {
			s.unlock()
			return nil, err
		}
		s.locks = append(s.locks, f)
	}
	return s, nil
}

func sameDir(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

func (s *Store) unlock() {
	for _, f := range s.locks {
		f.Close() // closing the descriptor releases the flock
	}
	s.locks = nil
}

// usableLocked reports why the Store cannot take log writes, if it cannot.
func (s *Store) usableLocked() error {
	switch {
	case s.closed:
		return ErrClosed
	case s.failed != nil:
		return s.failed
	case !s.recovered:
		return ErrNotRecovered
	}
	return nil
}

// Append buffers one record. zxid must exceed every zxid appended or
// recovered before. Nothing is durable until Sync returns.
func (s *Store) Append(zxid int64, data []byte) error {
	if len(data) > MaxRecordBytes {
		return fmt.Errorf("%w: zxid %#x has %d bytes, the limit is %d", ErrTooLarge, zxid, len(data), MaxRecordBytes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	if zxid <= s.lastZxid {
		return fmt.Errorf("%w: append zxid %#x after %#x", ErrZxidOrder, zxid, s.lastZxid)
	}
	if s.pending == nil {
		s.pending, s.freeBatches = s.freeBatches, nil
	}
	if s.cur == nil || s.rollPending || s.curBytes >= s.opts.SegmentBytes {
		seg := &segment{first: zxid, prev: s.lastZxid, prevKnown: true, path: filepath.Join(s.logDir, logName(zxid))}
		s.segs = append(s.segs, seg)
		s.cur, s.rollPending, s.curBytes = seg, false, segHeaderSize
		s.pending = append(s.pending, batch{seg: seg, buf: appendSegHeader(s.takeSpare(), segHeader{first: zxid, prev: s.lastZxid})})
	} else if len(s.pending) == 0 {
		s.pending = append(s.pending, batch{seg: s.cur, buf: s.takeSpare()})
	}
	b := &s.pending[len(s.pending)-1]
	b.buf = appendRecord(b.buf, zxid, data)
	s.curBytes += int64(recHeaderSize + len(data))
	s.lastZxid = zxid
	s.stats.Appends++
	return nil
}

func (s *Store) takeSpare() []byte {
	b := s.spare
	s.spare = nil
	return b[:0]
}

// LastZxid returns the zxid of the last record appended, or recovered (the
// snapshot's zxid if that is newer). It is 0 for an empty store.
func (s *Store) LastZxid() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastZxid
}

// Roll makes the next Append start a new segment. The server calls it just
// before taking a snapshot, so that once enough newer snapshots exist Purge
// can drop whole segments.
func (s *Store) Roll() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	s.rollPending = true
	return nil
}

// Stats returns the Store's counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	for _, seg := range s.segs {
		if seg.onDisk {
			st.Segments++
		}
	}
	return st
}

// Close writes and syncs any buffered records, waits for snapshots and
// purges in flight, and releases the directory lock. Closing twice is a
// no-op.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.ops.Wait()

	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	err := s.flushLocked()
	s.mu.Lock()
	failed := s.failed != nil
	s.mu.Unlock()
	if failed {
		// Leave the file as it is; recovery trims what is there.
		if s.file != nil {
			s.file.Close()
			s.file, s.fileSeg = nil, nil
		}
	} else if cerr := s.closeSegmentFile(); cerr != nil && err == nil {
		err = fmt.Errorf("wal: close: %w", cerr)
	}
	s.unlock()
	return err
}
