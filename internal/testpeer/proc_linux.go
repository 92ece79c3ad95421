package testpeer

import "syscall"

// childAttrs asks the kernel to SIGKILL the child if the test binary dies
// first (a panic, a timeout, a ^C), so no JVM outlives its test run.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
