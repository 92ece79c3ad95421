//go:build !linux

package testpeer

import "syscall"

// childAttrs has nothing to add where the kernel cannot tie a child's life
// to its parent's; t.Cleanup still stops the child.
func childAttrs() *syscall.SysProcAttr { return nil }
