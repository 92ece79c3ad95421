package scheduler

import "syscall"

// procAttr puts a job's command in its own process group, so that a
// timeout kills all of it, and has the kernel kill it if the scheduler
// dies (kill -9): the run is taken over elsewhere and must not go on here.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
