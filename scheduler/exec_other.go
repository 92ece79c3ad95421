//go:build !linux

package scheduler

import "syscall"

// procAttr puts a job's command in its own process group, so that a
// timeout kills all of it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
