package crashtest

import "syscall"

// childAttrs asks the kernel to SIGKILL a server if the test binary dies
// first (a panic or a -timeout), so no server outlives its test run.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
