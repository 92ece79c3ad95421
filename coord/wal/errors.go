package wal

import (
	"errors"
	"fmt"
)

var (
	// ErrCorrupt reports damaged files that recovery will not paper over:
	// a bad record that is not a torn tail, a gap or a non-increasing zxid
	// across segments, or no valid snapshot from which the log covers the
	// history. The wrapping error names the file and offset.
	ErrCorrupt = errors.New("wal: data directory is corrupt")

	// ErrLocked reports that another process (or another Store in this one)
	// already holds the directory.
	ErrLocked = errors.New("wal: directory is locked")

	// ErrClosed reports a call on a closed Store.
	ErrClosed = errors.New("wal: store is closed")

	// ErrFailed reports that an earlier write or fsync failed. After a failed
	// fsync the kernel may have dropped the dirty pages, so retrying cannot
	// make the data durable; the Store refuses further work and the server
	// must restart and recover from what is on disk.
	ErrFailed = errors.New("wal: store failed after an I/O error; restart to recover from disk")

	// ErrZxidOrder reports an Append whose zxid does not exceed the last one.
	ErrZxidOrder = errors.New("wal: zxid does not exceed the last appended zxid")

	// ErrTooLarge reports an Append whose payload exceeds MaxRecordBytes.
	ErrTooLarge = errors.New("wal: record too large")

	// ErrNotRecovered reports Append, Sync or Roll before Recover, or a
	// second Recover: the Store must learn what is on disk exactly once
	// before it may add to it.
	ErrNotRecovered = errors.New("wal: Recover must be called exactly once, before Append")
)

// corruptf returns an ErrCorrupt naming the file and offset, with advice on
// what the operator can do about it.
func corruptf(path string, off int64, format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d: %s; restore the data directory from a backup, "+
		"or, accepting the loss of the transactions from that point on, move %s and every later "+
		"log segment out of the directory (or rename them, e.g. with a .bad suffix) and start again",
		ErrCorrupt, path, off, fmt.Sprintf(format, args...), path)
}
