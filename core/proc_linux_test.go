package core

import "syscall"

// childAttrs asks the kernel to SIGKILL a core process if the test binary
// dies first, so that no core outlives its test run.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
