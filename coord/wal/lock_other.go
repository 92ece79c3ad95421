//go:build !unix

package wal

import (
	"fmt"
	"os"
	"runtime"
)

// lockDir refuses to run where we cannot take an exclusive directory lock:
// two servers sharing a directory would corrupt it silently.
func lockDir(dir string) (*os.File, error) {
	return nil, fmt.Errorf("wal: locking %s: directory locks are not implemented on %s", dir, runtime.GOOS)
}
