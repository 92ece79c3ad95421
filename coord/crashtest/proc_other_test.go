//go:build !linux

package crashtest

import "syscall"

// childAttrs has nothing to add where the kernel cannot tie a child's life
// to its parent's; t.Cleanup still stops every server.
func childAttrs() *syscall.SysProcAttr { return nil }
