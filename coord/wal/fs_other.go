//go:build !linux

package wal

import (
	"errors"
	"os"
)

// fdatasync falls back to a full fsync where fdatasync is not available.
func fdatasync(f *os.File) error { return f.Sync() }

// fallocate is not available here; the log runs without preallocation.
func fallocate(*os.File, int64, int64) error {
	return errors.ErrUnsupported
}
